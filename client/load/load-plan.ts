/**
 * Load shapes → stage plans the executor runs one after another (each stage drains before the
 * next starts, as inference-perf does, so every stage's numbers are its own). Pure.
 */
import { Rng } from '../../contracts/rng.ts';
import { decimalNumber } from '../../contracts/cli-error.ts';
import { arrivalOffsetsMs, requestsIn, type ArrivalProcess } from './arrivals.ts';

export interface RateStageSpec {
  kind: 'rate';
  rate: number;
  durationSec: number;
}

export interface ConcurrencyStageSpec {
  kind: 'concurrency';
  concurrency: number;
  /** Measured requests to complete in this stage (warm-up ones come on top). */
  count: number;
}

export type StageSpec = RateStageSpec | ConcurrencyStageSpec;

export interface SweepSpec {
  /** Closed-loop probe at this concurrency finds the saturation rate. */
  probeConcurrency: number;
  probeRequests: number;
  numStages: number;
  stageDurationSec: number;
  spacing: 'linear' | 'geometric';
  /**
   * How the stage rates spread up to saturation: ours from saturation/N (default), or
   * inference-perf's from 1 req/s (linear: linspace(1, sat, N); geometric: 1 + sat −
   * geomspace(sat, 1, N); each rounded to 0.01, as its load generator does).
   */
  rates?: 'benchtruth' | 'inference-perf';
}

export type LoadSpec =
  | { type: 'stages'; arrival: ArrivalProcess; stages: StageSpec[]; warmupSec: number }
  | { type: 'trace'; offsetsMs: number[]; warmupSec: number }
  | { type: 'sweep'; arrival: ArrivalProcess; sweep: SweepSpec; warmupSec: number };

export interface PlannedSend {
  offsetMs: number;
  warmup: boolean;
}

export type StagePlan =
  | { stage: number; kind: 'open'; loadType: string; intendedRate: number | null; sends: PlannedSend[] }
  | { stage: number; kind: 'closed'; loadType: 'concurrency'; concurrency: number; count: number; warmupMs: number };

function openStage(stage: number, loadType: string, rate: number, durationSec: number, warmupSec: number, arrival: ArrivalProcess, rng: Rng): StagePlan {
  const warmups = requestsIn(rate, warmupSec);
  const measured = Math.max(1, requestsIn(rate, durationSec));
  const offsets = arrivalOffsetsMs(rate, warmups + measured, arrival, rng.derive(`stage-${stage}`));
  const sends: PlannedSend[] = new Array(offsets.length);
  for (let i = 0; i < offsets.length; i++) sends[i] = { offsetMs: offsets[i] as number, warmup: i < warmups };
  return { stage, kind: 'open', loadType, intendedRate: rate, sends };
}

/** Plans of a list of stages; warm-up belongs to the first stage only. */
export function planStages(stages: readonly StageSpec[], arrival: ArrivalProcess, warmupSec: number, seed: number, firstStage = 0): StagePlan[] {
  const rng = new Rng(seed).derive('load');
  return stages.map((spec, i) => {
    const stage = firstStage + i;
    const warm = i === 0 ? warmupSec : 0;
    if (spec.kind === 'rate') return openStage(stage, arrival.kind, spec.rate, spec.durationSec, warm, arrival, rng);
    return { stage, kind: 'closed', loadType: 'concurrency', concurrency: spec.concurrency, count: spec.count, warmupMs: warm * 1000 };
  });
}

/** A trace of send offsets is one open-loop stage; sends before the warm-up mark are warm-up. */
export function planTrace(offsetsMs: readonly number[], warmupSec: number): StagePlan {
  const sends = offsetsMs.map((offsetMs) => ({ offsetMs, warmup: offsetMs < warmupSec * 1000 }));
  const measured = sends.filter((s) => !s.warmup);
  const first = measured[0];
  const last = measured[measured.length - 1];
  const spanSec = first !== undefined && last !== undefined ? (last.offsetMs - first.offsetMs) / 1000 : 0;
  return { stage: 0, kind: 'open', loadType: 'trace', intendedRate: spanSec > 0 ? (measured.length - 1) / spanSec : null, sends };
}

/** The probe of a sweep: a closed loop whose throughput is taken as the saturation rate. */
export function sweepProbe(sweep: SweepSpec): StagePlan {
  return { stage: -1, kind: 'closed', loadType: 'concurrency', concurrency: sweep.probeConcurrency, count: sweep.probeRequests, warmupMs: 0 };
}

/**
 * inference-perf's round(r, 2) on numpy's float64 (its rates come from np.linspace and
 * np.geomspace): numpy rounds the product, x · 100 to the nearest integer, ties to even, then
 * divides; not Python's round of the double's exact value (2.675 is 2.68 here, 2.67 there).
 */
export function roundTwoDecimalsLikeNumpy(x: number): number {
  const scaled = x * 100;
  const below = Math.floor(scaled);
  const above = scaled - below;
  return (above > 0.5 || (above === 0.5 && below % 2 !== 0) ? below + 1 : below) / 100;
}

/** Rates of a sweep's stages, from saturation / numStages up to saturation. */
export function sweepRates(saturationRate: number, sweep: SweepSpec): number[] {
  const n = sweep.numStages;
  if (sweep.rates === 'inference-perf') {
    const t = (i: number): number => (n === 1 ? 0 : i / (n - 1));
    // numpy's linspace(1, sat, n) in its own arithmetic (i · step + start, the last exactly
    // stop) and numpy's rounding, so a rate on a rounding edge rounds as inference-perf's does.
    const linear = (i: number): number => (n === 1 ? 1 : i === n - 1 ? saturationRate : i * ((saturationRate - 1) / (n - 1)) + 1);
    // numpy's geomspace(sat, 1, n) sets its ends to exactly sat and 1.
    const geometric = (i: number): number => (i === 0 ? saturationRate : i === n - 1 ? 1 : saturationRate * Math.pow(1 / saturationRate, t(i)));
    // Its two decimals; a saturation under 0.005 requests/s would round a stage to 0, which
    // sends nothing for ever: the least such a stage runs at is 0.01.
    const round = (rate: number): number => Math.max(0.01, roundTwoDecimalsLikeNumpy(rate));
    return Array.from({ length: n }, (_, i) =>
      // geomspace(sat, 1, n)[i] = sat · (1/sat)^t; numpy's linspace(1, sat, 1) is [1].
      round(sweep.spacing === 'linear' ? linear(i) : 1 + saturationRate - geometric(i)),
    );
  }
  const low = saturationRate / n;
  const rates: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = n === 1 ? 1 : i / (n - 1);
    rates.push(sweep.spacing === 'linear' ? low + (saturationRate - low) * t : low * Math.pow(saturationRate / low, t));
  }
  return rates;
}

/** The latest send offset a trace may hold: one day (the longest client duration; Node's timers end at 24.8 days). */
export const MAX_TRACE_OFFSET_SEC = 86_400;

/** Parses a trace file: one send offset in seconds per line (first CSV/space column); `#` comments. */
export function parseTrace(text: string, source: string): number[] {
  const offsets: number[] = [];
  let previous = -Infinity;
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.replace(/#.*/, '').trim();
    if (line === '') return;
    const first = line.split(/[,\s]+/)[0] ?? '';
    // A plain decimal number of seconds: `12`, `0.5`, `.5`, `1e3` (no sign, no hex, no Infinity).
    const seconds = /^[+-]/.test(first) ? Number.NaN : decimalNumber(first);
    if (Number.isNaN(seconds)) throw new RangeError(`${source}:${i + 1}: expected a send offset in seconds >= 0, got ${JSON.stringify(first)}`);
    if (!(seconds <= MAX_TRACE_OFFSET_SEC)) throw new RangeError(`${source}:${i + 1}: offset ${first} s is out of range (at most ${MAX_TRACE_OFFSET_SEC} s, one day)`);
    if (seconds < previous) throw new RangeError(`${source}:${i + 1}: offsets must not decrease (${seconds} after ${previous})`);
    previous = seconds;
    offsets.push(seconds * 1000);
  });
  if (offsets.length === 0) throw new RangeError(`${source}: the trace holds no send offsets`);
  return offsets;
}
