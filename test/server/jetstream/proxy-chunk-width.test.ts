/**
 * DESIGN §2: the same seed and request give the same byte cuts whatever the wall clock says. The
 * proxy's chunks carry an epoch float, which Python prints in its shortest form; a microsecond
 * count ending in 0 would print one digit shorter and move every random cut.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { requestRng } from '../../../contracts/rng.ts';
import { fixedWidthEpochSec, proxyStreamEvents } from '../../../server/dialects/jetstream/render.ts';
import { pythonFloat } from '../../../server/dialects/vllm/python-repr.ts';

describe('the proxy chunk’s time_created', () => {
  it('always prints with six decimals, at most one microsecond from the time (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1_600_000_000_000_000, max: 4_000_000_000_000_000 }), (micros) => {
        const at = micros / 1e6;
        const shown = pythonFloat(fixedWidthEpochSec(at));
        expect(shown).toMatch(/^\d{10}\.\d{6}$/);
        expect([0, 1]).toContain(Math.round(Number(shown) * 1e6) - micros);
      }),
      { seed: 61, numRuns: 2000 },
    );
  });

  it('gives chunks of the same lengths for arrivals on and off a round microsecond', () => {
    const tokens = [0, 1, 2].map((i) => ({ id: i, text: ` t${i}`, dueMs: 10 * (i + 1) }));
    const lengths = (arrivalEpochSec: number) =>
      proxyStreamEvents({ rng: requestRng(5, 'r'), arrivalEpochSec, dueTimesKnown: true }, tokens, 40).map((e) => e.data.length);
    expect(lengths(1_764_500_000.12345)).toEqual(lengths(1_764_500_000.123457));
  });
});
