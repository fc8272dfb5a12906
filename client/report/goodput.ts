/**
 * Goodput (DistServe's term, as `vllm bench serve --goodput` reports it): the successes that met
 * every configured service-level objective, as a count, a fraction and a rate over the measured
 * window. Two rules. benchtruth's (`report.slo`, `--slo-*`): the ITL objective bounds every
 * inter-token gap of a request, and a request without a value for a metric (TPOT of a
 * one-token answer, ITL of a request with one event) meets that objective vacuously — it cannot
 * violate it. inference-perf's (`report.goodput.constraints`, its calculate_goodput_metrics):
 * the ITL objective bounds the mean of a request's gaps, and a request without a value for a
 * constrained metric is not good. As there, TTFT, TPOT and ITL have a value only for a response
 * that streamed two token times or more (a one-token or non-streamed answer has none: the
 * `meanItlMs` column is missing exactly then), and NTPOT of a zero-token answer is 0.
 *
 * The same verdicts are written twice: our `goodput` block, and inference-perf's
 * `successes.goodput_metrics` (its names, percentages, input + output tokens, and its time base:
 * the successes' own [first start, last end]) so inference-perf's readers show them.
 */
import type { StageSamples } from '../record/stage-samples.ts';

/** Objectives in milliseconds, as the config resolves them; absent ones are not checked. */
export interface Slo {
  ttftMs?: number;
  tpotMs?: number;
  /** Every inter-token gap of the request must be within this (inference-perf's rule: their mean). */
  itlMs?: number;
  ntpotMs?: number;
  latencyMs?: number;
  /** inference-perf's rule (see above); absent: benchtruth's. */
  rule?: 'inference-perf';
}

/** inference-perf's goodput constraint names (its `report.goodput.constraints` keys). */
export type SloName = 'ttft' | 'tpot' | 'itl' | 'ntpot' | 'request_latency';

export interface Goodput {
  /** The objectives in seconds, like every time in the report. */
  slo: Partial<Record<SloName, number>>;
  /** Present when the objectives were judged by inference-perf's rule (`report.goodput.constraints`). */
  rule?: 'inference-perf';
  good_requests: number;
  good_fraction: number | null;
  requests_per_sec: number | null;
  output_tokens_per_sec: number | null;
  /** How many successes missed each objective (a request can miss several). */
  violations: Partial<Record<SloName, number>>;
}

/**
 * inference-perf's `successes.goodput_metrics`. Rates it cannot compute (a window of zero width)
 * are left out rather than written as 0, so its readers fall back to their own default.
 */
export type GoodputMetrics = {
  goodput_percentage: number;
  request_goodput?: number;
  token_goodput?: number;
  good_requests: number;
  total_requests: number;
} & Partial<Record<`${SloName}_attainment_percentage`, number>>;

export interface GoodputVerdicts {
  goodput: Goodput;
  /** Null when there is no success to judge (inference-perf then writes no block). */
  goodputMetrics: GoodputMetrics | null;
}

const CHECKS: ReadonlyArray<[SloName, keyof Slo, 'ttftMs' | 'tpotMs' | 'maxItlMs' | 'ntpotMs' | 'latencyMs']> = [
  ['ttft', 'ttftMs', 'ttftMs'],
  ['tpot', 'tpotMs', 'tpotMs'],
  ['itl', 'itlMs', 'maxItlMs'],
  ['ntpot', 'ntpotMs', 'ntpotMs'],
  ['request_latency', 'latencyMs', 'latencyMs'],
];

const MS_PER_SECOND = 1000;

/** The objectives under the report's names, in seconds, in a fixed order. */
export function sloInSeconds(slo: Slo): Partial<Record<SloName, number>> {
  const seconds: Partial<Record<SloName, number>> = {};
  for (const [name, key] of CHECKS) if (slo[key] !== undefined) seconds[name] = (slo[key] as number) / MS_PER_SECOND;
  return seconds;
}

/** `count / seconds`, or undefined when there is no window to divide by. */
function perSecond(count: number, windowMs: number | null): number | undefined {
  if (windowMs === null || !(windowMs > 0) || !Number.isFinite(windowMs)) return undefined;
  return count / (windowMs / MS_PER_SECOND);
}

const span = (from: number | null, to: number | null): number | null => (from === null || to === null ? null : to - from);

export function evaluateGoodput(samples: StageSamples, slo: Slo): GoodputVerdicts {
  const n = samples.successCount;
  const inferencePerf = slo.rule === 'inference-perf';
  const active = CHECKS.filter(([, key]) => slo[key] !== undefined).map(
    ([name, key, column]) => [name, samples.success[inferencePerf && column === 'maxItlMs' ? 'meanItlMs' : column].view(), slo[key] as number] as const,
  );
  const violations: Partial<Record<SloName, number>> = {};
  const sloSeconds = sloInSeconds(slo);
  for (const [name] of active) violations[name] = 0;
  // inference-perf's "streamable": a response that streamed two token times or more.
  const meanItl = samples.success.meanItlMs.view();
  const outputs = samples.success.outputTokens.view();
  const prompts = samples.success.promptTokens.view();
  let good = 0;
  let goodOutputTokens = 0;
  let goodPromptTokens = 0;
  for (let i = 0; i < n; i++) {
    let ok = true;
    const streamable = !Number.isNaN(meanItl[i] as number);
    for (const [name, values, limit] of active) {
      let value = values[i] as number;
      if (inferencePerf) {
        if (!streamable && (name === 'ttft' || name === 'tpot' || name === 'itl')) value = Number.NaN;
        else if (name === 'ntpot' && Number.isNaN(value)) value = 0;
      }
      const missed = Number.isNaN(value) ? inferencePerf : value > limit;
      if (missed) {
        ok = false;
        violations[name] = (violations[name] ?? 0) + 1;
      }
    }
    if (ok) {
      good++;
      goodOutputTokens += outputs[i] as number;
      goodPromptTokens += prompts[i] as number;
    }
  }
  const w = samples.window;
  const measuredMs = span(w.firstStartMs, w.lastEndMs);
  const goodputBlock: Goodput = {
    slo: sloSeconds,
    ...(inferencePerf ? { rule: 'inference-perf' as const } : {}),
    good_requests: good,
    good_fraction: n > 0 ? good / n : null,
    requests_per_sec: perSecond(good, measuredMs) ?? null,
    output_tokens_per_sec: perSecond(goodOutputTokens, measuredMs) ?? null,
    violations,
  };
  if (n === 0) return { goodput: goodputBlock, goodputMetrics: null };

  const successesMs = span(w.firstSuccessStartMs, w.lastSuccessEndMs);
  const requestGoodput = perSecond(good, successesMs);
  const tokenGoodput = perSecond(goodPromptTokens + goodOutputTokens, successesMs);
  const metrics: GoodputMetrics = {
    goodput_percentage: (good / n) * 100,
    ...(requestGoodput === undefined ? {} : { request_goodput: requestGoodput }),
    ...(tokenGoodput === undefined ? {} : { token_goodput: tokenGoodput }),
    good_requests: good,
    total_requests: n,
  };
  for (const [name] of active) metrics[`${name}_attainment_percentage`] = ((n - (violations[name] ?? 0)) / n) * 100;
  return { goodput: goodputBlock, goodputMetrics: metrics };
}
