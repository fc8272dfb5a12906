/**
 * Summaries of a series of Prometheus scrapes over one stage. Gauges: the distribution of the
 * scraped values (mean, median, sd, min, max, p90, p99). Counters: the increase and its rate.
 * Histograms: what happened *during* the stage, from the differences between its consecutive
 * scrapes — mean = Δsum/Δcount, quantiles by linear interpolation inside the bucket (as PromQL's
 * histogram_quantile does). A value that went down between two scrapes is a reset (the server
 * restarted): as Prometheus's increase() reads it, the new value is what accrued since. Several
 * stages' scrapes are summarised as segments: their changes add up, and no change is taken
 * across the stages between them. Pure.
 */
import { distribution } from '../../contracts/stats.ts';
import { nextTurn, seriesKey, type MetricFamily, type PromSample } from './prometheus-text.ts';

export interface Scrape {
  atEpochMs: number;
  families: Map<string, MetricFamily>;
}

/** inference-perf's gauge statistics (and the latency profile generator's summary stats). */
export interface StatsBlock {
  mean: number | null;
  median: number | null;
  sd: number | null;
  min: number | null;
  max: number | null;
  p90: number | null;
  p99: number | null;
}

export interface GaugeSummary extends StatsBlock {
  samples: number;
}

/** One sort for all of them (contracts/stats.ts). */
export function statsBlock(values: ArrayLike<number>): StatsBlock {
  const d = distribution(values);
  return { mean: d.mean, median: d.p50, sd: d.sd, min: d.min, max: d.max, p90: d.p90, p99: d.p99 };
}

export interface CounterSummary {
  increase: number;
  rate_per_sec: number | null;
}

export interface HistogramSummary {
  count: number;
  sum: number;
  mean: number | null;
  median: number | null;
  p90: number | null;
  p99: number | null;
  /**
   * The lower bound of the first and the upper bound of the last non-empty bucket (what the
   * histogram can say of its extremes; PromQL's histogram_quantile(0) gives 0, or NaN).
   */
  min?: number | null;
  max?: number | null;
}

export interface ServerMetricsSummary {
  scrapes: number;
  /** Scrapes of these stages that failed (no answer, not Prometheus text): fewer scrapes, a shorter window. */
  failed_scrapes?: number;
  window_sec: number | null;
  gauges: Record<string, GaugeSummary>;
  counters: Record<string, CounterSummary>;
  histograms: Record<string, HistogramSummary>;
}

/**
 * Cumulative buckets (upper bound ascending, the last +Inf) → the q-quantile, or null when empty
 * or without the +Inf bucket (PromQL's NaN).
 * Counts that go down from one bucket to the next (buckets scraped at slightly different
 * moments, a layout that changed) are raised to the one before, as PromQL's ensureMonotonic does.
 */
export function bucketQuantile(q: number, buckets: ReadonlyArray<{ le: number; count: number }>): number | null {
  let total = 0;
  for (const { count } of buckets) if (count > total) total = count;
  // Without its +Inf bucket a histogram has no known total, and with it alone no bound: PromQL answers NaN.
  if (total <= 0 || buckets.length < 2 || buckets[buckets.length - 1]?.le !== Infinity) return null;
  const rank = q * total;
  let previousLe = 0;
  let previousCount = 0;
  for (const [index, bucket] of buckets.entries()) {
    const le = bucket.le;
    const count = Math.max(bucket.count, previousCount);
    if (count >= rank && count > previousCount) {
      // The +Inf bucket has no upper bound: answer the highest finite bound, as Prometheus does.
      if (le === Infinity) return previousLe;
      // A first bucket at or below 0 has no lower bound to interpolate from: PromQL answers its bound.
      if (index === 0 && le <= 0) return le;
      // PromQL's order of operations (rank share first), so figures match histogram_quantile's bit for bit.
      return previousLe + (le - previousLe) * ((rank - previousCount) / (count - previousCount));
    }
    previousLe = le;
    previousCount = count;
  }
  return previousLe;
}

interface HistogramParts {
  sum: number;
  count: number;
  buckets: Map<number, number>;
}

function histogramParts(family: MetricFamily): Map<string, HistogramParts> {
  const out = new Map<string, HistogramParts>();
  for (const s of family.samples) {
    const key = seriesKey(family.name, s.labels, ['le']);
    let entry = out.get(key);
    if (entry === undefined) out.set(key, (entry = { sum: 0, count: 0, buckets: new Map() }));
    if (s.name.endsWith('_bucket')) entry.buckets.set(s.labels.le === undefined ? Infinity : Number(s.labels.le === '+Inf' ? Infinity : s.labels.le), s.value);
    else if (s.name.endsWith('_sum')) entry.sum = s.value;
    else if (s.name.endsWith('_count')) entry.count = s.value;
  }
  return out;
}

/** Whether a counter family's sample is its value (`x_total`, or the bare name), not `_created`. */
const isCounterValue = (family: MetricFamily, sample: PromSample): boolean => sample.name.endsWith('_total') || sample.name === family.name;

/**
 * What accrued from `then` to `now`: the difference, or `now` itself after a reset (a value
 * that went down). A series no earlier scrape of the segment had counts from 0: it did not exist
 * then (a finish reason's first request). `then` is the series' last value in the segment, not
 * the previous scrape's: a scrape that missed it (an exporter's hiccup) must not make its whole
 * count accrue again when it is back.
 */
const accrued = (now: number, then: number | undefined, reset: boolean): number => (then === undefined || reset ? now : now - then);

interface HistogramDelta {
  count: number;
  sum: number;
  buckets: Map<number, number>;
}

/**
 * One segment's scrapes folded in as they come (in time order), so a run keeps per series only
 * its last values and what accrued — not every parsed scrape: a page of 35 KB parses to about
 * 70 KB, which at one scrape a second over a long soak would hold gigabytes.
 */
export class SegmentAccumulator {
  scrapes = 0;
  #firstAtEpochMs = NaN;
  #lastAtEpochMs = NaN;
  readonly #gauges = new Map<string, number[]>();
  /** Each series' last value in this segment so far (the segment's first scrape is the baseline). */
  readonly #lastCounter = new Map<string, number>();
  readonly #lastHistogram = new Map<string, HistogramParts>();
  readonly #increases = new Map<string, number>();
  readonly #histograms = new Map<string, HistogramDelta>();

  add(scrape: Scrape): void {
    const first = this.#begin(scrape);
    for (const family of scrape.families.values()) this.#addSamples(family, first, 0, family.samples.length);
  }

  /**
   * The same, a few hundred samples per turn of the event loop (about a millisecond): folding a
   * page of tens of thousands of series in one go held the thread that stamps the run's reads
   * for 0.1 s.
   */
  async addInSlices(scrape: Scrape, samplesPerSlice = 256, pause: () => Promise<void> = nextTurn): Promise<void> {
    const first = this.#begin(scrape);
    let since = 0;
    for (const family of scrape.families.values()) {
      // A histogram's series are grouped from all its samples; gauges and counters go a slice at a time.
      const count = family.samples.length;
      const step = family.type === 'histogram' ? count : samplesPerSlice;
      for (let from = 0; from < count; from += step) {
        this.#addSamples(family, first, from, Math.min(count, from + step));
        since += Math.min(step, count - from);
        if (since >= samplesPerSlice) {
          since = 0;
          await pause();
        }
      }
    }
  }

  /** Counts the scrape in; whether it is the segment's first (its baseline). */
  #begin(scrape: Scrape): boolean {
    const first = this.scrapes === 0;
    this.scrapes++;
    if (first) this.#firstAtEpochMs = scrape.atEpochMs;
    this.#lastAtEpochMs = scrape.atEpochMs;
    return first;
  }

  /** Samples from..to of a gauge or counter family; a histogram family whole (from 0 to its end). */
  #addSamples(family: MetricFamily, first: boolean, from: number, to: number): void {
    if (family.type === 'gauge') {
      for (let i = from; i < to; i++) {
        const sample = family.samples[i] as PromSample;
        const key = seriesKey(sample.name, sample.labels);
        let values = this.#gauges.get(key);
        if (values === undefined) this.#gauges.set(key, (values = []));
        if (!Number.isNaN(sample.value)) values.push(sample.value);
      }
    } else if (family.type === 'counter') {
      for (let i = from; i < to; i++) {
        const sample = family.samples[i] as PromSample;
        if (!isCounterValue(family, sample)) continue;
        const key = seriesKey(sample.name, sample.labels);
        const value = sample.value;
        const previous = this.#lastCounter.get(key);
        this.#lastCounter.set(key, value);
        if (!first) this.#increases.set(key, (this.#increases.get(key) ?? 0) + accrued(value, previous, previous !== undefined && value < previous));
      }
    } else if (family.type === 'histogram') {
      for (const [key, h] of histogramParts(family)) {
        const old = this.#lastHistogram.get(key);
        const reset = old !== undefined && h.count < old.count;
        // Each bucket's last value: one a scrape missed counts from it when it is back (after a
        // reset, only what this scrape has is a baseline).
        this.#lastHistogram.set(key, old === undefined || reset ? h : { ...h, buckets: new Map([...old.buckets, ...h.buckets]) });
        if (first) continue;
        let delta = this.#histograms.get(key);
        if (delta === undefined) this.#histograms.set(key, (delta = { count: 0, sum: 0, buckets: new Map() }));
        delta.count += accrued(h.count, old?.count, reset);
        delta.sum += accrued(h.sum, old?.sum, reset);
        for (const [le, count] of h.buckets) {
          const before = old?.buckets.get(le);
          // A bucket a known series gains without a reset (its layout changed) starts from
          // where it is, as PromQL's rate starts a new series; a new series counts from 0.
          const accruedHere = old !== undefined && !reset && before === undefined ? 0 : accrued(count, before, reset);
          delta.buckets.set(le, (delta.buckets.get(le) ?? 0) + accruedHere);
        }
      }
    }
  }

  /** Seconds between its first and last scrape (0 for one scrape). */
  get windowSec(): number {
    return this.scrapes === 0 ? 0 : (this.#lastAtEpochMs - this.#firstAtEpochMs) / 1000;
  }

  get gauges(): ReadonlyMap<string, readonly number[]> {
    return this.#gauges;
  }

  get increases(): ReadonlyMap<string, number> {
    return this.#increases;
  }

  get histograms(): ReadonlyMap<string, Readonly<HistogramDelta>> {
    return this.#histograms;
  }
}

/**
 * How histograms are keyed: one per series, or (`name`) every series of a name summed by `le`,
 * as PromQL's `histogram_quantile(q, sum(rate(x_bucket[…])) by (le))` reads them — what the
 * latency profile generator and inference-perf query.
 */
export type HistogramGrouping = 'series' | 'name';

/** A series key's metric name: what stands before its labels. */
const nameOfKey = (key: string): string => {
  const brace = key.indexOf('{');
  return brace < 0 ? key : key.slice(0, brace);
};

/** Several segments' accumulations as one summary: their changes added up (see the note above). */
export function summarizeAccumulated(segments: readonly SegmentAccumulator[], failedScrapes?: number, histogramsBy: HistogramGrouping = 'series'): ServerMetricsSummary {
  const result: ServerMetricsSummary = {
    scrapes: segments.reduce((n, segment) => n + segment.scrapes, 0),
    ...(failedScrapes === undefined ? {} : { failed_scrapes: failedScrapes }),
    window_sec: null,
    gauges: {},
    counters: {},
    histograms: {},
  };
  const gaugeValues = new Map<string, number[]>();
  for (const segment of segments) {
    for (const [key, values] of segment.gauges) {
      // A loop, not push(...values): a day of one-second scrapes is more arguments than a call takes.
      const all = gaugeValues.get(key) ?? [];
      for (const value of values) all.push(value);
      gaugeValues.set(key, all);
    }
  }
  for (const [key, values] of gaugeValues) result.gauges[key] = { samples: values.length, ...statsBlock(values) };

  // Changes need two scrapes of one segment: a lone scrape says nothing of what happened.
  const spans = segments.filter((segment) => segment.scrapes >= 2);
  if (spans.length === 0) return result;
  const seconds = spans.reduce((total, segment) => total + segment.windowSec, 0);
  const increases = new Map<string, number>();
  const histograms = new Map<string, HistogramDelta>();
  for (const segment of spans) {
    for (const [key, increase] of segment.increases) increases.set(key, (increases.get(key) ?? 0) + increase);
    for (const [series, h] of segment.histograms) {
      const key = histogramsBy === 'name' ? nameOfKey(series) : series;
      let total = histograms.get(key);
      if (total === undefined) histograms.set(key, (total = { count: 0, sum: 0, buckets: new Map() }));
      total.count += h.count;
      total.sum += h.sum;
      for (const [le, count] of h.buckets) total.buckets.set(le, (total.buckets.get(le) ?? 0) + count);
    }
  }
  result.window_sec = seconds;
  for (const [key, increase] of increases) result.counters[key] = { increase, rate_per_sec: seconds > 0 ? increase / seconds : null };
  for (const [key, h] of histograms) {
    const buckets = [...h.buckets.entries()].sort((a, b) => a[0] - b[0]).map(([le, count]) => ({ le, count }));
    result.histograms[key] = {
      count: h.count,
      sum: h.sum,
      mean: h.count > 0 ? h.sum / h.count : null,
      median: bucketQuantile(0.5, buckets),
      p90: bucketQuantile(0.9, buckets),
      p99: bucketQuantile(0.99, buckets),
      min: bucketQuantile(0, buckets),
      max: bucketQuantile(1, buckets),
    };
  }
  return result;
}

/** The segments' scrapes (each in time order) as one summary. */
export function summarizeSegments(segments: ReadonlyArray<readonly Scrape[]>, failedScrapes?: number): ServerMetricsSummary {
  return summarizeAccumulated(
    segments.map((scrapes) => {
      const segment = new SegmentAccumulator();
      for (const scrape of scrapes) segment.add(scrape);
      return segment;
    }),
    failedScrapes,
  );
}
