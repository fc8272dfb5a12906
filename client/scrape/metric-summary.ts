/**
 * Summaries of a series of Prometheus scrapes over one stage. Gauges: the distribution of the
 * scraped values (mean, median, sd, min, max, p90, p99). Counters: the increase and its rate.
 * Histograms: what happened *during* the stage, from the difference between the stage's first
 * and last scrape — mean = Δsum/Δcount, quantiles by linear interpolation inside the bucket
 * (as PromQL's histogram_quantile does). Pure.
 */
import { distribution } from '../../contracts/stats.ts';
import { seriesKey, type MetricFamily } from './prometheus-text.ts';

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
  /** histogram_quantile(0) and (1): the lower bound of the first and the upper bound of the last non-empty bucket. */
  min?: number | null;
  max?: number | null;
}

export interface ServerMetricsSummary {
  scrapes: number;
  window_sec: number | null;
  gauges: Record<string, GaugeSummary>;
  counters: Record<string, CounterSummary>;
  histograms: Record<string, HistogramSummary>;
}

/** Cumulative buckets (upper bound ascending, the last +Inf) → the q-quantile, or null when empty. */
export function bucketQuantile(q: number, buckets: ReadonlyArray<{ le: number; count: number }>): number | null {
  const total = buckets[buckets.length - 1]?.count ?? 0;
  if (total <= 0) return null;
  const rank = q * total;
  let previousLe = 0;
  let previousCount = 0;
  for (const { le, count } of buckets) {
    if (count >= rank && count > previousCount) {
      // The +Inf bucket has no upper bound: answer the highest finite bound, as Prometheus does.
      if (le === Infinity) return previousLe;
      return previousLe + ((le - previousLe) * (rank - previousCount)) / (count - previousCount);
    }
    previousLe = le;
    previousCount = count;
  }
  return previousLe;
}

function histogramParts(family: MetricFamily): Map<string, { sum: number; count: number; buckets: Map<number, number> }> {
  const out = new Map<string, { sum: number; count: number; buckets: Map<number, number> }>();
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

export function summarizeScrapes(scrapes: readonly Scrape[]): ServerMetricsSummary {
  const result: ServerMetricsSummary = { scrapes: scrapes.length, window_sec: null, gauges: {}, counters: {}, histograms: {} };
  const first = scrapes[0];
  const last = scrapes[scrapes.length - 1];
  if (first === undefined || last === undefined) return result;
  const seconds = (last.atEpochMs - first.atEpochMs) / 1000;
  result.window_sec = seconds;
  const gaugeValues = new Map<string, number[]>();
  for (const scrape of scrapes) {
    for (const family of scrape.families.values()) {
      if (family.type !== 'gauge') continue;
      for (const s of family.samples) {
        const key = seriesKey(s.name, s.labels);
        let values = gaugeValues.get(key);
        if (values === undefined) gaugeValues.set(key, (values = []));
        if (!Number.isNaN(s.value)) values.push(s.value);
      }
    }
  }
  for (const [key, values] of gaugeValues) {
    result.gauges[key] = { samples: values.length, ...statsBlock(values) };
  }
  for (const family of last.families.values()) {
    const before = first.families.get(family.name);
    if (family.type === 'counter') {
      for (const s of family.samples) {
        if (!s.name.endsWith('_total') && s.name !== family.name) continue;
        const key = seriesKey(s.name, s.labels);
        const earlier = before?.samples.find((b) => b.name === s.name && seriesKey(b.name, b.labels) === key)?.value ?? 0;
        const increase = s.value - earlier;
        result.counters[key] = { increase, rate_per_sec: seconds > 0 ? increase / seconds : null };
      }
    } else if (family.type === 'histogram') {
      const now = histogramParts(family);
      const then = before !== undefined ? histogramParts(before) : new Map();
      for (const [key, h] of now) {
        const old = then.get(key);
        const count = h.count - (old?.count ?? 0);
        const sum = h.sum - (old?.sum ?? 0);
        const buckets = [...h.buckets.entries()].sort((a, b) => a[0] - b[0]).map(([le, c]) => ({ le, count: c - (old?.buckets.get(le) ?? 0) }));
        result.histograms[key] = {
          count,
          sum,
          mean: count > 0 ? sum / count : null,
          median: bucketQuantile(0.5, buckets),
          p90: bucketQuantile(0.9, buckets),
          p99: bucketQuantile(0.99, buckets),
          min: bucketQuantile(0, buckets),
          max: bucketQuantile(1, buckets),
        };
      }
    }
  }
  return result;
}
