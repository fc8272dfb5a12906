/** Runs the benchmark client against an in-process server and lines its records up with the truth. */
import { realClock } from '../../../contracts/clock.ts';
import type { TruthRecord } from '../../../contracts/truth.ts';
import type { RequestRecord } from '../../../client/record/request-record.ts';
import { DEFAULT_BENCH_OPTIONS, type BenchOptions } from '../../../client/run/bench-options.ts';
import { runBench, type BenchResult } from '../../../client/run/run-bench.ts';
import type { RunningServer } from '../../helpers/server.ts';

/** How far a send may land from its planned time on a shared, busy CI machine (not a metric tolerance). */
export const SCHEDULE_SLACK_MS = 30;

export async function benchAgainst(server: RunningServer, options: Partial<BenchOptions>): Promise<BenchResult> {
  return runBench({ ...DEFAULT_BENCH_OPTIONS, url: server.url, timeoutMs: 20_000, ...options, keepRecords: true });
}

export function truthOf(server: RunningServer, record: RequestRecord): TruthRecord {
  const truth = server.server.context.truth.get(record.requestId);
  if (truth === undefined) throw new Error(`no truth for ${record.requestId}`);
  return truth;
}

/** The server's arrival time of each record, on the client clock's timeline (same process). */
export function arrivalMs(server: RunningServer, record: RequestRecord): number {
  return truthOf(server, record).arrivalEpochMs - realClock.epochMs(0);
}

/** The most requests the server had open at once, from truth arrival and end times. */
export function peakConcurrency(truths: readonly TruthRecord[]): number {
  const edges: Array<[number, number]> = [];
  for (const t of truths) {
    edges.push([t.arrivalEpochMs, 1]);
    edges.push([t.arrivalEpochMs + (t.end?.atMs ?? 0), -1]);
  }
  // Ends sort before starts at the same instant: a slot freed and refilled is not two at once.
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0;
  let peak = 0;
  for (const [, delta] of edges) peak = Math.max(peak, (open += delta));
  return peak;
}
