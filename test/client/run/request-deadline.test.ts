/** The exact per-request timeout: a record past start + timeout is a timeout failure at its deadline. */
import { describe, expect, it } from 'vitest';
import type { RequestRecord } from '../../../client/record/request-record.ts';
import { enforceDeadline, graceExpired } from '../../../client/run/request-deadline.ts';
import { RequestTimeout } from '../../../client/send/http-sender.ts';
import { requestMetrics } from '../../../contracts/metrics.ts';

function record(startMs: number, endMs: number, eventTimes: number[]): RequestRecord {
  const events = eventTimes.map((atMs) => ({ atMs, tokens: 2 }));
  return {
    index: 0,
    requestId: 'r0',
    stage: 0,
    warmup: false,
    scheduledMs: startMs,
    startMs,
    firstByteMs: eventTimes[0] ?? null,
    endMs,
    status: 200,
    failure: null,
    events,
    tokensPerEventSource: 'continuous_usage',
    outputTokens: 2 * events.length,
    outputTokensSource: 'usage',
    tokenCountMismatch: false,
    promptTokens: 4,
    promptTokensSource: 'usage',
    usage: { promptTokens: 4, completionTokens: 2 * events.length, totalTokens: 4 + 2 * events.length },
    finishReason: 'length',
    metrics: requestMetrics({ startMs, endMs, events, outputTokens: 2 * events.length }),
  };
}

describe('enforceDeadline', () => {
  it('leaves a request that ended by its deadline alone (the same object: no cost on the hot path)', () => {
    const r = record(1000, 1100, [1050, 1100]);
    expect(enforceDeadline(r, 100)).toBe(r);
  });

  it('a success slower than the timeout becomes a timeout stamped at start + timeout, keeping only earlier events', () => {
    const out = enforceDeadline(record(1000, 1131, [1060, 1090, 1131]), 100);
    expect(out.failure).toEqual({ kind: 'timeout', message: 'no complete response within 100 ms' });
    expect(out.endMs).toBe(1100);
    expect(out.metrics).toBeNull();
    expect(out.events.map((e) => e.atMs)).toEqual([1060, 1090]);
    expect(out.outputTokens).toBe(4);
    // Continuous usage had counted the kept events: what the client saw by the deadline is kept.
    expect(out.outputTokensSource).toBe('usage');
    expect(out.usage).toEqual({ promptTokens: 4, completionTokens: 4, totalTokens: 8 });
  });

  it('usage that only came with the end of the response (not continuous) is dropped with it', () => {
    const r = { ...record(1000, 1131, [1060, 1090, 1131]), tokensPerEventSource: 'tokenizer' as const };
    const out = enforceDeadline(r, 100);
    expect(out.outputTokens).toBe(4);
    expect(out.outputTokensSource).toBe('events');
    expect(out.usage).toBeNull();
    // No event before the deadline: no usage seen either.
    expect(enforceDeadline(record(1000, 1131, [1120, 1131]), 100).usage).toBeNull();
  });

  it('a sweep abort stamped late, or another failure after the deadline, is a timeout at the deadline', () => {
    const late = { ...record(0, 148, []), status: null, firstByteMs: null, metrics: null, failure: { kind: 'disconnected' as const, message: 'x' } };
    const out = enforceDeadline(late, 100);
    expect(out.failure?.kind).toBe('timeout');
    expect(out.endMs).toBe(100);
  });

  it('grace expiry says it was cut off by the grace period, and still classifies as a timeout', () => {
    const grace = graceExpired(500);
    expect(grace).toBeInstanceOf(RequestTimeout);
    expect(grace.message).toMatch(/cut off at the end of the 500 ms grace period/);
    expect(graceExpired(null).message).toMatch(/second interrupt/);
  });
});
