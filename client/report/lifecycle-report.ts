/**
 * inference-perf's lifecycle report (summary_lifecycle_metrics.json and
 * stage_N_lifecycle_metrics.json), pure from a stage's raw samples. Times in seconds, lengths in
 * tokens; every distribution is {mean, min, max, p10, p50, median, p90, p99} (`median` is
 * inference-perf's name for p50, `p50` the older one; both are written), plus `pP` for each
 * further percentile P that `report.request_lifecycle.percentiles` asks for; an empty sample is
 * null as a whole, as inference-perf writes it — never 0 or NaN.
 */
import { throughput } from '../../contracts/metrics.ts';
import { countedSample, distribution, distributionOfSorted, type Distribution } from '../../contracts/stats.ts';
import type { RequestRecord } from '../record/request-record.ts';
import { EPOCH_TIMELINE, StageSamples, type FailureKindSummary, type RecordTimeline } from '../record/stage-samples.ts';
import { evaluateGoodput, type Goodput, type GoodputMetrics, type Slo } from './goodput.ts';

/** A non-empty sample's statistics (an empty one is null in the report). */
export type ReportDistribution = FixedReportDistribution & { [percentile: `p${string}`]: number };

interface FixedReportDistribution {
  mean: number;
  min: number;
  max: number;
  p10: number;
  p50: number;
  /** The same value as p50, under inference-perf's current name. */
  median: number;
  p90: number;
  p99: number;
}

export interface LoadSummary {
  count: number;
  schedule_delay: ReportDistribution | null;
  /** Last start − first start of the stage's measured requests, in seconds (inference-perf's definition). */
  send_duration: number | null;
  intended_rate: number | null;
  /**
   * inference-perf's name for intended_rate (its analyze and console summary read this key).
   * Left out when the load has no intended rate (a closed loop): its readers then use their default.
   */
  requested_rate?: number;
  achieved_rate: number | null;
  /** Closed-loop stages: the number of requests held in flight. */
  concurrency?: number | null;
  load_type?: string;
}

/** inference-perf's token-usage block: the total over the successes, then their distribution. */
export type TokenUsage = { total: number } & Partial<ReportDistribution>;

export interface LifecycleReport {
  /** inference-perf's total time: the measured window [first start, last end], seconds; null without a request. */
  benchmark_time_seconds: number | null;
  load_summary: LoadSummary;
  successes: {
    count: number;
    latency: {
      request_latency: ReportDistribution | null;
      normalized_time_per_output_token: ReportDistribution | null;
      time_per_output_token: ReportDistribution | null;
      time_to_first_token: ReportDistribution | null;
      inter_token_latency: ReportDistribution | null;
      inter_chunk_latency: ReportDistribution | null;
    };
    throughput: {
      input_tokens_per_sec: number | null;
      output_tokens_per_sec: number | null;
      total_tokens_per_sec: number | null;
      requests_per_sec: number | null;
    };
    prompt_len: ReportDistribution | null;
    /**
     * inference-perf's usage blocks (its newer reports): the prompt tokens (`cached` and
     * `uncached` null: the client reads no prompt_tokens_details, and writes no 0 it did not see)
     * and the output tokens N of the successes.
     */
    prompt_tokens: TokenUsage & { cached: number | null; uncached: number | null };
    output_len: ReportDistribution | null;
    output_tokens: TokenUsage;
    tokens_per_event: ReportDistribution | null;
    /** Successes by where their tokens-per-event counts came from. */
    tokens_per_event_source: Record<string, number>;
    /** Successes by where their output token count N came from (`usage` or `events`). */
    output_tokens_source: Record<string, number>;
    token_count_mismatches: number;
    /** How pooled ITL / inter-chunk latency were computed: every raw gap, or the ±0.5 % sketch of a very large run. */
    pooled_latency_samples: 'exact' | 'sketch';
    /** inference-perf's goodput block, when SLOs are set and there is a success to judge. */
    goodput_metrics?: GoodputMetrics;
  };
  goodput?: Goodput;
  failures: {
    count: number;
    by_kind: Record<string, FailureKindSummary>;
    request_latency: ReportDistribution | null;
    prompt_len: ReportDistribution | null;
    /** inference-perf's newer prompt-token block, of the failures. */
    prompt_tokens: TokenUsage & { cached: number | null; uncached: number | null };
    /** inference-perf's failures by its concise labels (`429 - Rate Limit`, `Timeout`): `{label: {count, messages: [{message}]}}`, most frequent first. */
    by_label: Record<string, { count: number; messages: Array<{ message: string }> }>;
  };
}

/**
 * inference-perf's failures.by_label: each failure under its own concise label (failure-label.ts),
 * most frequent first (as its build_error_counts orders them), then by name, so merged reports
 * write the same JSON. The messages are samples, as by_kind's, not its up to 100 per label.
 */
function byLabel(samples: StageSamples): LifecycleReport['failures']['by_label'] {
  const out: LifecycleReport['failures']['by_label'] = {};
  const labels = Object.entries(samples.failuresByLabel).sort(([a, x], [b, y]) => y.count - x.count || (a < b ? -1 : a > b ? 1 : 0));
  for (const [label, { count, sample_messages }] of labels) out[label] = { count, messages: sample_messages.map((message) => ({ message })) };
  return out;
}

/** by_kind in name order: the same JSON whichever shard saw a kind first. */
function sortedByKind(byKind: Readonly<Record<string, FailureKindSummary>>): Record<string, FailureKindSummary> {
  const out: Record<string, FailureKindSummary> = {};
  for (const kind of Object.keys(byKind).sort()) out[kind] = structuredClone(byKind[kind] as FailureKindSummary);
  return out;
}

/** Milliseconds → seconds by division: correctly rounded, so a report's p50 is exactly numpy's p50(ms) / 1000 (× 0.001 can be off by an ulp). */
const MS_PER_SECOND = 1000;

/** Python's `format(x, 'g')`: six significant digits, trailing zeros dropped, e-notation below 1e-4. */
function pythonG(x: number): string {
  if (x === 0) return '0';
  const [mantissa, exponentText] = x.toExponential(5).split('e') as [string, string];
  const exponent = Number(exponentText);
  const trim = (digits: string): string => (digits.includes('.') ? digits.replace(/0+$/, '').replace(/\.$/, '') : digits);
  if (exponent < -4 || exponent >= 6) return `${trim(mantissa)}e${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`;
  return trim(x.toFixed(Math.max(0, 5 - exponent)));
}

/** The report's key of percentile `p`, as inference-perf's f"p{p:g}": `p99.9`, `p0.1`, `p25`, `p1e-05`. */
export function percentileKey(p: number): `p${string}` {
  return `p${pythonG(p)}`;
}

/** A distribution (its extra percentiles included) as the report writes it, each value / `divisor`. */
function summarize(d: Distribution, divisor = 1): ReportDistribution | null {
  // A distribution is all-null exactly when its sample is empty.
  if (d.mean === null || d.min === null || d.max === null || d.p10 === null || d.p50 === null || d.p90 === null || d.p99 === null) return null;
  const p50 = d.p50 / divisor;
  const out: ReportDistribution = { mean: d.mean / divisor, min: d.min / divisor, max: d.max / divisor, p10: d.p10 / divisor, p50, median: p50, p90: d.p90 / divisor, p99: d.p99 / divisor };
  for (const [p, value] of d.extra ?? []) {
    const key = percentileKey(p);
    if (!(key in out) && value !== null) out[key] = value / divisor;
  }
  return out;
}

/** The defined (non-NaN) values of a column. */
function defined(values: Float64Array): Float64Array {
  let n = 0;
  for (const v of values) if (!Number.isNaN(v)) n++;
  if (n === values.length) return values;
  const out = new Float64Array(n);
  let i = 0;
  for (const v of values) if (!Number.isNaN(v)) out[i++] = v;
  return out;
}

function sum(values: Float64Array): number {
  let total = 0;
  for (const v of values) total += v;
  return total;
}

export interface ReportContext {
  /** The schedule's intended rate (requests/s), when the load shape has one. */
  intendedRate: number | null;
  concurrency?: number | null;
  loadType?: string;
  slo?: Slo | null;
  /** Percentiles every distribution adds to the fixed ones (`report.request_lifecycle.percentiles`). */
  percentiles?: readonly number[];
}

export function lifecycleReportFromSamples(samples: StageSamples, context: ReportContext): LifecycleReport {
  const s = samples.success;
  const w = samples.window;
  const windowStart = w.firstStartMs ?? Infinity;
  const windowEnd = w.lastEndMs ?? -Infinity;
  const lastStart = w.lastStartMs ?? -Infinity;
  const firstScheduled = w.firstScheduledMs ?? Infinity;
  const measuredCount = samples.measuredCount;
  const inputTokens = sum(s.promptTokens.view());
  const outputTokens = sum(s.outputTokens.view());
  const rates =
    measuredCount > 0
      ? throughput(windowStart, windowEnd, samples.successCount, inputTokens, outputTokens)
      : { inputTokensPerSec: null, outputTokensPerSec: null, totalTokensPerSec: null, requestsPerSec: null };
  const sendDuration = measuredCount > 0 ? (lastStart - windowStart) / MS_PER_SECOND : null;
  // Achieved rate counts from the first *scheduled* time, so a client late with its first send shows it.
  const sendSpan = measuredCount > 0 ? (lastStart - firstScheduled) / MS_PER_SECOND : null;
  const intendedRate = context.intendedRate;
  const ps = context.percentiles ?? [];

  const promptLen = summarize(distribution(s.promptTokens.view(), ps));
  const outputLen = summarize(distribution(s.outputTokens.view(), ps));
  const failedPromptLen = summarize(distribution(samples.failure.promptTokens.view(), ps));
  const report: LifecycleReport = {
    benchmark_time_seconds: measuredCount > 0 && windowEnd >= windowStart ? (windowEnd - windowStart) / MS_PER_SECOND : null,
    load_summary: {
      count: measuredCount,
      schedule_delay: summarize(distribution(samples.scheduleDelayMs.view(), ps), MS_PER_SECOND),
      send_duration: sendDuration,
      intended_rate: intendedRate,
      ...(intendedRate === null ? {} : { requested_rate: intendedRate }),
      achieved_rate: sendSpan !== null && sendSpan > 0 && measuredCount > 1 ? (measuredCount - 1) / sendSpan : null,
      ...(context.concurrency !== undefined ? { concurrency: context.concurrency } : {}),
      ...(context.loadType !== undefined ? { load_type: context.loadType } : {}),
    },
    successes: {
      count: samples.successCount,
      latency: {
        request_latency: summarize(distribution(s.latencyMs.view(), ps), MS_PER_SECOND),
        normalized_time_per_output_token: summarize(distribution(defined(s.ntpotMs.view()), ps), MS_PER_SECOND),
        time_per_output_token: summarize(distribution(defined(s.tpotMs.view()), ps), MS_PER_SECOND),
        time_to_first_token: summarize(distribution(defined(s.ttftMs.view()), ps), MS_PER_SECOND),
        inter_token_latency: summarize(samples.interChunkMs.distribution(samples.intraEventZeros, ps), MS_PER_SECOND),
        inter_chunk_latency: summarize(samples.interChunkMs.distribution(0, ps), MS_PER_SECOND),
      },
      throughput: {
        input_tokens_per_sec: rates.inputTokensPerSec,
        output_tokens_per_sec: rates.outputTokensPerSec,
        total_tokens_per_sec: rates.totalTokensPerSec,
        requests_per_sec: rates.requestsPerSec,
      },
      prompt_len: promptLen,
      prompt_tokens: { total: inputTokens, cached: null, uncached: null, ...promptLen },
      output_len: outputLen,
      output_tokens: { total: outputTokens, ...outputLen },
      // From the counts, never one value per event.
      tokens_per_event: summarize(distributionOfSorted(countedSample(samples.tokensPerEvent), ps)),
      tokens_per_event_source: { ...samples.tokensPerEventSources },
      output_tokens_source: { ...samples.outputTokensSources },
      token_count_mismatches: samples.tokenCountMismatches,
      pooled_latency_samples: samples.interChunkMs.isExact ? 'exact' : 'sketch',
    },
    failures: {
      count: samples.failureCount,
      by_kind: sortedByKind(samples.failuresByKind),
      request_latency: summarize(distribution(samples.failure.latencyMs.view(), ps), MS_PER_SECOND),
      prompt_len: failedPromptLen,
      prompt_tokens: { total: sum(samples.failure.promptTokens.view()), cached: null, uncached: null, ...failedPromptLen },
      by_label: byLabel(samples),
    },
  };
  if (context.slo) {
    const verdicts = evaluateGoodput(samples, context.slo);
    if (verdicts.goodputMetrics !== null) report.successes.goodput_metrics = verdicts.goodputMetrics;
    report.goodput = verdicts.goodput;
  }
  return report;
}

/** The report of a list of records (warm-up records are left out). */
export function lifecycleReport(all: readonly RequestRecord[], context: ReportContext, timeline: RecordTimeline = EPOCH_TIMELINE): LifecycleReport {
  const samples = new StageSamples();
  for (const record of all) if (!record.warmup) samples.add(record, timeline);
  return lifecycleReportFromSamples(samples, context);
}
