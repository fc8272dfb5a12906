import { describe, expect, it } from 'vitest';
import { Rng } from '../../../contracts/rng.ts';
import { arrivalOffsetsMs } from '../../../client/load/arrivals.ts';
import { parseTrace, planStages, planTrace, roundTwoDecimalsLikeNumpy, sweepRates } from '../../../client/load/load-plan.ts';

const gaps = (offsets: Float64Array): number[] => Array.from(offsets.subarray(1), (t, i) => t - (offsets[i] as number));
const meanOf = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
const cv = (xs: number[]): number => {
  const m = meanOf(xs);
  return Math.sqrt(meanOf(xs.map((x) => (x - m) ** 2))) / m;
};

describe('arrival processes', () => {
  it('constant: evenly spaced on an absolute schedule from 0', () => {
    expect(Array.from(arrivalOffsetsMs(4, 5, { kind: 'constant' }, new Rng(1)))).toEqual([0, 250, 500, 750, 1000]);
  });

  it.each([
    ['poisson', { kind: 'poisson' } as const, 1],
    ['gamma burstiness 0.25 (burstier)', { kind: 'gamma', burstiness: 0.25 } as const, 2],
    ['gamma burstiness 4 (more even)', { kind: 'gamma', burstiness: 4 } as const, 0.5],
  ])('%s: mean gap 1/rate, coefficient of variation 1/sqrt(burstiness)', (_name, process, expectedCv) => {
    const offsets = arrivalOffsetsMs(50, 20_000, process, new Rng(9));
    expect(meanOf(gaps(offsets))).toBeCloseTo(20, 0);
    expect(cv(gaps(offsets))).toBeCloseTo(expectedCv, 1);
  });

  it('same seed, same schedule; another seed, another schedule', () => {
    const a = arrivalOffsetsMs(10, 50, { kind: 'poisson' }, new Rng(3));
    expect(arrivalOffsetsMs(10, 50, { kind: 'poisson' }, new Rng(3))).toEqual(a);
    expect(arrivalOffsetsMs(10, 50, { kind: 'poisson' }, new Rng(4))).not.toEqual(a);
  });
});

describe('stage plans', () => {
  it('warm-up sends lead the first stage only and are flagged', () => {
    const plans = planStages(
      [
        { kind: 'rate', rate: 10, durationSec: 1 },
        { kind: 'concurrency', concurrency: 3, count: 7 },
      ],
      { kind: 'constant' },
      0.5,
      1,
    );
    const first = plans[0];
    if (first?.kind !== 'open') throw new Error('expected an open stage');
    expect(first.sends.filter((s) => s.warmup)).toHaveLength(5);
    expect(first.sends.filter((s) => !s.warmup)).toHaveLength(10);
    expect(plans[1]).toEqual({ stage: 1, kind: 'closed', loadType: 'concurrency', concurrency: 3, count: 7, warmupMs: 0 });
  });

  it('a trace is replayed as given; its intended rate comes from the offsets', () => {
    const plan = planTrace(parseTrace('# offsets\n0\n0.5\n1.0, extra\n\n2\n', 'trace.txt'), 0.2);
    if (plan.kind !== 'open') throw new Error('expected an open stage');
    expect(plan.sends.map((s) => s.offsetMs)).toEqual([0, 500, 1000, 2000]);
    expect(plan.sends.map((s) => s.warmup)).toEqual([true, false, false, false]);
    expect(plan.intendedRate).toBeCloseTo(2 / 1.5);
  });

  it.each([
    ['a negative offset', '0\n-1\n', /trace.txt:2/],
    ['decreasing offsets', '1\n0.5\n', /must not decrease/],
    ['no offsets', '# nothing\n', /no send offsets/],
    // A timer cannot wait this long (Node fires it after 1 ms): refused, never a busy loop.
    ['an offset beyond a day', '0\n1e12\n', /trace.txt:2: offset 1e12 s is out of range \(at most 86400 s/],
    ['an infinite offset', '0\n1e400\n', /trace.txt:2: offset 1e400 s is out of range/],
    ['a hex offset (not a decimal number of seconds)', '0\n0x10\n', /trace.txt:2: expected a send offset in seconds >= 0, got "0x10"/],
    ['Infinity spelled out', 'Infinity\n', /trace.txt:1: expected a send offset/],
  ])('a trace with %s is rejected with its line', (_name, text, message) => {
    expect(() => parseTrace(text, 'trace.txt')).toThrow(message);
  });

  it('a trace may end exactly one day in and write offsets as 1e3', () => {
    expect(parseTrace('0\n1e3\n86400\n', 'trace.txt')).toEqual([0, 1_000_000, 86_400_000]);
  });

  it('sweep stages spread from saturation/n up to saturation', () => {
    const spec = { probeConcurrency: 4, probeRequests: 10, numStages: 4, stageDurationSec: 1, spacing: 'linear' as const };
    expect(sweepRates(40, spec)).toEqual([10, 20, 30, 40]);
    const geometric = sweepRates(40, { ...spec, spacing: 'geometric' });
    expect(geometric[0]).toBeCloseTo(10);
    expect(geometric[3]).toBeCloseTo(40);
    expect((geometric[2] as number) / (geometric[1] as number)).toBeCloseTo((geometric[1] as number) / (geometric[0] as number));
  });

  it("inference-perf's spread: linspace(1, sat, n) and 1 + sat − geomspace(sat, 1, n), to 0.01 (numpy's values)", () => {
    const spec = { probeConcurrency: 4, probeRequests: 10, numStages: 5, stageDurationSec: 1, spacing: 'linear' as const, rates: 'inference-perf' as const };
    expect(sweepRates(10, spec)).toEqual([1, 3.25, 5.5, 7.75, 10]);
    expect(sweepRates(10, { ...spec, spacing: 'geometric' })).toEqual([1, 5.38, 7.84, 9.22, 10]);
    expect(sweepRates(37.3, { ...spec, numStages: 7, spacing: 'geometric' })).toEqual([1, 17.89, 27.14, 32.19, 34.96, 36.47, 37.3]);
    expect(sweepRates(0.5, { ...spec, numStages: 3 })).toEqual([1, 0.75, 0.5]);
    expect(sweepRates(4.42, { ...spec, numStages: 1 })).toEqual([1]);
    // A saturation under 0.005/s would round a stage to 0, which never sends (audit 17-L7).
    expect(sweepRates(0.004, { ...spec, numStages: 3 })).toEqual([1, 0.5, 0.01]);
    expect(sweepRates(0.004, { ...spec, numStages: 3, spacing: 'geometric' }).every((rate) => rate > 0)).toBe(true);
    // On a rounding edge, numpy's arithmetic and numpy's rounding (review 20): 5.725 is 5.72 there.
    expect(sweepRates(7.3, spec)).toEqual([1, 2.58, 4.15, 5.72, 7.3]);
    expect(sweepRates(0.5, spec)).toEqual([1, 0.88, 0.75, 0.62, 0.5]);
    expect(sweepRates(21.895, { ...spec, numStages: 11 }).at(-1)).toBe(21.9);
    expect(sweepRates(36.555, { ...spec, numStages: 6 }).at(-1)).toBe(36.56);
    // geomspace's ends are exactly sat and 1: 1 + 0.045 − 1 rounds to 0.04 there.
    for (const [saturation, last] of [[0.045, 0.04], [0.235, 0.23], [0.365, 0.36], [0.645, 0.64], [0.925, 0.92]] as const) {
      expect(sweepRates(saturation, { ...spec, numStages: 4, spacing: 'geometric' }).at(-1), String(saturation)).toBe(last);
    }
  });

  it('rounds to two decimals as inference-perf’s round(r, 2) on numpy float64 does (values and results from numpy 2)', () => {
    const values = [45.282, 34.313, 38.325, 45.231, 12.991, 31.786, 45.247, 43.607, 28.647, 8.469, 20.576, 49.692, 5.162, 15.957, 47.502, 22.47, 10.433, 15.845, 45.432, 16.778, 21.369, 31.384, 40.279, 24.606, 4.073, 28.66, 1.755, 4.726, 9.517, 34.672, 0.125, 0.375, 0.625, 0.875, 1.125, 1.375, 1.625, 1.875, 2.125, 2.375, 2.625, 2.875, 0.005, 0.015, 0.025, 0.035, 1.005, 2.675, -2.675, -0.125];
    const numpy = [45.28, 34.31, 38.33, 45.23, 12.99, 31.79, 45.25, 43.61, 28.65, 8.47, 20.58, 49.69, 5.16, 15.96, 47.5, 22.47, 10.43, 15.84, 45.43, 16.78, 21.37, 31.38, 40.28, 24.61, 4.07, 28.66, 1.76, 4.73, 9.52, 34.67, 0.12, 0.38, 0.62, 0.88, 1.12, 1.38, 1.62, 1.88, 2.12, 2.38, 2.62, 2.88, 0, 0.02, 0.02, 0.04, 1, 2.68, -2.68, -0.12];
    expect(values.map(roundTwoDecimalsLikeNumpy)).toEqual(numpy);
  });
});
