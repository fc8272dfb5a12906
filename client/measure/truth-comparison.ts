/**
 * Holds a run's client measurements against the server's truth records, request by request,
 * and summarizes the worst deviation per metric (what `demo` prints and `grade` will check).
 */
import { requestMetrics, truthTiming } from '../../contracts/metrics.ts';
import { mean } from '../../contracts/stats.ts';
import { compareWithTruth, TOLERANCE_MS, type Deviation } from '../../contracts/tolerance.ts';
import type { TruthRecord } from '../../contracts/truth.ts';
import type { RequestRecord } from '../record/request-record.ts';

export interface MetricComparison {
  metric: Deviation['metric'];
  requests: number;
  samples: number;
  clientMean: number | null;
  truthMean: number | null;
  /** client − truth with the largest magnitude. */
  worst: number;
  /** The request the worst deviation belongs to. */
  worstRequestId: string | null;
  tolerance: string;
  pass: boolean;
}

export interface TruthComparison {
  compared: number;
  /** Successful requests the server has no (finished) truth for. */
  missingTruth: number;
  metrics: MetricComparison[];
  /** How far the timing tolerances were widened by a stall observed during the run (0: not). */
  slackMs: number;
  pass: boolean;
}

const TOLERANCE_TEXT: Record<Deviation['metric'], string> = {
  ttft: `0 ≤ Δ ≤ ${TOLERANCE_MS.oneSided} ms`,
  latency: `0 ≤ Δ ≤ ${TOLERANCE_MS.oneSided} ms`,
  itl: `|Δ| ≤ ${TOLERANCE_MS.twoSided} ms per gap`,
  tpot: `|Δ| ≤ ${TOLERANCE_MS.twoSided} ms`,
  output_tokens: 'exact',
};

/** `slackMs`: see compareWithTruth — only ever a stall measured during the same run. */
export function compareRunWithTruth(records: readonly RequestRecord[], truthOf: (id: string) => TruthRecord | undefined, slackMs = 0): TruthComparison {
  const acc = new Map<
    Deviation['metric'],
    { requests: number; samples: number; client: number; clientCount: number; truth: number; truthCount: number; worst: number; worstId: string | null; pass: boolean }
  >();
  let compared = 0;
  let missingTruth = 0;
  for (const record of records) {
    if (record.warmup || record.failure !== null || record.metrics === null) continue;
    const truth = truthOf(record.requestId);
    if (truth === undefined || truth.end === null) {
      missingTruth++;
      continue;
    }
    compared++;
    const truthMetrics = requestMetrics(truthTiming(truth));
    const client = record.metrics;
    const values: Record<Deviation['metric'], [number | null, number | null]> = {
      ttft: [client.ttftMs, truthMetrics.ttftMs],
      itl: [mean(client.itlMs), mean(truthMetrics.itlMs)],
      tpot: [client.tpotMs, truthMetrics.tpotMs],
      latency: [client.latencyMs, truthMetrics.latencyMs],
      output_tokens: [client.outputTokens, truthMetrics.outputTokens],
    };
    for (const deviation of compareWithTruth(client, truthMetrics, slackMs)) {
      const entry = acc.get(deviation.metric) ?? { requests: 0, samples: 0, client: 0, clientCount: 0, truth: 0, truthCount: 0, worst: 0, worstId: null, pass: true };
      const [c, t] = values[deviation.metric];
      entry.requests++;
      entry.samples += deviation.samples;
      // A request without a value (ITL of a one-token answer) is left out of the mean, not counted as 0.
      if (c !== null) {
        entry.client += c;
        entry.clientCount++;
      }
      if (t !== null) {
        entry.truth += t;
        entry.truthCount++;
      }
      // NaN: only one side has the value (a first token the client never saw) — the worst there is.
      if (Number.isNaN(deviation.worst) ? !Number.isNaN(entry.worst) : Math.abs(deviation.worst) > Math.abs(entry.worst)) {
        entry.worst = deviation.worst;
        entry.worstId = record.requestId;
      }
      entry.pass &&= deviation.withinTolerance;
      acc.set(deviation.metric, entry);
    }
  }
  const metrics: MetricComparison[] = [...acc].map(([metric, e]) => ({
    metric,
    requests: e.requests,
    samples: e.samples,
    clientMean: e.clientCount > 0 ? e.client / e.clientCount : null,
    truthMean: e.truthCount > 0 ? e.truth / e.truthCount : null,
    worst: e.worst,
    worstRequestId: e.worstId,
    tolerance: metric === 'output_tokens' || slackMs === 0 ? TOLERANCE_TEXT[metric] : `${TOLERANCE_TEXT[metric]} + ${slackMs.toFixed(1)} ms`,
    pass: e.pass,
  }));
  return { compared, missingTruth, metrics, slackMs, pass: compared > 0 && missingTruth === 0 && metrics.every((m) => m.pass) };
}

export function formatTruthComparison(c: TruthComparison): string {
  const f = (x: number | null, digits = 3): string => (x === null ? '—' : Number.isNaN(x) ? 'missing' : x.toFixed(digits));
  const lines = [
    `truth comparison: ${c.compared} requests compared with the server's records${c.missingTruth > 0 ? `, ${c.missingTruth} without truth` : ''}`,
    `  ${'metric'.padEnd(14)} ${'client mean'.padStart(12)} ${'truth mean'.padStart(12)} ${'worst Δ'.padStart(10)}  ${'tolerance'.padEnd(24)} result`,
  ];
  for (const m of c.metrics) {
    const unit = m.metric === 'output_tokens' ? '' : ' ms';
    const digits = m.metric === 'output_tokens' ? 0 : 3;
    lines.push(
      `  ${m.metric.padEnd(14)} ${f(m.clientMean, digits).padStart(12)} ${f(m.truthMean, digits).padStart(12)} ${(f(m.worst, digits) + unit).padStart(10)}  ${m.tolerance.padEnd(24)} ${m.pass ? 'pass' : 'FAIL'}`,
    );
  }
  for (const m of c.metrics) {
    if (!m.pass && m.worstRequestId !== null) lines.push(`  worst ${m.metric}: request ${m.worstRequestId}`);
  }
  if (c.slackMs > 0) lines.push(`  timing tolerances widened by the ${c.slackMs.toFixed(1)} ms this process was observed stalled during the run`);
  lines.push(`result: ${c.pass ? (c.slackMs > 0 ? 'PASS — every deviation is inside the contract, widened by the observed stall' : 'PASS — every deviation is inside the contract') : 'FAIL — see above'}`);
  return lines.join('\n');
}
