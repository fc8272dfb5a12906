/**
 * The sweep's saturation probe reads the rate a closed loop sustains while all its lanes are
 * busy, whatever share of the last round is filled (review 20: 50 requests over 16 lanes read
 * 20 % low when the window ran to the last reply).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { saturationRate } from '../../../client/load/saturation-probe.ts';
import type { RequestRecord } from '../../../client/record/request-record.ts';

type Probe = Pick<RequestRecord, 'startMs' | 'endMs' | 'failure'>;

/** A closed loop: `lanes` in flight, each request `latencyMs` (± jitter), the next sent as one ends. */
function closedLoop(lanes: number, count: number, latencyMs: number, jitter: (i: number) => number): Probe[] {
  const free = Array.from({ length: lanes }, () => 0);
  const out: Probe[] = [];
  for (let i = 0; i < count; i++) {
    let lane = 0;
    for (let l = 1; l < lanes; l++) if ((free[l] as number) < (free[lane] as number)) lane = l;
    const startMs = free[lane] as number;
    const endMs = startMs + latencyMs + jitter(i);
    free[lane] = endMs + 0.2;
    out.push({ startMs, endMs, failure: null });
  }
  return out;
}

describe('saturationRate', () => {
  it('reads lanes / latency for any share of the last round filled (seeded)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 32 }), fc.integer({ min: 3, max: 8 }), fc.integer({ min: 0, max: 31 }), fc.integer({ min: 20, max: 500 }), (lanes, rounds, extra, latencyMs) => {
        const count = lanes * rounds + (extra % lanes);
        const rate = saturationRate(closedLoop(lanes, count, latencyMs, (i) => ((i * 7919) % 11) / 10), lanes) as number;
        const sustained = (lanes * 1000) / (latencyMs + 0.5);
        expect(Math.abs(rate - sustained) / sustained).toBeLessThan(0.02);
      }),
      { seed: 20, numRuns: 300 },
    );
  });

  it('the case the review found: 50 requests over 16 lanes of 73 ms is about 219 req/s, not 174', () => {
    const rate = saturationRate(closedLoop(16, 50, 73, () => 0), 16) as number;
    expect(rate).toBeGreaterThan(205);
    expect(rate).toBeLessThan(225);
  });

  it('counts successes only (a failure still held its lane), and is null without two successes', () => {
    const loop = closedLoop(4, 20, 100, () => 0);
    const failing = loop.map((r, i) => (i % 2 === 0 ? { ...r, failure: { kind: 'http_500', message: 'x' } as Probe['failure'] } : r));
    expect(saturationRate(failing, 4)).toBeCloseTo((saturationRate(loop, 4) as number) / 2, 9);
    // Fewer requests than lanes: only as many lanes were ever busy.
    expect(saturationRate(closedLoop(4, 3, 100, () => 0), 4)).toBeCloseTo(30, 9);
    expect(saturationRate(closedLoop(4, 1, 100, () => 0), 4)).toBeNull();
  });
});
