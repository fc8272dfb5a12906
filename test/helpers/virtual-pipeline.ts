/**
 * The whole pipeline in memory on a virtual clock: a planned truth record is "executed" (each
 * write's actual time = due + a lateness), its writes are cut into reads, and the reads are
 * fed to the client's measurer at their arrival times. No socket, no timer.
 */
import type { TruthRecord } from '../../contracts/truth.ts';
import { completionsApi } from '../../client/apis/completions.ts';
import { ResponseMeasurer } from '../../client/measure/response-measurer.ts';
import type { RequestRecord } from '../../client/record/request-record.ts';

export interface VirtualExecution {
  /** Extra delay of each write beyond its due time (cumulative max keeps writes ordered). */
  lateness?: readonly number[];
  /** For each write, the cut positions (0 < cut < length) splitting it into reads. */
  cuts?: readonly (readonly number[])[];
}

export function executeVirtually(record: TruthRecord, execution: VirtualExecution = {}): TruthRecord {
  let previous = 0;
  const writes = record.writes.map((w, i) => {
    const actual = Math.max(previous, w.dueMs + (execution.lateness?.[i] ?? 0));
    previous = actual;
    return { ...w, actualMs: actual };
  });
  const last = writes[writes.length - 1];
  return { ...record, writes, headersMs: 0, end: { atMs: last?.actualMs ?? 0, how: 'completed' } };
}

export function readVirtually(executed: TruthRecord, stream: boolean, execution: VirtualExecution = {}): RequestRecord {
  const measurer = new ResponseMeasurer(
    { index: 0, requestId: executed.id, stage: 0, warmup: false, scheduledMs: 0, startMs: 0, promptTokens: executed.promptTokens },
    { api: completionsApi, stream, tokenizerFallback: true },
  );
  measurer.response(executed.status);
  executed.writes.forEach((w, i) => {
    const bytes = executed.body.subarray(w.offset, w.offset + w.length);
    const cuts = [...new Set((execution.cuts?.[i] ?? []).filter((c) => c > 0 && c < w.length))].sort((a, b) => a - b);
    let from = 0;
    for (const cut of [...cuts, w.length]) {
      measurer.data(bytes.subarray(from, cut), w.actualMs as number);
      from = cut;
    }
  });
  return measurer.end(executed.end?.atMs ?? 0);
}
