/**
 * The per-request timeout, made exact without a timer per request: the run's one deadline timer
 * (deadline-sweep.ts) aborts a request at its deadline to the millisecond, and a response may
 * still complete just past it, so every finished record is checked here. A request that ran past start + timeout is
 * a `timeout` failure stamped at that deadline, keeping only what arrived by it (events, continuous
 * usage, the finish reason). Pure.
 */
import type { RequestRecord } from '../record/request-record.ts';
import { RequestTimeout } from '../send/http-sender.ts';

/** The abort reason for requests still in flight when the grace period after an interrupt ends (null: a second Ctrl-C). */
export function graceExpired(graceMs: number | null): RequestTimeout {
  return new RequestTimeout(
    graceMs ?? 0,
    graceMs === null
      ? 'cut off by a second interrupt before the response completed'
      : `cut off at the end of the ${graceMs} ms grace period after the interrupt, before the response completed`,
  );
}

export function enforceDeadline(record: RequestRecord, timeoutMs: number): RequestRecord {
  const deadlineMs = record.startMs + timeoutMs;
  // A timeout the sweep stamped right at the deadline is cut too, so it carries its exact latency.
  if (record.endMs < deadlineMs || (record.endMs === deadlineMs && record.failure?.kind !== 'timeout')) return record;
  const message = new RequestTimeout(timeoutMs).message;
  return { ...cutOffAt(record, deadlineMs, message), failure: { kind: 'timeout', message, timeoutMs } };
}

/**
 * A request cut off at `cutMs` (its deadline, or the moment an interrupt's grace period ended for
 * every request in flight): a `timeout` failure ending then, with what had arrived by then.
 * Aborting many requests takes a while and each is stamped as its abort is handled, so without
 * this the requests of one cut-off would end over tens of milliseconds.
 */
export function cutOffAt(record: RequestRecord, cutMs: number, message: string): RequestRecord {
  const deadlineMs = Math.min(cutMs, record.endMs);
  const events = record.events.filter((e) => e.atMs <= deadlineMs);
  const eventTokens = events.reduce((sum, e) => sum + e.tokens, 0);
  const usage = usageAtDeadline(record, events.length, eventTokens);
  // A finish reason is kept when its payload came by the deadline, as that payload's events are
  // (a stream that stalls after its finish chunk); else it came with the rest, after the deadline.
  const finishedInTime = record.finishReasonMs !== null && record.finishReasonMs <= deadlineMs;
  return {
    ...record,
    endMs: deadlineMs,
    firstByteMs: record.firstByteMs !== null && record.firstByteMs <= deadlineMs ? record.firstByteMs : null,
    failure: { kind: 'timeout', message },
    events,
    outputTokens: eventTokens,
    outputTokensSource: usage !== null ? 'usage' : 'events',
    tokenCountMismatch: false,
    usage,
    finishReason: finishedInTime ? record.finishReason : null,
    finishReasonMs: finishedInTime ? record.finishReasonMs : null,
    metrics: null,
  };
}

/**
 * The usage the client had seen by the deadline. Only continuous usage (every token-bearing
 * event counted by its running usage) tells it: then the running completion count at the last
 * event kept is the sum of the kept events' tokens. Any other usage came at the end, after it.
 */
function usageAtDeadline(record: RequestRecord, keptEvents: number, keptTokens: number): RequestRecord['usage'] {
  if (record.usage === null || record.tokensPerEventSource !== 'continuous_usage' || keptEvents === 0) return null;
  const { promptTokens } = record.usage;
  return { promptTokens, completionTokens: keptTokens, totalTokens: promptTokens + keptTokens };
}
