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
});
