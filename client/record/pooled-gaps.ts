/**
 * Pooled gaps (inter-chunk and inter-token latencies) of a whole stage: exact raw samples in a
 * typed column while they fit, then — past `EXACT_GAP_LIMIT` samples — a mergeable log-bucket
 * sketch whose quantiles are within ±0.5 % (relative) of the exact ones (DESIGN §5: exact
 * unless a run is too large to keep it). Min, max and count stay exact in both forms; a report
 * says which form it used.
 */
import { distribution, distributionOfSorted, sortedAscending, withZeros, type Distribution } from '../../contracts/stats.ts';
import { GrowableColumn } from './growable-array.ts';

/** 1 Mi gaps = 8 MiB of exact samples per stage before the sketch takes over. */
export const EXACT_GAP_LIMIT = 1024 * 1024;
/** Relative accuracy of the sketch's quantiles. */
export const SKETCH_RELATIVE_ERROR = 0.005;
const GAMMA = (1 + SKETCH_RELATIVE_ERROR) / (1 - SKETCH_RELATIVE_ERROR);
const LOG_GAMMA = Math.log(GAMMA);

export interface PooledGapsJson {
  exact: number[] | null;
  /** Sketch buckets as [index, count] (value ≈ 2γ^i / (γ + 1)); zeros counted apart. */
  sketch: {
    zeros: number;
    buckets: Array<[number, number]>;
    /** The gaps' mean and their sum of squared deviations from it (files before session 24 have only sum and sumSquares). */
    mean?: number;
    m2?: number;
    sum: number;
    sumSquares: number;
    min: number | null;
    max: number | null;
    count: number;
  } | null;
}

/**
 * Count, mean and sum of squared deviations of two parts as one (Chan et al.'s pairwise update):
 * no difference of large sums, so a nearly constant gap keeps its sd where Σx²/n − mean² loses
 * every digit (20 ms ± 10 ns gave 0).
 */
function combineMoments(a: { count: number; mean: number; m2: number }, count: number, mean: number, m2: number): void {
  const total = a.count + count;
  if (total === 0) return;
  const delta = mean - a.mean;
  a.mean += (delta * count) / total;
  a.m2 += m2 + (delta * delta * a.count * count) / total;
  a.count = total;
}

class GapSketch {
  zeros = 0;
  readonly buckets = new Map<number, number>();
  mean = 0;
  m2 = 0;
  min = Infinity;
  max = -Infinity;
  count = 0;

  add(value: number, times = 1): void {
    combineMoments(this, times, value, 0);
    if (value < this.min) this.min = value;
    if (value > this.max) this.max = value;
    if (value <= 0) {
      this.zeros += times;
      return;
    }
    const index = Math.ceil(Math.log(value) / LOG_GAMMA);
    this.buckets.set(index, (this.buckets.get(index) ?? 0) + times);
  }

  absorb(other: GapSketch): void {
    this.zeros += other.zeros;
    for (const [index, count] of other.buckets) this.buckets.set(index, (this.buckets.get(index) ?? 0) + count);
    combineMoments(this, other.count, other.mean, other.m2);
    this.min = Math.min(this.min, other.min);
    this.max = Math.max(this.max, other.max);
  }

  /** The value of 0-based rank `rank` in ascending order, after `leadingZeros` extra zeros. */
  valueAtRank(rank: number, sorted: Array<[number, number]>, leadingZeros: number): number {
    let remaining = rank - leadingZeros - this.zeros;
    if (remaining < 0) return 0;
    for (const [index, count] of sorted) {
      if (remaining < count) return Math.min(this.max, Math.max(this.min, (2 * Math.pow(GAMMA, index)) / (GAMMA + 1)));
      remaining -= count;
    }
    return this.max;
  }
}

export class PooledGaps {
  #exact: GrowableColumn | null = new GrowableColumn(256);
  #sketch: GapSketch | null = null;
  readonly #limit: number;

  /** `limit`: how many exact samples to keep before switching to the sketch. */
  constructor(limit = EXACT_GAP_LIMIT) {
    this.#limit = limit;
  }

  get count(): number {
    return this.#exact?.length ?? this.#sketch?.count ?? 0;
  }

  get isExact(): boolean {
    return this.#exact !== null;
  }

  get retainedBytes(): number {
    return this.#exact?.retainedBytes ?? (this.#sketch?.buckets.size ?? 0) * 40;
  }

  trim(): void {
    this.#exact?.trim();
  }

  push(gap: number): void {
    if (this.#exact !== null) {
      this.#exact.push(gap);
      if (this.#exact.length > this.#limit) this.#toSketch();
    } else this.#sketch?.add(gap);
  }

  absorb(other: PooledGaps): void {
    if (this.#exact !== null && other.#exact !== null) {
      this.#exact.append(other.#exact.view());
      if (this.#exact.length > this.#limit) this.#toSketch();
      return;
    }
    this.#toSketch();
    const sketch = this.#sketch as GapSketch;
    if (other.#exact !== null) for (const gap of other.#exact.view()) sketch.add(gap);
    else if (other.#sketch !== null) sketch.absorb(other.#sketch);
  }

  #toSketch(): void {
    if (this.#exact === null) return;
    const sketch = new GapSketch();
    for (const gap of this.#exact.view()) sketch.add(gap);
    this.#sketch = sketch;
    this.#exact = null;
  }

  /**
   * The distribution of these gaps plus `extraZeros` exact zeros (ITL's gaps inside a
   * multi-token event). Exact: numpy's own arithmetic; sketch: the same interpolation between
   * ranks over bucket values.
   */
  distribution(extraZeros = 0, extraPercentiles: readonly number[] = []): Distribution {
    if (this.#exact !== null) {
      const gaps = this.#exact.view();
      if (extraZeros === 0) return distribution(gaps, extraPercentiles);
      // The zeros are counted, never laid out: a stage of long one-body answers has millions.
      return distributionOfSorted(withZeros(sortedAscending(gaps), extraZeros), extraPercentiles);
    }
    const sketch = this.#sketch as GapSketch;
    const n = sketch.count + extraZeros;
    if (n === 0) return { mean: null, min: null, max: null, sd: null, p10: null, p50: null, p90: null, p99: null };
    const sorted = [...sketch.buckets.entries()].sort((a, b) => a[0] - b[0]);
    const at = (p: number): number => {
      const position = ((n - 1) * p) / 100;
      const lower = Math.floor(position);
      const lo = sketch.valueAtRank(lower, sorted, extraZeros);
      const hi = sketch.valueAtRank(Math.min(lower + 1, n - 1), sorted, extraZeros);
      return lo + (hi - lo) * (position - lower);
    };
    const min = extraZeros > 0 ? Math.min(0, sketch.min) : sketch.min;
    const max = extraZeros > 0 ? Math.max(0, sketch.max) : sketch.max;
    // The running moments with the extra zeros as one more part; the mean kept within [min, max]
    // and the sd within half the range (no sample's population sd exceeds it), against rounding.
    const moments = { count: sketch.count, mean: sketch.mean, m2: sketch.m2 };
    combineMoments(moments, extraZeros, 0, 0);
    const mean = Math.min(max, Math.max(min, moments.mean));
    return {
      ...(extraPercentiles.length === 0 ? {} : { extra: extraPercentiles.map((p): [number, number] => [p, at(p)]) }),
      mean,
      min,
      max,
      sd: Math.min((max - min) / 2, Math.sqrt(Math.max(0, moments.m2 / n))),
      p10: at(10),
      p50: at(50),
      p90: at(90),
      p99: at(99),
    };
  }

  toJSON(): PooledGapsJson {
    if (this.#exact !== null) return { exact: Array.from(this.#exact.view()), sketch: null };
    const s = this.#sketch as GapSketch;
    // sum and sumSquares too, for readers of the older form.
    const sum = s.mean * s.count;
    return { exact: null, sketch: { zeros: s.zeros, buckets: [...s.buckets.entries()].sort((a, b) => a[0] - b[0]), mean: s.mean, m2: s.m2, sum, sumSquares: s.m2 + s.mean * sum, min: s.min, max: s.max, count: s.count } };
  }

  static fromJSON(json: PooledGapsJson): PooledGaps {
    const gaps = new PooledGaps();
    if (json.exact !== null) {
      gaps.#exact?.append(json.exact);
      return gaps;
    }
    if (json.sketch === null) return gaps;
    const sketch = new GapSketch();
    sketch.zeros = json.sketch.zeros;
    for (const [index, count] of json.sketch.buckets) sketch.buckets.set(index, count);
    // JSON writes an empty sketch's ±Infinity extremes as null.
    const { count, sum, sumSquares } = json.sketch;
    // The older form kept only the running sums: its moments as well as they can be read back.
    const mean = json.sketch.mean ?? (count > 0 ? sum / count : 0);
    const m2 = json.sketch.m2 ?? Math.max(0, sumSquares - mean * sum);
    Object.assign(sketch, { mean, m2, min: json.sketch.min ?? Infinity, max: json.sketch.max ?? -Infinity, count });
    gaps.#exact = null;
    gaps.#sketch = sketch;
    return gaps;
  }
}
