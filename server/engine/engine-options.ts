/**
 * The engine's settings (timing models and the batching scheduler's capacity), merged into
 * ServerOptions. Names follow vLLM and llm-d-inference-sim; durations are milliseconds.
 */
import type { DistributionKind, LatencyCalculator } from './timing.ts';

export type SchedulerKind = 'isolated' | 'batching';

/** Timing knobs that may differ per model (a served name or a LoRA adapter name). */
export interface ModelTimingOptions {
  ttftMs: number;
  ttftSpreadMs: number;
  itlMs: number;
  itlSpreadMs: number;
  /** Shape of every sampled duration; `fixed` ignores the spreads. */
  latencyDistribution: DistributionKind;
  prefillOverheadMs: number;
  prefillPerTokenMs: number;
  prefillSpreadMs: number;
  timeFactorUnderLoad: number;
  /** Batching: decode step time = sampled ITL + this × sequences in the batch. */
  decodePerSeqMs: number;
  /** llm-d's --latency-calculator: whether TTFT or prefill-* set the prefill time (timing.ts). */
  latencyCalculator: LatencyCalculator;
  /**
   * TTFT was given (flag, config file or this model's entry), or a non-zero TTFT spread was:
   * then, as in llm-d, a non-zero TTFT wins over prefill-*; the built-in default TTFT does not.
   */
  ttftExplicit: boolean;
}

export interface EngineOptions extends Omit<ModelTimingOptions, 'ttftMs' | 'itlMs'> {
  scheduler: SchedulerKind;
  maxNumSeqs: number;
  /** Waiting requests beyond this are refused with 429 (batching). */
  maxWaitingQueueLength: number;
  /** Prefill (and decode) token budget of one engine step (vLLM --max-num-batched-tokens). */
  maxNumBatchedTokens: number;
  kvCacheBlocks: number;
  blockSize: number;
  maxLoras: number;
  /** Per-model overrides of the timing knobs, by model or adapter name. */
  modelTiming: Record<string, Partial<ModelTimingOptions>>;
  /** Server processes sharing the port (Node cluster); 1 = this process only. */
  workers: number;
  /**
   * Let the emission scheduler block the thread (futex) until a write is due instead of spinning
   * event-loop turns. Right for a process that only serves (`benchtruth serve` turns it on);
   * wrong when a client shares the process, since it cannot read while the thread sleeps.
   */
  emissionSleep: boolean;
}

export const DEFAULT_ENGINE_OPTIONS: Readonly<EngineOptions> = Object.freeze({
  ttftSpreadMs: 0,
  itlSpreadMs: 0,
  latencyDistribution: 'normal',
  prefillOverheadMs: 0,
  prefillPerTokenMs: 0,
  prefillSpreadMs: 0,
  timeFactorUnderLoad: 1,
  decodePerSeqMs: 0,
  latencyCalculator: 'default',
  ttftExplicit: false,
  scheduler: 'isolated',
  maxNumSeqs: 256,
  maxWaitingQueueLength: 1000,
  maxNumBatchedTokens: 8192,
  kvCacheBlocks: 8192,
  blockSize: 16,
  maxLoras: 1,
  modelTiming: {},
  workers: 1,
  emissionSleep: false,
});
