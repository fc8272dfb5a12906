/**
 * Report windows keep the precision of the readings they come from: an epoch value near 1.8e12 ms
 * steps by 244 ns, so a window taken as the difference of two epoch values misses the same window
 * recomputed from requests.jsonl's run-relative times in the 5th–6th digit of a short stage's rate.
 */
import { describe, expect, it } from 'vitest';
import { requestMetrics } from '../../../contracts/metrics.ts';
import { VirtualClock } from '../../../contracts/clock.ts';
import type { RequestRecord } from '../../../client/record/request-record.ts';
import { clockTimeline, EPOCH_TIMELINE, StageSamples, type StageSamplesJson } from '../../../client/record/stage-samples.ts';
import { lifecycleReportFromSamples } from '../../../client/report/lifecycle-report.ts';

function record(startMs: number, endMs: number): RequestRecord {
  const events = [{ atMs: startMs + 1, tokens: 1 }];
  return {
    index: 0,
    requestId: 'r',
    stage: 0,
    warmup: false,
    scheduledMs: startMs,
    startMs,
    firstByteMs: startMs + 1,
    endMs,
    status: 200,
    failure: null,
    events,
    tokensPerEventSource: 'one_per_event',
    outputTokens: 1,
    outputTokensSource: 'events',
    tokenCountMismatch: false,
    promptTokens: 3,
    promptTokensSource: 'client',
    usage: null,
    finishReason: 'length',
    finishReasonMs: endMs,
    metrics: requestMetrics({ startMs, endMs, events, outputTokens: 1 }),
  };
}

// A wall-clock origin with a fraction, as a real process's is: its epoch values are rounded.
const ORIGIN_EPOCH_MS = 1_764_560_000_123.456_789;
const START = 1234.567_891_234;
const END = START + 34.000_123_456;

describe('measured windows', () => {
  it('span exactly the readings a one-request stage took, not the rounded epoch difference', () => {
    const clock = new VirtualClock(0, ORIGIN_EPOCH_MS);
    const samples = new StageSamples();
    samples.add(record(START, END), clockTimeline(clock));
    const report = lifecycleReportFromSamples(samples, { intendedRate: null });
    const exact = 1 / ((END - START) / 1000);
    expect(Math.abs((report.successes.throughput.requests_per_sec as number) - exact) / exact).toBeLessThan(1e-12);
    // The epoch route this replaced is off by far more than that.
    const viaEpoch = 1 / ((clock.epochMs(END) - clock.epochMs(START)) / 1000);
    expect(Math.abs(viaEpoch - exact) / exact).toBeGreaterThan(1e-9);
  });

  it('keep that precision through shards on different bases and through raw_samples.json', () => {
    const a = new StageSamples();
    const b = new StageSamples();
    a.add(record(START, START + 5), clockTimeline(new VirtualClock(0, ORIGIN_EPOCH_MS)));
    // The second shard's clock started 2.5 s of wall time later: its readings are its own.
    b.add(record(START - 2500 + 20, END - 2500), clockTimeline(new VirtualClock(0, ORIGIN_EPOCH_MS + 2500)));
    const merged = StageSamples.fromJSON(JSON.parse(JSON.stringify(StageSamples.merge([a, b]).toJSON())) as StageSamplesJson);
    const report = lifecycleReportFromSamples(merged, { intendedRate: null });
    const exact = 2 / ((END - START) / 1000);
    expect(Math.abs((report.successes.throughput.requests_per_sec as number) - exact) / exact).toBeLessThan(1e-9);
    expect(merged.window.baseEpochMs + (merged.window.firstStartMs as number)).toBeCloseTo(ORIGIN_EPOCH_MS + START, 3);
  });

  it('move epoch values (records rebuilt from lines, older files) onto the readings\' base, not the other way', () => {
    const clock = new VirtualClock(0, ORIGIN_EPOCH_MS);
    const samples = new StageSamples();
    samples.add(record(clock.epochMs(START), clock.epochMs(START + 5)), EPOCH_TIMELINE);
    samples.add(record(START + 1, END), clockTimeline(clock));
    expect(samples.window.baseEpochMs).toBe(Math.floor(ORIGIN_EPOCH_MS));
    const lastEnd = samples.window.lastEndMs as number;
    expect(Math.abs(lastEnd - (END + (ORIGIN_EPOCH_MS - Math.floor(ORIGIN_EPOCH_MS))))).toBeLessThan(1e-9);
  });

  it('read raw_samples.json files written with epoch windows', () => {
    const legacy = new StageSamples().toJSON() as unknown as { window: Record<string, number | null> };
    legacy.window = { firstScheduledEpochMs: 1.7e12, firstStartEpochMs: 1.7e12, lastStartEpochMs: 1.7e12 + 500, lastEndEpochMs: 1.7e12 + 2000, firstSuccessStartEpochMs: null, lastSuccessEndEpochMs: null };
    const samples = StageSamples.fromJSON(legacy as unknown as StageSamplesJson);
    expect(samples.window).toEqual({ baseEpochMs: 0, firstScheduledMs: 1.7e12, firstStartMs: 1.7e12, lastStartMs: 1.7e12 + 500, lastEndMs: 1.7e12 + 2000, firstSuccessStartMs: null, lastSuccessEndMs: null });
  });
});
