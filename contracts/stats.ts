/**
 * The one statistics module (DESIGN §5): exact over the full sample, population standard
 * deviation, numpy's default linear-interpolation percentiles. Empty samples give null; a
 * sample holding a NaN gives NaN for every figure, as numpy's percentile, min, max, mean and
 * std do (never some figures computed around it).
 */

export interface Distribution {
  mean: number | null;
  min: number | null;
  max: number | null;
  sd: number | null;
  p10: number | null;
  p50: number | null;
  p90: number | null;
  p99: number | null;
  /** Further percentiles asked for, `[p, value]` in the order asked (absent when none were). */
  extra?: ReadonlyArray<readonly [p: number, value: number | null]>;
}

/** Sorted copy in ascending numeric order (never the default string sort). */
export function sortedAscending(values: ArrayLike<number>): Float64Array {
  const copy = Float64Array.from(values as ArrayLike<number>);
  copy.sort();
  return copy;
}

/**
 * numpy.percentile(x, p) with method="linear": position (n-1)·p/100 between closest ranks.
 * `sorted` must be ascending as sortedAscending orders it (a NaN last, where it is found).
 */
export function percentileOfSorted(sorted: ArrayLike<number>, p: number): number | null {
  const n = sorted.length;
  if (n > 0 && Number.isNaN(sorted[n - 1])) return checkedPercentile(p, Number.NaN);
  return percentileAt(n, (rank) => sorted[rank] as number, p);
}

/** `value`, once `p` is known to be a percentile (a bad p is refused whatever the sample). */
function checkedPercentile(p: number, value: number): number {
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile must be within [0, 100], got ${p}`);
  return value;
}

/** percentileOfSorted over a sorted sample read by rank (`at`), of `n` values. */
function percentileAt(n: number, at: (rank: number) => number, p: number): number | null {
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile must be within [0, 100], got ${p}`);
  if (n === 0) return null;
  // The same float operations as numpy's method="linear", which computes the virtual index as
  // (n - 1) * q (not via _compute_virtual_index(n, q, 1, 1): mathematically equal, but it rounds
  // differently), so that results agree to the last bit rather than only to rounding.
  const q = p / 100;
  const position = (n - 1) * q;
  const lower = Math.min(Math.max(Math.floor(position), 0), n - 1);
  const upper = Math.min(lower + 1, n - 1);
  const lo = at(lower);
  const hi = at(upper);
  const fraction = position - lower;
  // numpy's _lerp: exact at both ends, symmetric formula chosen by which end is nearer.
  const diff = hi - lo;
  return fraction >= 0.5 ? hi - diff * (1 - fraction) : lo + diff * fraction;
}

export function percentile(values: ArrayLike<number>, p: number): number | null {
  return percentileOfSorted(sortedAscending(values), p);
}

/** The mean, computed as distribution() computes it (in input order, so it may differ in the last bit). */
export function mean(values: ArrayLike<number>): number | null {
  return momentsOfValues(values)?.mean ?? null;
}

/** The population standard deviation (ddof = 0), computed as distribution() computes it. */
export function populationSd(values: ArrayLike<number>): number | null {
  return momentsOfValues(values)?.sd ?? null;
}

function momentsOfValues(values: ArrayLike<number>): { mean: number; sd: number } | null {
  const n = values.length;
  if (n === 0) return null;
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < n; i++) {
    const v = values[i] as number;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  return momentsOf([{ values, from: 0, to: n }], n, min, max);
}

/**
 * A compensated (Neumaier) running sum: exact to within a rounding or two whatever the count or
 * the spread of magnitudes, where a plain sum of 1e5 values drifts by thousands of ulps.
 */
class CompensatedSum {
  #sum = 0;
  #carry = 0;

  add(x: number): void {
    const t = this.#sum + x;
    // Past the float range the sum is ±Infinity and stays so (a carry of Infinity − Infinity
    // would turn it into NaN).
    if (Number.isFinite(t)) this.#carry += Math.abs(this.#sum) >= Math.abs(x) ? this.#sum - t + x : x - t + this.#sum;
    this.#sum = t;
  }

  get value(): number {
    return this.#sum + this.#carry;
  }
}

/**
 * Mean and population sd of `n` > 0 values, computed about an offset: the smallest value when
 * all lie on one side of 0, so data far from 0 (epoch stamps, 1e9 + noise) keeps its small
 * differences instead of losing them to the offset; 0 when they straddle it, where there is no
 * common offset to remove and subtracting one would round every value at its scale. Both passes
 * sum with compensation, so the figures agree with the exact ones to about 1e-15 relative. The
 * mean stays within [min, max] (a constant sample's is that value).
 */
function momentsOf(sample: SortedSample, n: number, min: number, max: number): { mean: number; sd: number } {
  const shift = min <= 0 && max >= 0 ? 0 : Number.isFinite(min) ? min : 0;
  const offsets = new CompensatedSum();
  for (const segment of sample) {
    if ('values' in segment) for (let i = segment.from; i < segment.to; i++) offsets.add((segment.values[i] as number) - shift);
    else for (let i = 0; i < segment.count; i++) offsets.add(segment.value - shift);
  }
  const meanOffset = offsets.value / n;
  const squares = new CompensatedSum();
  for (const segment of sample) {
    if ('values' in segment) {
      for (let i = segment.from; i < segment.to; i++) {
        const d = (segment.values[i] as number) - shift - meanOffset;
        squares.add(d * d);
      }
    } else {
      const d = segment.value - shift - meanOffset;
      for (let i = 0; i < segment.count; i++) squares.add(d * d);
    }
  }
  const m = shift + meanOffset;
  return { mean: Number.isNaN(m) ? m : Math.min(max, Math.max(min, m)), sd: Math.sqrt(squares.value / n) };
}

/**
 * A sorted sample that is never laid out value by value: ascending segments, each a slice of a
 * sorted array or a run of one value repeated (k zeros in front of sorted gaps; (value, count)
 * pairs). Sums walk the segments in order, so they take the same steps as over the expanded
 * array, in plain loops.
 */
export type SortedSample = ReadonlyArray<{ readonly values: ArrayLike<number>; readonly from: number; readonly to: number } | { readonly value: number; readonly count: number }>;

/** `counts` (value → how many times) as a sorted sample. */
export function countedSample(counts: ReadonlyMap<number, number>): SortedSample {
  return [...counts]
    .filter(([, count]) => count > 0)
    .sort((a, b) => a[0] - b[0])
    .map(([value, count]) => ({ value, count }));
}

/** `zeros` zeros merged into `sorted` (ascending) as a sorted sample. */
export function withZeros(sorted: ArrayLike<number>, zeros: number): SortedSample {
  // The zeros go after every negative value, so the sample stays ascending.
  let negatives = 0;
  while (negatives < sorted.length && (sorted[negatives] as number) < 0) negatives++;
  return [
    { values: sorted, from: 0, to: negatives },
    { value: 0, count: zeros },
    { values: sorted, from: negatives, to: sorted.length },
  ];
}

const segmentLength = (segment: SortedSample[number]): number => ('values' in segment ? segment.to - segment.from : segment.count);

/** A NaN in the sample: a slice of a sortedAscending array holds its NaNs last; a run may be of NaN. */
function holdsNaN(sample: SortedSample): boolean {
  for (const segment of sample) {
    if ('values' in segment ? segment.to > segment.from && Number.isNaN(segment.values[segment.to - 1]) : segment.count > 0 && Number.isNaN(segment.value)) return true;
  }
  return false;
}

/** distribution() of a sorted sample: the same values, to the last bit, with nothing expanded. */
export function distributionOfSorted(sample: SortedSample, extraPercentiles: readonly number[] = []): Distribution {
  let n = 0;
  for (const segment of sample) n += segmentLength(segment);
  const at = (rank: number): number => {
    let rest = rank;
    for (const segment of sample) {
      const length = segmentLength(segment);
      if (rest < length) return 'values' in segment ? (segment.values[segment.from + rest] as number) : segment.value;
      rest -= length;
    }
    throw new RangeError(`rank ${rank} is outside a sample of ${n}`);
  };
  if (n > 0 && holdsNaN(sample)) {
    const extra = extraPercentiles.length === 0 ? {} : { extra: extraPercentiles.map((p): [number, number] => [p, checkedPercentile(p, Number.NaN)]) };
    return { ...extra, mean: NaN, min: NaN, max: NaN, sd: NaN, p10: NaN, p50: NaN, p90: NaN, p99: NaN };
  }
  const extra = extraPercentiles.length === 0 ? {} : { extra: extraPercentiles.map((p): [number, number | null] => [p, percentileAt(n, at, p)]) };
  if (n === 0) return { ...extra, mean: null, min: null, max: null, sd: null, p10: null, p50: null, p90: null, p99: null };
  const min = at(0);
  const max = at(n - 1);
  const { mean: m, sd } = momentsOf(sample, n, min, max);
  return {
    ...extra,
    mean: m,
    min,
    max,
    sd,
    p10: percentileAt(n, at, 10),
    p50: percentileAt(n, at, 50),
    p90: percentileAt(n, at, 90),
    p99: percentileAt(n, at, 99),
  };
}

export function distribution(values: ArrayLike<number>, extraPercentiles: readonly number[] = []): Distribution {
  const sorted = sortedAscending(values);
  return distributionOfSorted([{ values: sorted, from: 0, to: sorted.length }], extraPercentiles);
}
