/**
 * contracts/stats.ts against numpy (DESIGN §5). The fixture is produced by
 * `python3 test/fixtures/stats/generate.py`; see its "produced_by" field.
 *
 * Percentiles must agree with numpy bit for bit. Mean and sd are allowed a relative error of
 * 1e-12 only because numpy sums pairwise while the contract sums about the minimum with
 * compensation.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  countedSample,
  distribution,
  distributionOfSorted,
  mean,
  percentile,
  percentileOfSorted,
  populationSd,
  sortedAscending,
  withZeros,
} from '../../contracts/stats.ts';

interface NumpyCase {
  name: string;
  values: number[];
  percentiles: Record<string, number>;
  mean: number;
  sd: number;
  exact_mean: number;
  exact_sd: number;
  min: number;
  max: number;
}

interface NumpyFixture {
  produced_by: string;
  empty_sample: { note: string; expected: Record<string, null> };
  cases: NumpyCase[];
}

const fixturePath = fileURLToPath(new URL('../fixtures/stats/numpy-cases.json', import.meta.url));
const fixture = JSON.parse(readFileSync(fixturePath, 'utf8')) as NumpyFixture;
const cases = fixture.cases;

/** One row per (case, p), so a failure names the exact case and percentile. */
const percentileRows: Array<{ name: string; values: number[]; p: number; key: string; expected: number }> =
  cases.flatMap((c) =>
    Object.entries(c.percentiles).map(([key, expected]) => ({
      name: c.name,
      values: c.values,
      p: Number(key),
      key,
      expected,
    })),
  );

/** |actual − expected| ≤ 1e-12 · |expected|, with exact equality required when expected is 0. */
function expectRelativelyClose(actual: number | null, expected: number): void {
  expect(actual).not.toBeNull();
  const a = actual as number;
  if (a === expected) return;
  const error = Math.abs(a - expected);
  const bound = 1e-12 * Math.abs(expected);
  expect(error, `got ${a}, numpy ${expected}, |error| ${error} > bound ${bound}`).toBeLessThanOrEqual(bound);
}

describe('numpy fixture', () => {
  it('is the generated file with enough cases', () => {
    expect(fixture.produced_by).toContain('python3 test/fixtures/stats/generate.py');
    expect(fixture.produced_by).toContain('method="linear"');
    expect(fixture.produced_by).toContain('ddof=0');
    expect(cases.length).toBeGreaterThanOrEqual(30);
    for (const c of cases) {
      for (const p of [0, 10, 50, 90, 99, 100]) {
        expect(Object.keys(c.percentiles).map(Number), c.name).toContain(p);
      }
    }
  });
});

describe('percentile agrees with numpy.percentile(method="linear") exactly', () => {
  it.each(percentileRows)('$name p=$key', ({ values, p, expected }) => {
    expect(percentile(values, p)).toBe(expected);
    expect(percentileOfSorted(sortedAscending(values), p)).toBe(expected);
  });
});

describe.each(cases)('case $name', (c) => {
  it('mean matches numpy.mean and the exact mean (rel 1e-12)', () => {
    expectRelativelyClose(mean(c.values), c.mean);
    expectRelativelyClose(mean(c.values), c.exact_mean);
  });

  it('populationSd matches the exact population sd (rel 1e-12), and numpy.std(ddof=0) where numpy is exact to that', () => {
    expectRelativelyClose(populationSd(c.values), c.exact_sd);
    // numpy's sum drifts where values differ in their last bits only ("nearly_equal": 4 % off).
    if (Math.abs(c.sd / c.exact_sd - 1) <= 1e-12 || c.exact_sd === 0) expectRelativelyClose(populationSd(c.values), c.sd);
  });

  it('distribution matches numpy', () => {
    const d = distribution(c.values);
    expect(d.min).toBe(c.min);
    expect(d.max).toBe(c.max);
    expect(d.p10).toBe(c.percentiles['10.0']);
    expect(d.p50).toBe(c.percentiles['50.0']);
    expect(d.p90).toBe(c.percentiles['90.0']);
    expect(d.p99).toBe(c.percentiles['99.0']);
    expectRelativelyClose(d.mean, c.exact_mean);
    expectRelativelyClose(d.sd, c.exact_sd);
  });

  it('does not mutate its input', () => {
    const input = c.values.slice();
    const snapshot = input.slice();
    percentile(input, 50);
    mean(input);
    populationSd(input);
    distribution(input);
    expect(input).toEqual(snapshot);
  });
});

describe('empty sample', () => {
  it('gives null for every field of distribution', () => {
    expect(distribution([])).toEqual(fixture.empty_sample.expected);
    expect(distribution([])).toEqual({
      mean: null, min: null, max: null, sd: null, p10: null, p50: null, p90: null, p99: null,
    });
  });

  it('gives null from percentile, mean and populationSd', () => {
    expect(percentile([], 50)).toBeNull();
    expect(percentileOfSorted(new Float64Array(0), 0)).toBeNull();
    expect(mean([])).toBeNull();
    expect(populationSd([])).toBeNull();
  });
});

describe('a sample holding a NaN (review 22: the figures below the NaN came out as numbers)', () => {
  const allNaN = { mean: NaN, min: NaN, max: NaN, sd: NaN, p10: NaN, p50: NaN, p90: NaN, p99: NaN };
  it('gives NaN for every figure, as numpy does (np.percentile, np.min, np.std of [1, nan, 3] are all nan)', () => {
    expect(distribution([1, Number.NaN, 3])).toEqual(allNaN);
    expect(distribution([Number.NaN])).toEqual(allNaN);
    expect(distribution([1, Number.NaN], [0, 100])).toEqual({ ...allNaN, extra: [[0, NaN], [100, NaN]] });
    for (const p of [0, 10, 50, 100]) {
      expect(percentile([1, Number.NaN, 3], p)).toBeNaN();
      expect(percentileOfSorted(sortedAscending([Number.NaN, 2, 1]), p)).toBeNaN();
    }
    expect(mean([1, Number.NaN, 3])).toBeNaN();
    expect(populationSd([1, Number.NaN, 3])).toBeNaN();
  });

  it('gives NaN however the sample is laid out: zeros in front, counted values', () => {
    expect(distributionOfSorted(withZeros(sortedAscending([2, Number.NaN, -1]), 3))).toEqual(allNaN);
    expect(distributionOfSorted(countedSample(new Map([[1, 2], [Number.NaN, 1], [3, 1]])))).toEqual(allNaN);
    // A NaN counted zero times is no value of the sample.
    expect(distributionOfSorted(countedSample(new Map([[1, 2], [Number.NaN, 0]]))).p50).toBe(1);
  });

  it('still refuses a percentile outside [0, 100]', () => {
    expect(() => percentile([Number.NaN], 101)).toThrow(RangeError);
    expect(() => distribution([Number.NaN], [-1])).toThrow(RangeError);
  });
});

describe('percentile rank validation', () => {
  it.each([-1, -1e-9, 100.0000001, 101, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY])(
    'p=%s throws RangeError',
    (p) => {
      expect(() => percentile([1, 2, 3], p)).toThrow(RangeError);
      expect(() => percentileOfSorted([1, 2, 3], p)).toThrow(RangeError);
    },
  );

  it.each([0, 100])('p=%s is accepted', (p) => {
    expect(percentile([3, 1, 2], p)).toBe(p === 0 ? 1 : 3);
  });
});

describe('mean and sd far from zero (review 20: a plain sum lost the small differences)', () => {
  // numpy's figures (np.mean, np.std), which agree with exact rational arithmetic to ~1e-9 here.
  it('1e9 + small noise: sd and mean as numpy gives them', () => {
    const values = Array.from({ length: 100_000 }, (_, i) => 1e9 + (i % 1000) * 1e-6);
    const d = distribution(values);
    expect(d.sd).toBeCloseTo(0.00028867519820197286, 12);
    expect(d.mean).toBeCloseTo(1000000000.0004995, 6);
    expect(populationSd(values)).toBe(d.sd);
    expect(mean(values)).toBe(d.mean);
  });

  it('epoch-like stamps, and constant samples: the mean stays within [min, max], the sd of a constant is 0', () => {
    const stamps = Array.from({ length: 1000 }, (_, i) => 1.7e9 + (i % 100) * 1e-5);
    expect(Math.abs((distribution(stamps).sd as number) / 0.0002886604176833391 - 1)).toBeLessThan(1e-6);
    for (const [value, count] of [[1754123456.78, 100], [0.1, 10], [123.456, 12345]] as const) {
      const d = distribution(Array.from({ length: count }, () => value));
      expect([d.mean, d.sd], String(value)).toEqual([value, 0]);
    }
  });
});

describe('mean and sd at the float range and across zero (review 20)', () => {
  // numpy's figures, or the exact ones where numpy rounds away from them.
  it.each([
    [[-1e308, 1e308], 0, Infinity],
    [[0, 1e200], 5e199, Infinity],
    [[1, 2, Infinity], Infinity, Number.NaN],
    [[-Infinity, 1, 2], -Infinity, Number.NaN],
    [[-1e16, 3, 1e16], 1, 8164965809277260],
  ] as const)('%j', (values, expectedMean, expectedSd) => {
    const d = distribution(values);
    expect(d.mean).toBe(expectedMean);
    expect(d.sd).toBe(expectedSd);
    expect([mean(values), populationSd(values)]).toEqual([expectedMean, expectedSd]);
  });
});

describe('ordering', () => {
  it('sorts numerically, not as strings', () => {
    expect(Array.from(sortedAscending([10, 9, 100, -1, 2]))).toEqual([-1, 2, 9, 10, 100]);
    expect(percentile([10, 9, 100], 50)).toBe(10);
  });
});

describe('properties (fast-check, fixed seed)', () => {
  // Finite values on the scales the benchmark meets (latencies in seconds up to token counts).
  // Unbounded doubles are excluded on purpose: when hi − lo overflows to Infinity, numpy's
  // lerp (and so ours) leaves [min, max]; that is numpy's behaviour, not a contract case.
  const value = fc.oneof(
    fc.double({ min: -1e6, max: 1e6, noNaN: true }),
    fc.double({ min: 0, max: 1e-6, noNaN: true }),
    fc.integer({ min: -1000, max: 1000 }),
  );
  const sample = fc.array(value, { minLength: 1, maxLength: 60 });
  const rank = fc.double({ min: 0, max: 100, noNaN: true });

  it('percentiles are monotone in p and lie within [min, max]', () => {
    fc.assert(
      fc.property(sample, fc.array(rank, { minLength: 2, maxLength: 8 }), (values, ranks) => {
        const sorted = sortedAscending(values);
        const lo = sorted[0] as number;
        const hi = sorted[sorted.length - 1] as number;
        const ps = [...ranks, 0, 100].sort((a, b) => a - b);
        let previous = Number.NEGATIVE_INFINITY;
        for (const p of ps) {
          const q = percentile(values, p) as number;
          expect(q).toBeGreaterThanOrEqual(lo);
          expect(q).toBeLessThanOrEqual(hi);
          expect(q).toBeGreaterThanOrEqual(previous);
          previous = q;
        }
        // `===`, not Object.is: for a sample of zeros the sign of a zero result follows numpy's
        // lerp arithmetic (e.g. -0 + 0 = +0), which is not part of the contract.
        expect(percentile(values, 0) === lo).toBe(true);
        expect(percentile(values, 100) === hi).toBe(true);
      }),
      { seed: 42, verbose: true, numRuns: 500 },
    );
  });

  it('percentile of a permuted sample is identical', () => {
    fc.assert(
      fc.property(
        sample.chain((values) =>
          fc.tuple(fc.constant(values), fc.shuffledSubarray(values, { minLength: values.length, maxLength: values.length })),
        ),
        rank,
        ([values, permuted], p) => {
          expect(percentile(permuted, p)).toBe(percentile(values, p));
        },
      ),
      { seed: 42, verbose: true, numRuns: 500 },
    );
  });
});

/**
 * Counts and zeros are never expanded into one value each (audit 16-M finding 2): a report of
 * millions of one-token events or intra-event zeros took seconds and gigabytes. The statistics
 * must still equal the expanded sample's to the last bit.
 */
describe('distributionOfSorted', () => {
  const ps = [0.1, 25, 99.9];

  it('(value, count) pairs give the expanded sample’s distribution exactly', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 0, max: 40 })), { maxLength: 12 }), (pairs) => {
        const counts = new Map<number, number>();
        for (const [value, count] of pairs) counts.set(value, (counts.get(value) ?? 0) + count);
        const expanded: number[] = [];
        for (const [value, count] of counts) for (let i = 0; i < count; i++) expanded.push(value);
        expect(distributionOfSorted(countedSample(counts), ps)).toEqual(distribution(expanded, ps));
      }),
      { seed: 1616, numRuns: 300 },
    );
  });

  it('k zeros merged into sorted gaps (negatives too) give the expanded sample’s distribution exactly', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: -5, max: 500, noNaN: true }), { maxLength: 40 }), fc.nat({ max: 60 }), (gaps, zeros) => {
        const expanded = [...gaps, ...new Array<number>(zeros).fill(0)];
        expect(distributionOfSorted(withZeros(sortedAscending(gaps), zeros), ps)).toEqual(distribution(expanded, ps));
      }),
      { seed: 1617, numRuns: 300 },
    );
  });
});
