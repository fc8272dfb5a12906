import { describe, expect, it } from 'vitest';
import type { RequestMetrics } from '../../contracts/metrics.ts';
import { compareWithTruth } from '../../contracts/tolerance.ts';

const metrics = (over: Partial<RequestMetrics>): RequestMetrics => ({ latencyMs: 100, ttftMs: 50, tpotMs: 10, ntpotMs: 50, itlMs: [10], interChunkMs: [10], outputTokens: 2, ...over });
const deviation = (client: RequestMetrics, truth: RequestMetrics, metric: string) => compareWithTruth(client, truth).find((d) => d.metric === metric);

describe('client against truth', () => {
  it('is within tolerance when every value is close', () => {
    expect(compareWithTruth(metrics({ ttftMs: 51, latencyMs: 101 }), metrics({})).every((d) => d.withinTolerance)).toBe(true);
  });

  it('a value only one side has is a miss, however close the rest is', () => {
    expect(deviation(metrics({ ttftMs: null }), metrics({}), 'ttft')?.withinTolerance).toBe(false);
    expect(deviation(metrics({}), metrics({ ttftMs: null }), 'ttft')?.withinTolerance).toBe(false);
    expect(deviation(metrics({ tpotMs: null }), metrics({}), 'tpot')?.withinTolerance).toBe(false);
  });

  it('a value neither side has is not compared', () => {
    expect(deviation(metrics({ ttftMs: null }), metrics({ ttftMs: null }), 'ttft')).toBeUndefined();
    expect(deviation(metrics({ tpotMs: null }), metrics({ tpotMs: null }), 'tpot')).toBeUndefined();
  });

  it('a stall observed during the run widens the timing tolerances by exactly that much, never the counts or the one-sided floor', () => {
    const late = metrics({ ttftMs: 57, latencyMs: 107, itlMs: [17], tpotMs: 17 });
    const within = (slackMs: number) => compareWithTruth(late, metrics({}), slackMs).filter((d) => !d.withinTolerance).map((d) => d.metric);
    expect(within(0)).toEqual(['ttft', 'itl', 'tpot', 'latency']);
    expect(within(1.9)).toEqual(['ttft', 'itl', 'tpot', 'latency']);
    expect(within(2)).toEqual([]);
    // Earlier than the truth is impossible over loopback, stall or not; a missing gap or token is never forgiven.
    expect(deviation(metrics({ ttftMs: 49 }), metrics({}), 'ttft')?.withinTolerance).toBe(false);
    expect(compareWithTruth(metrics({ ttftMs: 49 }), metrics({}), 50).find((d) => d.metric === 'ttft')?.withinTolerance).toBe(false);
    expect(compareWithTruth(metrics({ itlMs: [] }), metrics({}), 50).find((d) => d.metric === 'itl')?.withinTolerance).toBe(false);
    expect(compareWithTruth(metrics({ outputTokens: 3 }), metrics({}), 50).find((d) => d.metric === 'output_tokens')?.withinTolerance).toBe(false);
  });
});
