/** The exact per-request timeout: a record past start + timeout is a timeout failure at its deadline. */
import { describe, expect, it } from 'vitest';
import { chatApi } from '../../../client/apis/chat.ts';
import { completionsApi } from '../../../client/apis/completions.ts';
import type { ApiAdapter } from '../../../client/apis/api-adapter.ts';
import { ResponseMeasurer } from '../../../client/measure/response-measurer.ts';
import { requestLatencyMs, type RequestRecord } from '../../../client/record/request-record.ts';
import { EPOCH_TIMELINE, StageSamples } from '../../../client/record/stage-samples.ts';
import { requestLine } from '../../../client/report/request-line.ts';
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
    finishReasonMs: endMs,
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
    expect(out.failure).toEqual({ kind: 'timeout', message: 'no complete response within 100 ms', timeoutMs: 100 });
    expect(out.endMs).toBe(1100);
    expect(out.metrics).toBeNull();
    expect(out.events.map((e) => e.atMs)).toEqual([1060, 1090]);
    expect(out.outputTokens).toBe(4);
    // Continuous usage had counted the kept events: what the client saw by the deadline is kept.
    expect(out.outputTokensSource).toBe('usage');
    expect(out.usage).toEqual({ promptTokens: 4, completionTokens: 4, totalTokens: 8 });
    // Its finish reason came with the last event, after the deadline.
    expect(out.finishReason).toBeNull();
    expect(out.finishReasonMs).toBeNull();
  });

  it("a timeout failure's latency is exactly the timeout, in requests.jsonl and the failure sample, even where end − start in doubles is not (review 21-metrics)", () => {
    // 3,900 + 500 lands in the next binade: the deadline rounds, and end − start comes back 1 ulp short.
    const startMs = 3999.9999999999995;
    const out = enforceDeadline(record(startMs, startMs + 900, [startMs + 600]), 500);
    expect(out.endMs - out.startMs).not.toBe(500);
    expect(requestLatencyMs(out)).toBe(500);
    const line = JSON.parse(requestLine(out, 0, 0)) as { latency_ms: number; error: unknown };
    expect([line.latency_ms, line.error]).toEqual([500, { kind: 'timeout', message: 'no complete response within 500 ms' }]);
    const samples = new StageSamples();
    samples.add(out, EPOCH_TIMELINE);
    expect([...samples.failure.latencyMs.view()]).toEqual([500]);
  });

  it('keeps a finish reason whose payload came by the deadline (audit 11 R15-N3), and only then', () => {
    // The finish chunk at 1090, then the stream stalls until the sweep's abort, stamped late at 1103.
    const stalled: RequestRecord = { ...record(1000, 1103, [1060, 1090]), failure: { kind: 'timeout', message: 'no complete response within 100 ms' }, finishReason: 'stop', finishReasonMs: 1090, metrics: null };
    const out = enforceDeadline(stalled, 100);
    expect(out).toMatchObject({ failure: { kind: 'timeout' }, endMs: 1100, metrics: null, finishReason: 'stop', finishReasonMs: 1090 });
    expect(out.events.map((e) => e.atMs)).toEqual([1060, 1090]);
    // At the deadline itself it is in time, as an event is; a moment after, it is not.
    expect(enforceDeadline({ ...stalled, finishReasonMs: 1100 }, 100).finishReason).toBe('stop');
    expect(enforceDeadline({ ...stalled, finishReasonMs: 1100.001 }, 100)).toMatchObject({ finishReason: null, finishReasonMs: null });
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

/**
 * The audit's repro, measured: a stream whose finish chunk (vLLM's EOS: no text, running usage one
 * higher, `finish_reason: "stop"`) arrives, then stalls until the deadline sweep aborts it.
 */
describe('a stream that stalls after its finish chunk, cut off by its timeout', () => {
  const usage = (completion: number) => ({ prompt_tokens: 3, total_tokens: 3 + completion, completion_tokens: completion });
  const completionsChunk = (text: string, completion: number, finish: string | null) =>
    ({ id: 'c', object: 'text_completion', created: 1, model: 'm', choices: [{ index: 0, text, logprobs: null, finish_reason: finish, stop_reason: null }], usage: usage(completion) });
  const chatChunk = (content: string, completion: number, finish: string | null) =>
    ({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, logprobs: null, finish_reason: finish }], usage: usage(completion) });

  type Chunk = (text: string, completion: number, finish: string | null) => object;
  function stalled(api: ApiAdapter, chunk: Chunk, abortMs: number): RequestRecord {
    const measurer = new ResponseMeasurer({ index: 0, requestId: 'r', stage: 0, warmup: false, scheduledMs: 0, startMs: 0, promptTokens: 3 }, { api, stream: true, tokenizerFallback: true });
    measurer.response(200);
    [chunk('a', 1, null), chunk('b', 2, null), chunk('', 3, 'stop')].forEach((c, i) => measurer.data(new TextEncoder().encode(`data: ${JSON.stringify(c)}\n\n`), 50 + 20 * i));
    return enforceDeadline(measurer.error('timeout', new RequestTimeout(1000).message, abortMs), 1000);
  }

  const apis: Array<[string, ApiAdapter, Chunk]> = [['completions', completionsApi, completionsChunk], ['chat', chatApi, chatChunk]];
  for (const [name, api, chunk] of apis) {
    it(`${name}: keeps the finish reason with the events and usage seen by the deadline, still a timeout`, () => {
      // The sweep's abort is stamped when its timer ran, a little late (1003), or right on time (1000): the same record.
      for (const abortMs of [1003, 1000]) {
        const out = stalled(api, chunk, abortMs);
        expect(out.failure).toEqual({ kind: 'timeout', message: 'no complete response within 1000 ms', timeoutMs: 1000 });
        expect(out.endMs).toBe(1000);
        expect(out.metrics).toBeNull();
        expect(out.events).toEqual([{ atMs: 50, tokens: 1 }, { atMs: 70, tokens: 1 }, { atMs: 90, tokens: 1 }]);
        expect(out.usage).toEqual({ promptTokens: 3, completionTokens: 3, totalTokens: 6 });
        expect(out).toMatchObject({ finishReason: 'stop', finishReasonMs: 90 });
      }
    });
  }
});
