/** What every route shares: options, the clock, the scheduler, the truth store, request ids. */
import type { Clock } from '../contracts/clock.ts';
import type { Engine } from './engine/engine.ts';
import type { MetricsHub } from './metrics/metrics-hub.ts';
import type { ServerOptions } from './options.ts';
import type { RequestIdentities } from './routes/request-identity.ts';
import type { EmissionScheduler } from './transport/emission-scheduler.ts';
import type { TruthStore } from './truth/truth-store.ts';

/** A runtime LoRA change (vLLM's `/v1/load_lora_adapter` and `/v1/unload_lora_adapter`). */
export type LoraChange = { op: 'load'; name: string; path: string } | { op: 'unload'; name: string };

export interface ServerContext {
  options: ServerOptions;
  clock: Clock;
  scheduler: EmissionScheduler;
  truth: TruthStore;
  identities: RequestIdentities;
  /** The scheduler that decides when tokens exist (--scheduler isolated|batching). */
  engine: Engine;
  /** The Prometheus registry behind /metrics; dialects add their metric sets here. */
  metrics: MetricsHub;
  /** Set by the vLLM routes: makes a runtime LoRA change in this process's models (a peer's, under `--workers`). */
  applyLoraChange?: (change: LoraChange) => void;
  /** Set by the vLLM routes: the adapters this process serves now (a replacement worker copies a peer's). */
  loraAdapters?: () => Array<{ name: string; path: string }>;
  /** Set by a `--workers` worker: passes a change made here on to every other worker before the answer. */
  relayLoraChange?: (change: LoraChange) => Promise<void>;
  /**
   * The server is cutting off the responses still open at the end of its shutdown grace: a
   * response that ends now ends `server_shutdown`, not `client_aborted`.
   */
  cuttingOff?: boolean;
  /** The server is stopping: a request still arriving on an open connection is refused (503). */
  closing?: boolean;
  /**
   * Connections whose request the HTTP parser refused mid-body (uvicorn's plain-text 400, which
   * app.ts sends): when, on the clock. That 400 is the answer the request's truth records.
   */
  parserRefusals: WeakMap<object, number>;
}
