/**
 * The one statistics module (DESIGN §5): exact over the full sample, population standard
 * deviation, numpy's default linear-interpolation percentiles. Empty samples give null.
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
 * `sorted` must be ascending.
 */
export function percentileOfSorted(sorted: ArrayLike<number>, p: number): number | null {
  return percentileAt(sorted.length, (rank) => sorted[rank] as number, p);
}

/** percentileOfSorted over a sorted sample read by rank (`at`), of `n` values. */
function percentileAt(n: number, at: (rank: number) => number, p: number): number | null {
  if (n === 0) return null;
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile must be within [0, 100], got ${p}`);
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

export function mean(values: ArrayLike<number>): number | null {
  const n = values.length;
  if (n === 0) return null;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += values[i] as number;
  return sum / n;
}

/** Population standard deviation (ddof = 0), two-pass for accuracy. */
export function populationSd(values: ArrayLike<number>): number | null {
  const m = mean(values);
  if (m === null) return null;
  let squares = 0;
  for (let i = 0; i < values.length; i++) {
    const d = (values[i] as number) - m;
    squares += d * d;
  }
  return Math.sqrt(squares / values.length);
}

/**
 * A sorted sample that is never laid out value by value: a few sorted runs (k zeros in front of
 * sorted gaps, or (value, count) pairs). `at(rank)` reads one value; `forEach` visits every
 * value in ascending order, so sums take the same steps as over the expanded array.
 */
export interface SortedSample {
  readonly length: number;
  at(rank: number): number;
  forEach(visit: (value: number) => void): void;
}

/** `counts` (value → how many times) as a sorted sample. */
export function countedSample(counts: ReadonlyMap<number, number>): SortedSample {
  const runs = [...counts].filter(([, count]) => count > 0).sort((a, b) => a[0] - b[0]);
  const ends: number[] = [];
  let length = 0;
  for (const [, count] of runs) ends.push((length += count));
  return {
    length,
    at(rank) {
      let lo = 0;
      let hi = ends.length - 1;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if ((ends[mid] as number) > rank) hi = mid;
        else lo = mid + 1;
      }
      return (runs[lo] as [number, number])[0];
    },
    forEach(visit) {
      for (const [value, count] of runs) for (let i = 0; i < count; i++) visit(value);
    },
  };
}

/** `zeros` zeros merged into `sorted` (ascending) as a sorted sample. */
export function withZeros(sorted: ArrayLike<number>, zeros: number): SortedSample {
  // The zeros go after every negative value, so the sample stays ascending.
  let negatives = 0;
  while (negatives < sorted.length && (sorted[negatives] as number) < 0) negatives++;
  return {
    length: sorted.length + zeros,
    at: (rank) => (rank < negatives ? (sorted[rank] as number) : rank < negatives + zeros ? 0 : (sorted[rank - zeros] as number)),
    forEach(visit) {
      for (let i = 0; i < negatives; i++) visit(sorted[i] as number);
      for (let i = 0; i < zeros; i++) visit(0);
      for (let i = negatives; i < sorted.length; i++) visit(sorted[i] as number);
    },
  };
}

/** distribution() of a sorted sample: the same values, to the last bit, with nothing expanded. */
export function distributionOfSorted(sample: SortedSample, extraPercentiles: readonly number[] = []): Distribution {
  const n = sample.length;
  const at = sample.at;
  const extra = extraPercentiles.length === 0 ? {} : { extra: extraPercentiles.map((p): [number, number | null] => [p, percentileAt(n, at, p)]) };
  if (n === 0) return { ...extra, mean: null, min: null, max: null, sd: null, p10: null, p50: null, p90: null, p99: null };
  let sum = 0;
  sample.forEach((value) => (sum += value));
  const m = sum / n;
  let squares = 0;
  sample.forEach((value) => {
    const d = value - m;
    squares += d * d;
  });
  return {
    ...extra,
    mean: m,
    min: at(0),
    max: at(n - 1),
    sd: Math.sqrt(squares / n),
    p10: percentileAt(n, at, 10),
    p50: percentileAt(n, at, 50),
    p90: percentileAt(n, at, 90),
    p99: percentileAt(n, at, 99),
  };
}

/** An ascending array as a sorted sample. */
function arraySample(sorted: ArrayLike<number>): SortedSample {
  return {
    length: sorted.length,
    at: (rank) => sorted[rank] as number,
    forEach(visit) {
      for (let i = 0; i < sorted.length; i++) visit(sorted[i] as number);
    },
  };
}

export function distribution(values: ArrayLike<number>, extraPercentiles: readonly number[] = []): Distribution {
  return distributionOfSorted(arraySample(sortedAscending(values)), extraPercentiles);
}
