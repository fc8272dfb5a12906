/** requests.jsonl lines read back into the records they were written from. */
import { describe, expect, it } from 'vitest';
import { requestMetrics } from '../../../contracts/metrics.ts';
import type { RequestRecord } from '../../../client/record/request-record.ts';
import { perRequestEntry, recordFromLine, requestLine } from '../../../client/report/request-line.ts';

const ORIGIN_MS = 1234.5;
const ORIGIN_EPOCH_MS = 1_764_000_000_000;
const toEpoch = (reading: number): number => ORIGIN_EPOCH_MS + (reading - ORIGIN_MS);

function success(): RequestRecord {
  const events = [
    { atMs: 1300.25, tokens: 1 },
    { atMs: 1310.5, tokens: 2 },
    { atMs: 1321.125, tokens: 1 },
  ];
  return {
    index: 7,
    requestId: 'bench-1-7',
    model: 'lora-a',
    stage: 1,
    warmup: false,
    scheduledMs: 1250,
    startMs: 1250.5,
    firstByteMs: 1300.25,
    endMs: 1322,
    status: 200,
    failure: null,
    events,
    tokensPerEventSource: 'continuous_usage',
    outputTokens: 4,
    outputTokensSource: 'usage',
    tokenCountMismatch: false,
    promptTokens: 9,
    promptTokensSource: 'usage',
    usage: { promptTokens: 9, completionTokens: 4, totalTokens: 13 },
    finishReason: 'length',
    finishReasonMs: 1321.125,
    metrics: requestMetrics({ startMs: 1250.5, endMs: 1322, events, outputTokens: 4 }),
  };
}

describe('recordFromLine', () => {
  it('gives back a success with its times on the epoch clock and its metrics recomputed', () => {
    const record = success();
    const back = recordFromLine(requestLine(record, ORIGIN_MS, ORIGIN_EPOCH_MS));
    expect(back).toEqual({
      ...record,
      scheduledMs: toEpoch(record.scheduledMs),
      startMs: toEpoch(record.startMs),
      firstByteMs: toEpoch(record.firstByteMs as number),
      endMs: toEpoch(record.endMs),
      finishReasonMs: toEpoch(record.finishReasonMs as number),
      events: record.events.map((e) => ({ atMs: toEpoch(e.atMs), tokens: e.tokens })),
      metrics: back.metrics,
    });
    const m = back.metrics;
    expect(m?.ttftMs).toBeCloseTo(record.metrics?.ttftMs as number, 6);
    expect(m?.latencyMs).toBeCloseTo(record.metrics?.latencyMs as number, 6);
    expect(m?.tpotMs).toBeCloseTo(record.metrics?.tpotMs as number, 6);
  });

  it('says per request whether client and server counted the tokens differently, and reads it back', () => {
    const mismatched: RequestRecord = { ...success(), outputTokens: 5, usage: { promptTokens: 9, completionTokens: 5, totalTokens: 14 }, tokenCountMismatch: true };
    const line = requestLine(mismatched, ORIGIN_MS, ORIGIN_EPOCH_MS);
    expect(JSON.parse(line)).toMatchObject({ token_count_mismatch: true });
    expect(recordFromLine(line).tokenCountMismatch).toBe(true);
    expect(JSON.parse(requestLine(success(), ORIGIN_MS, ORIGIN_EPOCH_MS))).toMatchObject({ token_count_mismatch: false });
  });

  it('says when the finish reason arrived, as a time like the others, and reads it back (older lines: by the end)', () => {
    // A timeout that kept the finish reason its stalled stream had sent (audit 11 R15-N3).
    const cut: RequestRecord = { ...success(), failure: { kind: 'timeout', message: 'no complete response within 100 ms' }, endMs: 1350.5, finishReason: 'stop', finishReasonMs: 1321.125, metrics: null };
    const line = requestLine(cut, ORIGIN_MS, ORIGIN_EPOCH_MS);
    expect(JSON.parse(line)).toMatchObject({ ok: false, finish_reason: 'stop', finish_reason_ms: 1321.125 - ORIGIN_MS });
    expect(recordFromLine(line)).toMatchObject({ finishReason: 'stop', finishReasonMs: toEpoch(1321.125) });
    const older = (json: Record<string, unknown>): string => JSON.stringify(Object.fromEntries(Object.entries(json).filter(([key]) => key !== 'finish_reason_ms')));
    expect(recordFromLine(older(JSON.parse(line) as Record<string, unknown>)).finishReasonMs).toBe(toEpoch(1350.5));
    const none = requestLine({ ...cut, finishReason: null, finishReasonMs: null }, ORIGIN_MS, ORIGIN_EPOCH_MS);
    expect(JSON.parse(none)).toMatchObject({ finish_reason: null, finish_reason_ms: null });
    expect(recordFromLine(older(JSON.parse(none) as Record<string, unknown>)).finishReasonMs).toBeNull();
  });

  it('gives back a failure without metrics', () => {
    const failed: RequestRecord = { ...success(), status: 503, failure: { kind: 'http_503', message: 'busy' }, events: [], usage: null, outputTokens: 0, metrics: null };
    const back = recordFromLine(requestLine(failed, ORIGIN_MS, ORIGIN_EPOCH_MS));
    expect(back.failure).toEqual({ kind: 'http_503', message: 'busy' });
    expect(back.metrics).toBeNull();
    expect(back.usage).toBeNull();
  });
});

describe('perRequestEntry (per_request_lifecycle_metrics.json)', () => {
  const seconds = (reading: number): number => toEpoch(reading) / 1000;

  it('an answer whose usage says 0 output tokens lists no chunk or token times, as the summary gives it no TTFT (audit 10 Z3-3)', () => {
    const zero = { ...success(), outputTokens: 0, usage: { promptTokens: 9, completionTokens: 0, totalTokens: 9 }, tokenCountMismatch: true };
    const rm = perRequestEntry(requestLine(zero, ORIGIN_MS, ORIGIN_EPOCH_MS))?.info.response_metrics;
    expect(rm).toMatchObject({ output_tokens: 0, chunk_times: [], output_token_times: [] });
  });

  it("has inference-perf's per-request layout, its times in epoch seconds and the info fields its readers use", () => {
    const entry = perRequestEntry(requestLine(success(), ORIGIN_MS, ORIGIN_EPOCH_MS));
    expect(Object.keys(entry ?? {})).toEqual(['start_time', 'end_time', 'request', 'response', 'info', 'error']);
    expect(entry).toMatchObject({ request: null, response: null, error: null });
    expect(entry?.start_time).toBeCloseTo(seconds(1250.5), 6);
    expect(entry?.end_time).toBeCloseTo(seconds(1322), 6);
    const info = entry?.info;
    expect(info?.request_metrics).toEqual({ text: { input_tokens: 9 } });
    expect(info?.input_tokens).toBe(9);
    const rm = info?.response_metrics;
    expect(rm?.output_tokens).toBe(4);
    expect(rm?.server_usage).toEqual({ prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 });
    // One chunk time per token-bearing event; the two-token event gives two equal token times.
    expect(rm?.chunk_times.map((t) => t - seconds(1250.5))).toEqual([expect.closeTo(0.04975, 6), expect.closeTo(0.06, 6), expect.closeTo(0.070625, 6)]);
    expect(rm?.output_token_times).toHaveLength(4);
    expect(rm?.output_token_times[1]).toBe(rm?.output_token_times[2]);
    expect(rm?.output_token_times[0]).toBe(rm?.chunk_times[0]);
    // e2e/utils/accuracy.py ttft(): chunk_times[0] − start_time.
    expect((rm?.chunk_times[0] ?? 0) - (entry?.start_time ?? 0)).toBeCloseTo(0.04975, 6);
    expect(info?.extra_info).toMatchObject({ request_id: 'bench-1-7', index: 7, stage: 1, model: 'lora-a', output_tokens_source: 'usage', tokens_per_event_source: 'continuous_usage' });
  });

  it('a usage without prompt_tokens is server_usage of its completion count alone; extra_info names the prompt count’s source (review 23: the client’s counts stood as the server’s)', () => {
    const clientPrompt = perRequestEntry(requestLine({ ...success(), promptTokensSource: 'client' }, ORIGIN_MS, ORIGIN_EPOCH_MS))?.info;
    expect(clientPrompt?.response_metrics.server_usage).toEqual({ completion_tokens: 4 });
    expect(clientPrompt?.extra_info.prompt_tokens_source).toBe('client');
    const served = perRequestEntry(requestLine(success(), ORIGIN_MS, ORIGIN_EPOCH_MS))?.info;
    expect(served?.extra_info.prompt_tokens_source).toBe('usage');
  });

  it("a LoRA request names its adapter in info.lora_adapter (inference-perf's field), and the line gives it back", () => {
    const line = requestLine({ ...success(), model: 'movie', loraAdapter: 'movie' }, ORIGIN_MS, ORIGIN_EPOCH_MS);
    expect(perRequestEntry(line)?.info.lora_adapter).toBe('movie');
    expect(recordFromLine(line).loraAdapter).toBe('movie');
    const plain = requestLine(success(), ORIGIN_MS, ORIGIN_EPOCH_MS);
    expect(perRequestEntry(plain)?.info.lora_adapter).toBeNull();
    expect(recordFromLine(plain).loraAdapter).toBeUndefined();
  });

  it('a failure carries its kind and message as error_type and error_msg', () => {
    const failed: RequestRecord = { ...success(), status: 503, failure: { kind: 'http_503', message: 'busy' }, events: [], usage: null, outputTokens: 0, metrics: null };
    const entry = perRequestEntry(requestLine(failed, ORIGIN_MS, ORIGIN_EPOCH_MS));
    expect(entry?.error).toEqual({ error_type: 'http_503', error_msg: 'busy' });
    expect(entry?.info.response_metrics).toMatchObject({ output_tokens: 0, chunk_times: [], output_token_times: [] });
  });

  it('warm-up and sweep-probe (stage −1) requests are left out, as the summary leaves them out', () => {
    expect(perRequestEntry(requestLine({ ...success(), warmup: true }, ORIGIN_MS, ORIGIN_EPOCH_MS))).toBeNull();
    expect(perRequestEntry(requestLine({ ...success(), stage: -1 }, ORIGIN_MS, ORIGIN_EPOCH_MS))).toBeNull();
  });
});
