/**
 * Timing models: how long prefill and each decode step take, as fixed values or seeded
 * distributions given by mean and spread. Pure: every sample comes from the caller's stream.
 *
 * llm-d-inference-sim compatibility: `--time-to-first-token` / `--inter-token-latency` with
 * their `…-std-dev` spreads, `--prefill-overhead` + `--prefill-time-per-token` (per prompt
 * token), and `--time-factor-under-load`, which scales latency linearly from 1 (one running
 * request) to the factor (max-num-seqs running requests).
 */
import type { Rng } from '../../contracts/rng.ts';

export const DISTRIBUTION_KINDS = ['fixed', 'normal', 'lognormal', 'uniform', 'exponential'] as const;
export type DistributionKind = (typeof DISTRIBUTION_KINDS)[number];

/**
 * A duration in milliseconds. `spreadMs` is the standard deviation (normal, lognormal,
 * exponential) or the half-width (uniform); a spread of 0 is the fixed value, except under
 * exponential, where it is a plain exponential of that mean.
 */
export interface Distribution {
  kind: DistributionKind;
  meanMs: number;
  spreadMs: number;
}

export function fixed(meanMs: number): Distribution {
  return { kind: 'fixed', meanMs, spreadMs: 0 };
}

/** One sample, never negative; consumes the stream only when the distribution is random. */
export function sampleMs(rng: Rng, d: Distribution): number {
  const { meanMs: mean, spreadMs: spread } = d;
  if (d.kind === 'fixed' || (spread <= 0 && d.kind !== 'exponential')) return Math.max(0, mean);
  // A mean of 0 has no lognormal or exponential around it; normal and uniform draws around it
  // are clamped at 0 as any other (0 ± 2 ms: half the draws 0, mean ≈ 0.8 ms).
  if (mean <= 0 && (d.kind === 'lognormal' || d.kind === 'exponential')) return 0;
  switch (d.kind) {
    case 'normal':
      // Clamped rather than redrawn, so a draw costs the same two numbers whatever it is.
      return Math.max(0, rng.normal(mean, spread));
    case 'lognormal': {
      // Parameters chosen so the variable itself (not its log) has this mean and deviation.
      // As a ratio first (squaring tiny values underflows to 0/0), capped so sigma stays finite.
      const ratio = Math.min(spread / mean, 1e6);
      const sigma2 = Math.log1p(ratio * ratio);
      return Math.exp(rng.normal(Math.log(mean) - sigma2 / 2, Math.sqrt(sigma2)));
    }
    case 'uniform':
      return Math.max(0, mean - spread + 2 * spread * rng.float());
    case 'exponential': {
      // A shifted exponential keeps both numbers meaningful: mean = shift + scale, sd = scale.
      const scale = spread <= 0 || spread > mean ? mean : spread;
      return mean - scale + rng.exponential(scale);
    }
  }
}

export interface TimingModel {
  /** Arrival → first token when no prefill cost is configured. */
  ttft: Distribution;
  /** Between consecutive tokens (isolated) or the decode step's base time (batching). */
  itl: Distribution;
  /** Prefill = overhead + perToken × prompt tokens, when usesPrefillCost says so (else `ttft`). */
  prefillOverheadMs: number;
  prefillPerTokenMs: number;
  /** Spread of the prefill time, in the `ttft` distribution's kind. */
  prefillSpreadMs: number;
  /** ≥ 1; latency multiplier when max-num-seqs requests run (llm-d-inference-sim). */
  timeFactorUnderLoad: number;
  maxNumSeqs: number;
  /** Batching: extra decode-step time per sequence in the batch. */
  decodePerSeqMs: number;
  /** Which of `ttft` and prefill-* set the prefill time (llm-d's --latency-calculator); absent = `default`. */
  latencyCalculator?: LatencyCalculator;
  /** `ttft` was given (not the built-in default), or a non-zero spread of it was; absent = false. */
  ttftExplicit?: boolean;
}

/**
 * llm-d-inference-sim's calculators: `default` takes prefill-* only when no non-zero TTFT (or
 * TTFT spread) was given, `constant` always takes TTFT, `per-token` always prefill-*.
 */
export const LATENCY_CALCULATORS = ['default', 'constant', 'per-token'] as const;
export type LatencyCalculator = (typeof LATENCY_CALCULATORS)[number];

/** Whether prefill-* (not `ttft`) set the prefill time. */
export function usesPrefillCost(model: TimingModel): boolean {
  if (model.latencyCalculator === 'per-token') return true;
  if (model.latencyCalculator === 'constant') return false;
  // Our built-in TTFT is no choice of the user's, so it never overrides prefill-* they set.
  const ttftChosen = model.ttftExplicit === true && (model.ttft.meanMs > 0 || model.ttft.spreadMs > 0);
  return !ttftChosen && (model.prefillOverheadMs > 0 || model.prefillPerTokenMs > 0);
}

/** The mean time to prefill `promptTokens` tokens, unloaded: TTFT, or overhead + per-token × prompt. */
export function prefillMeanMs(model: TimingModel, promptTokens: number): number {
  return usesPrefillCost(model) ? model.prefillOverheadMs + model.prefillPerTokenMs * promptTokens : model.ttft.meanMs;
}

/**
 * Time to prefill `promptTokens` tokens (one request's whole prompt). `factor` (the load factor)
 * scales the mean only, never the spread, as llm-d-inference-sim's randomNorm(mean × factor, sd).
 */
export function samplePrefillMs(rng: Rng, model: TimingModel, promptTokens: number, factor = 1): number {
  const meanMs = prefillMeanMs(model, promptTokens) * factor;
  if (!usesPrefillCost(model)) return sampleMs(rng, { ...model.ttft, meanMs });
  return sampleMs(rng, { kind: model.ttft.kind, meanMs, spreadMs: model.prefillSpreadMs });
}

/**
 * llm-d-inference-sim's load factor (latencies.go getCurrLoadFactor): 1 with one running
 * request, `factor` with max-num-seqs running, linear in between (and capped there); always 1
 * with --max-num-seqs 1, where llm-d never runs two requests at once.
 */
export function loadFactor(model: Pick<TimingModel, 'timeFactorUnderLoad' | 'maxNumSeqs'>, running: number): number {
  const factor = model.timeFactorUnderLoad;
  if (factor <= 1 || running <= 1 || model.maxNumSeqs <= 1) return 1;
  const share = Math.min(1, (running - 1) / (model.maxNumSeqs - 1));
  return 1 + (factor - 1) * share;
}

export interface TimingContext {
  promptTokens: number;
  /** Requests running when this one arrived, itself included (1 when unloaded). */
  running: number;
}

/**
 * Due time of every token relative to arrival (isolated scheduler): the first after the
 * prefill time, each next one a sampled ITL later, every mean (not spread) scaled by the load
 * factor, as llm-d-inference-sim does.
 */
export function tokenDueTimes(rng: Rng, count: number, model: TimingModel, context: TimingContext): Float64Array {
  const due = new Float64Array(count);
  if (count === 0) return due;
  const factor = loadFactor(model, context.running);
  let at = samplePrefillMs(rng, model, context.promptTokens, factor);
  due[0] = at;
  const itl = { ...model.itl, meanMs: model.itl.meanMs * factor };
  for (let i = 1; i < count; i++) {
    at += sampleMs(rng, itl);
    due[i] = at;
  }
  return due;
}

/** The fixed model with the defaults of every other knob: what tests and old callers mean. */
export function simpleTiming(ttftMs: number, itlMs: number): TimingModel {
  return {
    ttft: fixed(ttftMs),
    itl: fixed(itlMs),
    prefillOverheadMs: 0,
    prefillPerTokenMs: 0,
    prefillSpreadMs: 0,
    timeFactorUnderLoad: 1,
    maxNumSeqs: 256,
    decodePerSeqMs: 0,
  };
}
