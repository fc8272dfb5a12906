/** Every server setting in one place, with the defaults a bare `benchtruth serve` runs with. */

export interface ServerOptions {
  host: string;
  port: number;
  /** The served model name. */
  model: string;
  seed: number;
  ttftMs: number;
  itlMs: number;
  /** Probability that a generated token is a multi-byte UTF-8 code point. */
  multibyteRate: number;
  /** A fixed `created` value for reproducible bytes; null means the wall clock (as vLLM). */
  created: number | null;
  /** Default `max_tokens` of `/v1/completions` when the request omits it (vLLM: 16). */
  defaultMaxTokens: number;
  maxModelLen: number;
  truthLog: string | null;
  /** How many truth records stay queryable in memory. */
  truthCapacity: number;
  logger: boolean;
}

export const DEFAULT_SERVER_OPTIONS: Readonly<ServerOptions> = Object.freeze({
  host: '127.0.0.1',
  port: 8000,
  model: 'benchtruth/fake-model',
  seed: 0,
  ttftMs: 200,
  itlMs: 20,
  multibyteRate: 0.05,
  created: null,
  defaultMaxTokens: 16,
  maxModelLen: 32768,
  truthLog: null,
  truthCapacity: 100_000,
  logger: false,
});

export function resolveServerOptions(partial: Partial<ServerOptions> = {}): ServerOptions {
  const defined = Object.fromEntries(Object.entries(partial).filter(([, v]) => v !== undefined));
  return { ...DEFAULT_SERVER_OPTIONS, ...defined };
}
