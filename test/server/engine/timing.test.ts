import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../contracts/rng.ts';
import { planTokens } from '../../../server/engine/plan.ts';
import { DISTRIBUTION_KINDS, loadFactor, sampleMs, simpleTiming, tokenDueTimes, type Distribution, type DistributionKind } from '../../../server/engine/timing.ts';

function moments(kind: DistributionKind, meanMs: number, spreadMs: number, n = 20_000): { mean: number; sd: number; min: number } {
  const rng = new Rng(7);
  const d: Distribution = { kind, meanMs, spreadMs };
  let sum = 0;
  let sq = 0;
  let min = Infinity;
  for (let i = 0; i < n; i++) {
    const x = sampleMs(rng, d);
    sum += x;
    sq += x * x;
    min = Math.min(min, x);
  }
  const mean = sum / n;
  return { mean, sd: Math.sqrt(sq / n - mean * mean), min };
}

describe('sampled durations', () => {
  it.each([
    ['normal', 100, 10],
    ['lognormal', 100, 30],
    ['uniform', 100, 20],
    ['exponential', 100, 40],
  ] as const)('%s(mean %d, spread %d) has that mean and spread (seed 7, 20k draws)', (kind, mean, spread) => {
    const m = moments(kind, mean, spread);
    expect(m.mean).toBeGreaterThan(mean * 0.98);
    expect(m.mean).toBeLessThan(mean * 1.02);
    // Uniform's spread is its half-width: sd = spread / √3.
    const sd = kind === 'uniform' ? spread / Math.sqrt(3) : spread;
    expect(m.sd).toBeGreaterThan(sd * 0.95);
    expect(m.sd).toBeLessThan(sd * 1.05);
  });

  it('a normal with a large spread is clamped at 0, never negative', () => {
    expect(moments('normal', 10, 50).min).toBe(0);
  });

  it('a mean of 0 with a spread: normal and uniform draw around it, clamped at 0 (audit 10 Z5-2); lognormal and exponential are 0', () => {
    const normal = moments('normal', 0, 2);
    // Half-normal: mean sd·√(2/π) ≈ 0.798 ms.
    expect(normal.mean).toBeGreaterThan(0.76);
    expect(normal.mean).toBeLessThan(0.84);
    expect(moments('uniform', 0, 2).mean).toBeCloseTo(0.5, 1);
    expect(moments('lognormal', 0, 2, 100)).toEqual({ mean: 0, sd: 0, min: 0 });
    expect(moments('exponential', 0, 2, 100)).toEqual({ mean: 0, sd: 0, min: 0 });
  });

  it('fixed ignores the spread and consumes no randomness', () => {
    const rng = new Rng(1);
    const before = new Rng(1).u32();
    expect(sampleMs(rng, { kind: 'fixed', meanMs: 42, spreadMs: 9 })).toBe(42);
    expect(rng.u32()).toBe(before);
  });

  it('every kind: same seed, same samples; never negative (fast-check seed 5)', () => {
    fc.assert(
      fc.property(fc.constantFrom(...DISTRIBUTION_KINDS), fc.double({ min: 0, max: 1000, noNaN: true }), fc.double({ min: 0, max: 1000, noNaN: true }), fc.integer(), (kind, meanMs, spreadMs, seed) => {
        const d = { kind, meanMs, spreadMs };
        const a = new Rng(seed);
        const b = new Rng(seed);
        for (let i = 0; i < 5; i++) {
          const x = sampleMs(a, d);
          expect(x).toBe(sampleMs(b, d));
          expect(x).toBeGreaterThanOrEqual(0);
          expect(Number.isFinite(x)).toBe(true);
        }
      }),
      { seed: 5, numRuns: 200 },
    );
  });
});

describe('token due times', () => {
  it('prefill = overhead + per-token × prompt replaces TTFT when set', () => {
    const model = { ...simpleTiming(500, 10), prefillOverheadMs: 20, prefillPerTokenMs: 0.5 };
    expect([...tokenDueTimes(new Rng(1), 3, model, { promptTokens: 100, running: 1 })]).toEqual([70, 80, 90]);
  });

  it.each([
    [1, 1],
    [2, 1.25],
    [5, 2],
    [9, 2],
  ])('--time-factor-under-load 2 with max-num-seqs 5 and %d running scales by %d', (running, factor) => {
    expect(loadFactor({ timeFactorUnderLoad: 2, maxNumSeqs: 5 }, running)).toBe(factor);
    const due = tokenDueTimes(new Rng(1), 2, { ...simpleTiming(100, 10), timeFactorUnderLoad: 2, maxNumSeqs: 5 }, { promptTokens: 1, running });
    expect([...due]).toEqual([100 * factor, 110 * factor]);
  });

  it('isolated plans are a pure function of (seed, key, request): the same every time', () => {
    const model = { ...simpleTiming(100, 10), ttft: { kind: 'lognormal' as const, meanMs: 100, spreadMs: 30 }, itl: { kind: 'normal' as const, meanMs: 10, spreadMs: 3 } };
    const plan = () => planTokens({ seed: 3, requestKey: 'abc', maxTokens: 20, timing: { deferred: false, model, running: 1 }, text: { multibyteRate: 0 } });
    expect(plan().tokens).toEqual(plan().tokens);
    const dues = plan().tokens.map((t) => t.dueMs);
    expect(dues).toEqual([...dues].sort((a, b) => a - b));
  });
});
