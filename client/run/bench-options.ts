/** Every benchmark setting, with the defaults `benchtruth bench` runs with. */

export type UsageRequest = 'none' | 'include' | 'continuous';

export interface BenchOptions {
  url: string;
  api: 'completions';
  stream: boolean;
  /** Requests per second of the constant schedule. */
  rate: number;
  durationSec: number;
  /** Seconds of load before the measured window; those requests are excluded from results. */
  warmupSec: number;
  maxTokens: number;
  promptTokens: number;
  seed: number;
  /** Model to request; null asks the server's /v1/models for its first model. */
  model: string | null;
  timeoutMs: number;
  /** Grace period for in-flight requests after an interrupt. */
  graceMs: number;
  outputDir: string | null;
  /** What to ask for in `stream_options`. */
  usage: UsageRequest;
  tokenizerFallback: boolean;
}

export const DEFAULT_BENCH_OPTIONS: Readonly<Omit<BenchOptions, 'url'>> = Object.freeze({
  api: 'completions',
  stream: false,
  rate: 1,
  durationSec: 10,
  warmupSec: 0,
  maxTokens: 64,
  promptTokens: 32,
  seed: 0,
  model: null,
  timeoutMs: 300_000,
  graceMs: 10_000,
  outputDir: null,
  usage: 'continuous',
  tokenizerFallback: true,
});
