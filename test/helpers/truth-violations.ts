/** Every tolerance miss of a set of client measurements against their truth records, as text. */
import { requestMetrics, truthTiming, type RequestMetrics } from '../../contracts/metrics.ts';
import { compareWithTruth } from '../../contracts/tolerance.ts';
import type { TruthRecord } from '../../contracts/truth.ts';

export interface MeasuredRequest {
  requestId: string;
  metrics: RequestMetrics | null;
}

/**
 * `slackMs` widens every timing tolerance for transports that buffer after the server's stamp;
 * `only` limits the check to the metrics a test asserts (a miss elsewhere is no reason to repeat).
 */
export function truthViolations(measured: readonly MeasuredRequest[], truthOf: (id: string) => TruthRecord | undefined, slackMs = 0, only?: readonly string[]): string[] {
  const out: string[] = [];
  for (const { requestId, metrics } of measured) {
    const truth = truthOf(requestId);
    if (metrics === null || truth === undefined || truth.end === null) continue;
    for (const d of compareWithTruth(metrics, requestMetrics(truthTiming(truth)), slackMs)) {
      if (only !== undefined && !only.includes(d.metric)) continue;
      if (!d.withinTolerance) out.push(`${requestId}: ${d.metric} off by ${d.worst.toFixed(3)}`);
    }
  }
  return out;
}
