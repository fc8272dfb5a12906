/**
 * --time-factor-under-load as llm-d-inference-sim computes it (latencies.go): the factor scales
 * the mean of every sampled duration, never its spread, and is 1 with --max-num-seqs 1.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../contracts/rng.ts';
import { mean, populationSd } from '../../../contracts/stats.ts';
import { loadFactor, simpleTiming, tokenDueTimes, type TimingModel } from '../../../server/engine/timing.ts';

describe('load factor (llm-d-inference-sim getCurrLoadFactor)', () => {
  it('is 1 with --max-num-seqs 1, however many requests run', () => {
    expect(loadFactor({ timeFactorUnderLoad: 3, maxNumSeqs: 1 }, 2)).toBe(1);
    expect(loadFactor({ timeFactorUnderLoad: 3, maxNumSeqs: 1 }, 5)).toBe(1);
    expect(loadFactor({ timeFactorUnderLoad: 3, maxNumSeqs: 2 }, 2)).toBe(3);
  });

  it('isolated: ITL 10 ± 2 ms at factor 3 gives gaps of mean 30 and spread 2, not 6 (s15)', () => {
    const model: TimingModel = { ...simpleTiming(10, 10), itl: { kind: 'normal', meanMs: 10, spreadMs: 2 }, timeFactorUnderLoad: 3, maxNumSeqs: 2 };
    const due = tokenDueTimes(new Rng(5), 2000, model, { promptTokens: 1, running: 2 });
    const gaps = Array.from(due.subarray(1), (t, i) => t - (due[i] as number));
    expect(mean(gaps)).toBeCloseTo(30, 0);
    const sd = populationSd(gaps) as number;
    expect(sd).toBeGreaterThan(1.8);
    expect(sd).toBeLessThan(2.2);
  });

  it('isolated: the prefill time’s mean is scaled, its spread kept', () => {
    const model: TimingModel = { ...simpleTiming(0, 10), prefillOverheadMs: 10, prefillPerTokenMs: 1, prefillSpreadMs: 5, ttft: { kind: 'normal', meanMs: 0, spreadMs: 0 }, timeFactorUnderLoad: 2, maxNumSeqs: 2 };
    const firsts = Array.from({ length: 2000 }, (_, i) => tokenDueTimes(new Rng(100 + i), 1, model, { promptTokens: 40, running: 2 })[0] as number);
    expect(mean(firsts)).toBeCloseTo(100, 0);
    const sd = populationSd(firsts) as number;
    expect(sd).toBeGreaterThan(4.5);
    expect(sd).toBeLessThan(5.5);
  });
});
