/**
 * The per-request timeout, made exact without a timer per request: the run's one sweep aborts
 * overdue requests a little late, and a response may even complete after its deadline between
 * sweeps, so every finished record is checked here. A request that ran past start + timeout is
 * a `timeout` failure stamped at that deadline, keeping only what arrived before it. Pure.
 */
import type { RequestRecord } from '../record/request-record.ts';
import { RequestTimeout } from '../send/http-sender.ts';

/** Requests still in flight when the grace period after an interrupt ends (or a second Ctrl-C). */
export class GraceExpired extends RequestTimeout {
  constructor(graceMs: number | null) {
    super(0);
    this.name = 'GraceExpired';
    this.message =
      graceMs === null
        ? 'cut off by a second interrupt before the response completed'
        : `cut off at the end of the ${graceMs} ms grace period after the interrupt, before the response completed`;
  }
}

export function enforceDeadline(record: RequestRecord, timeoutMs: number): RequestRecord {
  const deadlineMs = record.startMs + timeoutMs;
  if (record.endMs <= deadlineMs) return record;
  const events = record.events.filter((e) => e.atMs <= deadlineMs);
  return {
    ...record,
    endMs: deadlineMs,
    firstByteMs: record.firstByteMs !== null && record.firstByteMs <= deadlineMs ? record.firstByteMs : null,
    failure: { kind: 'timeout', message: new RequestTimeout(timeoutMs).message },
    events,
    outputTokens: events.reduce((sum, e) => sum + e.tokens, 0),
    outputTokensSource: 'events',
    tokenCountMismatch: false,
    // Usage and finish reason came with the end of the response, after the deadline.
    usage: null,
    finishReason: null,
    metrics: null,
  };
}
