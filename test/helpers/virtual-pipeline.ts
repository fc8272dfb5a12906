/**
 * The whole pipeline in memory on a virtual clock: a planned truth record is "executed" (each
 * write's actual time = its due + a lateness, kept in order; a disconnect drops the connection
 * at its planned time), its writes are cut into reads, and the reads are fed to the client's
 * measurer at their arrival times — as a socket would, including the transport error a dropped
 * connection gives. No socket, no timer.
 */
import type { TruthRecord } from '../../contracts/truth.ts';
import { chatApi } from '../../client/apis/chat.ts';
import { completionsApi } from '../../client/apis/completions.ts';
import { ResponseMeasurer } from '../../client/measure/response-measurer.ts';
import type { RequestRecord } from '../../client/record/request-record.ts';
import { endsAsFailure } from '../../server/wire/stream-faults.ts';

export interface VirtualExecution {
  /** Extra delay of each write beyond its due time. */
  lateness?: readonly number[];
  /** For each write, cut positions (0 < cut < length) splitting it into reads. */
  cuts?: readonly (readonly number[])[];
}

export function executeVirtually(record: TruthRecord, execution: VirtualExecution = {}): TruthRecord {
  const headersMs = record.headersDueMs ?? 0;
  let previous = headersMs;
  const writes = record.writes.map((w, i) => {
    const actual = Math.max(previous, w.dueMs + (execution.lateness?.[i] ?? 0));
    previous = actual;
    return { ...w, actualMs: actual };
  });
  const lastAt = writes[writes.length - 1]?.actualMs ?? headersMs;
  const disconnect = record.fault?.kind === 'disconnect';
  const failing = endsAsFailure(record.fault);
  const endAt = disconnect ? Math.max(lastAt, Number(record.fault?.params.atMs ?? 0)) : lastAt;
  return { ...record, writes, headersMs, end: { atMs: endAt, how: failing ? 'fault' : 'completed' } };
}

export function readVirtually(executed: TruthRecord, stream: boolean, execution: VirtualExecution = {}): RequestRecord {
  const measurer = new ResponseMeasurer(
    { index: 0, requestId: executed.id, stage: 0, warmup: false, scheduledMs: 0, startMs: 0, promptTokens: executed.promptTokens },
    { api: executed.endpoint === '/v1/chat/completions' ? chatApi : completionsApi, stream, tokenizerFallback: true },
  );
  const endAt = executed.end?.atMs ?? 0;
  const disconnect = executed.fault?.kind === 'disconnect';
  // A non-streamed response that never sent a byte has no status line either.
  if (!disconnect || stream) measurer.response(executed.status);
  executed.writes.forEach((w, i) => {
    const bytes = executed.body.subarray(w.offset, w.offset + w.length);
    const cuts = [...new Set((execution.cuts?.[i] ?? []).filter((c) => c > 0 && c < w.length))].sort((a, b) => a - b);
    let from = 0;
    for (const cut of [...cuts, w.length]) {
      measurer.data(bytes.subarray(from, cut), w.actualMs as number);
      from = cut;
    }
  });
  return disconnect ? measurer.error('disconnected', 'other side closed', endAt) : measurer.end(endAt);
}
