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
  const n = sorted.length;
  if (n === 0) return null;
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile must be within [0, 100], got ${p}`);
  // The same float operations as numpy's method="linear", which computes the virtual index as
  // (n - 1) * q (not via _compute_virtual_index(n, q, 1, 1): mathematically equal, but it rounds
  // differently), so that results agree to the last bit rather than only to rounding.
  const q = p / 100;
  const position = (n - 1) * q;
  const lower = Math.min(Math.max(Math.floor(position), 0), n - 1);
  const upper = Math.min(lower + 1, n - 1);
  const lo = sorted[lower] as number;
  const hi = sorted[upper] as number;
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

export function distribution(values: ArrayLike<number>, extraPercentiles: readonly number[] = []): Distribution {
  const sorted = sortedAscending(values);
  const n = sorted.length;
  const extra = extraPercentiles.length === 0 ? {} : { extra: extraPercentiles.map((p): [number, number | null] => [p, percentileOfSorted(sorted, p)]) };
  return {
    ...extra,
    mean: mean(sorted),
    min: n === 0 ? null : (sorted[0] as number),
    max: n === 0 ? null : (sorted[n - 1] as number),
    sd: populationSd(sorted),
    p10: percentileOfSorted(sorted, 10),
    p50: percentileOfSorted(sorted, 50),
    p90: percentileOfSorted(sorted, 90),
    p99: percentileOfSorted(sorted, 99),
  };
}
