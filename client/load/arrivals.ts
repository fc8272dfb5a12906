/**
 * Send offsets of an open-loop stage, pure from (rate, count, process, seeded stream):
 * constant spacing, Poisson (exponential gaps) or gamma gaps with a burstiness factor as
 * `vllm bench serve` defines it (shape = burstiness, mean gap = 1 / rate; burstiness 1 is
 * Poisson, < 1 burstier, > 1 more even). The first send is at offset 0 and the schedule is
 * absolute: a late send never pushes later ones back.
 */
import type { Rng } from '../../contracts/rng.ts';

export type ArrivalProcess = { kind: 'constant' } | { kind: 'poisson' } | { kind: 'gamma'; burstiness: number };

export function arrivalOffsetsMs(ratePerSec: number, count: number, process: ArrivalProcess, rng: Rng): Float64Array {
  if (!(ratePerSec > 0)) throw new RangeError(`rate must be > 0 requests/s, got ${ratePerSec}`);
  const meanGapMs = 1000 / ratePerSec;
  const offsets = new Float64Array(count);
  if (process.kind === 'constant') {
    for (let i = 0; i < count; i++) offsets[i] = (i * 1000) / ratePerSec;
    return offsets;
  }
  if (process.kind === 'gamma' && !(process.burstiness > 0)) throw new RangeError(`burstiness must be > 0, got ${process.burstiness}`);
  let at = 0;
  for (let i = 0; i < count; i++) {
    offsets[i] = at;
    at += process.kind === 'poisson' ? rng.exponential(meanGapMs) : rng.gamma(process.burstiness, meanGapMs / process.burstiness);
  }
  return offsets;
}

/** Requests in `seconds` at `rate` (a stage always sends at least one). */
export function requestsIn(ratePerSec: number, seconds: number): number {
  return Math.floor(ratePerSec * seconds + 1e-9);
}
