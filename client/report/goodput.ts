/**
 * Goodput (DistServe's term, as `vllm bench serve --goodput` reports it): the successes that met
 * every configured service-level objective, as a count, a fraction and a rate over the measured
 * window. A request without a value for a metric (TPOT of a one-token answer, ITL of a request
 * with one event) meets that objective vacuously — it cannot violate it.
 */
import type { StageSamples } from '../record/stage-samples.ts';

/** Objectives in milliseconds; absent ones are not checked. */
export interface Slo {
  ttftMs?: number;
  tpotMs?: number;
  /** Every inter-token gap of the request must be within this. */
  itlMs?: number;
  ntpotMs?: number;
  latencyMs?: number;
}

export interface Goodput {
  slo_ms: Slo;
  good_requests: number;
  good_fraction: number | null;
  requests_per_sec: number | null;
  output_tokens_per_sec: number | null;
  /** How many successes missed each objective (a request can miss several). */
  violations: Record<string, number>;
}

const CHECKS: ReadonlyArray<[keyof Slo, 'ttftMs' | 'tpotMs' | 'maxItlMs' | 'ntpotMs' | 'latencyMs']> = [
  ['ttftMs', 'ttftMs'],
  ['tpotMs', 'tpotMs'],
  ['itlMs', 'maxItlMs'],
  ['ntpotMs', 'ntpotMs'],
  ['latencyMs', 'latencyMs'],
];

export function goodput(samples: StageSamples, slo: Slo, windowMs: number): Goodput {
  const n = samples.successCount;
  const violations: Record<string, number> = {};
  const active = CHECKS.filter(([key]) => slo[key] !== undefined).map(([key, column]) => [key, samples.success[column].view(), slo[key] as number] as const);
  for (const [key] of active) violations[key] = 0;
  const outputs = samples.success.outputTokens.view();
  let good = 0;
  let goodTokens = 0;
  for (let i = 0; i < n; i++) {
    let ok = true;
    for (const [key, values, limit] of active) {
      const value = values[i] as number;
      if (!Number.isNaN(value) && value > limit) {
        ok = false;
        violations[key] = (violations[key] ?? 0) + 1;
      }
    }
    if (ok) {
      good++;
      goodTokens += outputs[i] as number;
    }
  }
  const seconds = windowMs / 1000;
  return {
    slo_ms: { ...slo },
    good_requests: good,
    good_fraction: n > 0 ? good / n : null,
    requests_per_sec: seconds > 0 && Number.isFinite(seconds) ? good / seconds : null,
    output_tokens_per_sec: seconds > 0 && Number.isFinite(seconds) ? goodTokens / seconds : null,
    violations,
  };
}
