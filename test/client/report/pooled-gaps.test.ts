import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { distribution } from '../../../contracts/stats.ts';
import { PooledGaps, SKETCH_RELATIVE_ERROR } from '../../../client/record/pooled-gaps.ts';

// Zero gaps (tokens sharing one event) are pushed too, not only added as extra zeros.
const gapsArb = fc.array(fc.oneof(fc.constant(0), fc.double({ min: 0.001, max: 5000, noNaN: true })), { minLength: 2, maxLength: 400 });

describe('pooled gaps', () => {
  it('exact below the limit: numpy-equal distribution, extra zeros included', () => {
    const gaps = new PooledGaps();
    for (const g of [5, 1, 3]) gaps.push(g);
    expect(gaps.isExact).toBe(true);
    expect(gaps.distribution(2)).toEqual(distribution([0, 0, 5, 1, 3]));
  });

  it('past the limit the sketch keeps every quantile within its relative error, min/max/count exact', () => {
    fc.assert(
      fc.property(gapsArb, fc.integer({ min: 0, max: 20 }), (values, zeros) => {
        const gaps = new PooledGaps(1);
        for (const v of values) gaps.push(v);
        expect(gaps.isExact).toBe(false);
        const exact = distribution([...new Array<number>(zeros).fill(0), ...values]);
        const sketch = gaps.distribution(zeros);
        expect(sketch.min).toBe(exact.min);
        expect(sketch.max).toBe(exact.max);
        for (const key of ['p10', 'p50', 'p90', 'p99'] as const) {
          const e = exact[key] as number;
          // Interpolating between two ranks keeps the bound: both ends are within it.
          expect(Math.abs((sketch[key] as number) - e)).toBeLessThanOrEqual(SKETCH_RELATIVE_ERROR * e + 1e-9);
        }
        expect(sketch.mean).toBeCloseTo(exact.mean as number, 6);
        expect(Object.values(sketch).every((v) => v === null || Number.isFinite(v))).toBe(true);
      }),
      { seed: 99, numRuns: 200 },
    );
  });

  it('past the limit, one value repeated has no spread and its own mean (review 20: the running sums left 2e-6)', () => {
    const gaps = new PooledGaps(1);
    for (let i = 0; i < 5000; i++) gaps.push(7.3);
    expect(gaps.isExact).toBe(false);
    const d = gaps.distribution(0);
    expect([d.mean, d.sd, d.min, d.max]).toEqual([7.3, 0, 7.3, 7.3]);
    // Two values 1e-9 apart: the sd is at most half the range, whatever the sums' rounding.
    const close = new PooledGaps(1);
    for (let i = 0; i < 5000; i++) close.push(i % 2 === 0 ? 7.3 : 7.300000001);
    expect(close.distribution(0).sd).toBeLessThanOrEqual(0.5e-9 + 1e-15);
  });

  it('past the limit, a nearly constant gap keeps its sd and mean: 20 ms ± 1 ns (review 24: Σx²/n − mean² gave 0 for ± 10 ns over 1 Mi gaps)', () => {
    const values = Array.from({ length: 20_000 }, (_, i) => 20 + ((i * 7919) % 1001 - 500) * 2e-9);
    const exact = distribution(values);
    const sketch = new PooledGaps(1000);
    for (const v of values) sketch.push(v);
    expect(sketch.isExact).toBe(false);
    const d = sketch.distribution(0);
    expect(Math.abs((d.sd as number) - (exact.sd as number)) / (exact.sd as number)).toBeLessThan(1e-6);
    expect(Math.abs((d.mean as number) - (exact.mean as number)) / (exact.mean as number)).toBeLessThan(1e-12);
    // The same through JSON and a merge of two halves, and with extra zeros.
    const left = new PooledGaps(1000);
    const right = new PooledGaps(1000);
    values.forEach((v, i) => (i < 9_000 ? left : right).push(v));
    const merged = PooledGaps.fromJSON(JSON.parse(JSON.stringify(left.toJSON())));
    merged.absorb(PooledGaps.fromJSON(JSON.parse(JSON.stringify(right.toJSON()))));
    expect(Math.abs((merged.distribution(0).sd as number) - (exact.sd as number)) / (exact.sd as number)).toBeLessThan(1e-6);
    const withZeros = distribution([...values, 0, 0, 0]);
    expect(Math.abs((sketch.distribution(3).sd as number) - (withZeros.sd as number)) / (withZeros.sd as number)).toBeLessThan(1e-9);
  });

  it('a sketch written by the older form (running sums only) is still read', () => {
    const gaps = PooledGaps.fromJSON({ exact: null, sketch: { zeros: 0, buckets: [[0, 2]], sum: 2, sumSquares: 2, min: 1, max: 1, count: 2 } });
    expect(gaps.distribution(0)).toMatchObject({ mean: 1, sd: 0, min: 1, max: 1, p50: 1 });
  });

  it('merging exact and sketched parts equals sketching everything (through JSON)', () => {
    fc.assert(
      fc.property(gapsArb, gapsArb, (a, b) => {
        const whole = new PooledGaps(1);
        for (const v of [...a, ...b]) whole.push(v);
        const left = new PooledGaps(1);
        for (const v of a) left.push(v);
        const right = new PooledGaps();
        for (const v of b) right.push(v);
        const merged = PooledGaps.fromJSON(JSON.parse(JSON.stringify(left.toJSON())));
        merged.absorb(PooledGaps.fromJSON(JSON.parse(JSON.stringify(right.toJSON()))));
        const d1 = whole.distribution(3);
        const d2 = merged.distribution(3);
        for (const key of ['min', 'max', 'p10', 'p50', 'p90', 'p99'] as const) expect(d2[key]).toBe(d1[key]);
      }),
      { seed: 5, numRuns: 100 },
    );
  });
});
