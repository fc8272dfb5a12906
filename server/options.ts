/** Every server setting in one place, with the defaults a bare `benchtruth serve` runs with. */
import { DEFAULT_VLLM_OPTIONS, type VllmOptions } from './dialects/vllm/vllm-options.ts';
import { DEFAULT_ENGINE_OPTIONS, type EngineOptions } from './engine/engine-options.ts';

export interface ServerOptions extends EngineOptions, VllmOptions {
  host: string;
  port: number;
  /** The served model name (the first --served-model-name), reported in responses and metrics. */
  model: string;
  /** Further names the base model answers to (--served-model-name after the first). */
  servedModelAliases: string[];
  /** --model when --served-model-name renames it: the `root` of the base model's /v1/models cards, as vLLM. */
  modelPath: string | null;
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
  /** How many truth records stay queryable in memory (oldest evicted first). */
  truthCapacity: number;
  /**
   * Bytes of truth records kept in memory (bodies and packed timings; oldest evicted first):
   * a long run at hundreds of requests per second must not grow the server without bound.
   * `--truth-log` keeps every record.
   */
  truthMaxBytes: number;
  logger: boolean;
  /** JetStream: which dialect's conventions `serve` follows (both are always routed on HTTP). */
  dialect: 'vllm' | 'jetstream';
  /** JetStream gRPC (Orchestrator) port; null = no gRPC server, 0 = any free port. */
  grpcPort: number | null;
  /** A separate Prometheus port answering on every path (JetStream's prometheus_port); null = none. */
  metricsPort: number | null;
  /** JetStream decode slots (max concurrent decodes) and the most requests waiting for prefill before refusal. */
  jetstreamSlots: number;
  jetstreamQueueLimit: number;
  /** Server-wide wire policy as an `x-benchtruth-wire` spec string; null = vLLM's own (server/wire/). */
  wire: string | null;
  /** Wire spec per served model name, layered on `wire`; a request's header layers on top. */
  wireModels: Record<string, string>;
}

export const DEFAULT_SERVER_OPTIONS: Readonly<ServerOptions> = Object.freeze({
  ...DEFAULT_ENGINE_OPTIONS,
  ...DEFAULT_VLLM_OPTIONS,
  host: '127.0.0.1',
  port: 8000,
  model: 'benchtruth/fake-model',
  servedModelAliases: [],
  modelPath: null,
  seed: 0,
  ttftMs: 200,
  itlMs: 20,
  multibyteRate: 0.05,
  created: null,
  defaultMaxTokens: 16,
  maxModelLen: 32768,
  truthLog: null,
  truthCapacity: 100_000,
  truthMaxBytes: 512 * 1024 * 1024,
  logger: false,
  dialect: 'vllm',
  grpcPort: null,
  metricsPort: null,
  jetstreamSlots: 96,
  jetstreamQueueLimit: 1024,
  wire: null,
  wireModels: {},
});

export function resolveServerOptions(partial: Partial<ServerOptions> = {}): ServerOptions {
  const defined = Object.fromEntries(Object.entries(partial).filter(([, v]) => v !== undefined));
  return { ...DEFAULT_SERVER_OPTIONS, ...defined };
}
