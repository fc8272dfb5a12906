/** requests.jsonl lines read back into the records they were written from. */
import { describe, expect, it } from 'vitest';
import { requestMetrics } from '../../../contracts/metrics.ts';
import type { RequestRecord } from '../../../client/record/request-record.ts';
import { recordFromLine, requestLine } from '../../../client/report/request-line.ts';

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
      events: record.events.map((e) => ({ atMs: toEpoch(e.atMs), tokens: e.tokens })),
      metrics: back.metrics,
    });
    const m = back.metrics;
    expect(m?.ttftMs).toBeCloseTo(record.metrics?.ttftMs as number, 6);
    expect(m?.latencyMs).toBeCloseTo(record.metrics?.latencyMs as number, 6);
    expect(m?.tpotMs).toBeCloseTo(record.metrics?.tpotMs as number, 6);
  });

  it('gives back a failure without metrics', () => {
    const failed: RequestRecord = { ...success(), status: 503, failure: { kind: 'http_503', message: 'busy' }, events: [], usage: null, outputTokens: 0, metrics: null };
    const back = recordFromLine(requestLine(failed, ORIGIN_MS, ORIGIN_EPOCH_MS));
    expect(back.failure).toEqual({ kind: 'http_503', message: 'busy' });
    expect(back.metrics).toBeNull();
    expect(back.usage).toBeNull();
  });
});
