/** Every benchmark setting, with the defaults `benchtruth bench` runs with. */
import type { ApiName } from '../apis/api-adapter.ts';
import type { DataSpec } from '../data/data-spec.ts';
import type { LoadSpec } from '../load/load-plan.ts';
import type { Slo } from '../report/goodput.ts';

export type UsageRequest = 'none' | 'include' | 'continuous';

/** Which per-adapter reports a LoRA run writes (inference-perf's report.request_lifecycle.per_adapter / per_adapter_stage). */
export interface AdapterReportSwitches {
  summary: boolean;
  stages: boolean;
}

export interface BenchOptions {
  url: string;
  api: ApiName;
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
  /** When the schedule starts (epoch ms); null: once the transport is ready. Shards share one. */
  startAtEpochMs?: number | null;
  outputDir: string | null;
  /** What to ask for in `stream_options`. */
  usage: UsageRequest;
  tokenizerFallback: boolean;
  /** Load shape; absent = constant `rate` for `durationSec` after `warmupSec`. */
  load?: LoadSpec;
  /** Dataset; absent = random prompts of `promptTokens`, `maxTokens` output tokens. */
  data?: DataSpec;
  /** Goodput objectives; absent = no goodput section. */
  slo?: Slo | null;
  /** Percentiles every report distribution adds to its fixed ones (inference-perf's `report.request_lifecycle.percentiles`). */
  reportPercentiles?: number[];
  /** LoRA traffic split: each request's model is drawn by weight (seeded per request). */
  lora?: ReadonlyArray<{ name: string; weight: number }>;
  /** Send `ignore_eos` (vLLM's extension) so every output runs to its max tokens; default true. */
  ignoreEos?: boolean;
  /** Extra request headers (e.g. Authorization). */
  headers?: Readonly<Record<string, string>>;
  /** Also write per_request_lifecycle_metrics.json. */
  perRequestReport?: boolean;
  /**
   * inference-perf's per-adapter reports of a LoRA split: `summary` (adapter_NAME_lifecycle_metrics.json,
   * default on, as inference-perf) and `stages` (adapter_NAME_stage_N_lifecycle_metrics.json, default off).
   */
  adapterReports?: AdapterReportSwitches;
  /** Progress display: a bar on a TTY, plain lines otherwise, or none. */
  progress?: 'auto' | 'bar' | 'lines' | 'off';
  /** Scrape Prometheus metrics during each stage (url null = the server's own /metrics). */
  scrape?: { url: string | null; intervalMs: number } | null;
  /** `lpg` also writes the latency profile generator's JSON (and scrapes /metrics each second unless `scrape` says otherwise). */
  reportFormat?: 'inference-perf' | 'lpg';
  /** Worker threads sharing the schedule (1 = in this thread). */
  workers?: number;
  /** This process runs shard `index` of `count` (one machine of several running one benchmark). */
  shard?: { index: number; count: number };
  /** Keep every full RequestRecord in the result (tests, the demo); off keeps only compact samples. */
  keepRecords?: boolean;
}

/** inference-perf's defaults: a summary per adapter, no per-adapter stage reports. */
export const DEFAULT_ADAPTER_REPORTS: Readonly<AdapterReportSwitches> = Object.freeze({ summary: true, stages: false });

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
