import { describe, expect, it } from 'vitest';
import { LatenessTally } from '../../../server/metrics/lateness-tally.ts';

describe('lateness tally', () => {
  it('summarises to bucket precision, with an exact maximum, across both bucket ranges', () => {
    const tally = new LatenessTally();
    for (let i = 0; i < 98; i++) tally.add(0.1);
    tally.add(-0.2); // early counts as on time
    tally.add(150.4);
    const s = tally.summary();
    expect(s.count).toBe(100);
    expect(s.p50Ms).toBeCloseTo(0.1, 2);
    expect(s.p99Ms).toBeCloseTo(0.1, 2);
    expect(tally.percentileMs(100)).toBe(150.4);
    expect(s.maxMs).toBe(150.4);
    tally.reset();
    expect(tally.summary()).toEqual({ count: 0, meanMs: null, p50Ms: null, p99Ms: null, maxMs: null });
  });
});
