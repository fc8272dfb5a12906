/**
 * inference-perf's lifecycle report (summary_lifecycle_metrics.json), pure from records.
 * Times in seconds, lengths in tokens; every distribution is {mean, min, max, p10, p50, p90,
 * p99}; empty samples are null, never 0 or NaN.
 */
import { throughput } from '../../contracts/metrics.ts';
import { distribution } from '../../contracts/stats.ts';
import type { RequestRecord } from '../record/request-record.ts';

export interface ReportDistribution {
  mean: number | null;
  min: number | null;
  max: number | null;
  p10: number | null;
  p50: number | null;
  p90: number | null;
  p99: number | null;
}

export interface LifecycleReport {
  load_summary: {
    count: number;
    schedule_delay: ReportDistribution;
    send_duration: number | null;
    intended_rate: number | null;
    achieved_rate: number | null;
  };
  successes: {
    count: number;
    latency: {
      request_latency: ReportDistribution;
      normalized_time_per_output_token: ReportDistribution;
      time_per_output_token: ReportDistribution;
      time_to_first_token: ReportDistribution;
      inter_token_latency: ReportDistribution;
      inter_chunk_latency: ReportDistribution;
    };
    throughput: {
      input_tokens_per_sec: number | null;
      output_tokens_per_sec: number | null;
      total_tokens_per_sec: number | null;
      requests_per_sec: number | null;
    };
    prompt_len: ReportDistribution;
    output_len: ReportDistribution;
    tokens_per_event: ReportDistribution;
    token_count_source: Record<string, number>;
    token_count_mismatches: number;
  };
  failures: {
    count: number;
    by_kind: Record<string, { count: number; sample_messages: string[] }>;
    request_latency: ReportDistribution;
    prompt_len: ReportDistribution;
  };
}

function summarize(values: ArrayLike<number>, scale = 1): ReportDistribution {
  const d = distribution(values);
  const s = (x: number | null): number | null => (x === null ? null : x * scale);
  return { mean: s(d.mean), min: s(d.min), max: s(d.max), p10: s(d.p10), p50: s(d.p50), p90: s(d.p90), p99: s(d.p99) };
}

const SECONDS = 1 / 1000;
const SAMPLE_MESSAGES = 3;

export interface ReportContext {
  /** The schedule's intended rate (requests/s), when the load shape has one. */
  intendedRate: number | null;
}

export function lifecycleReport(all: readonly RequestRecord[], context: ReportContext): LifecycleReport {
  const measured = all.filter((r) => !r.warmup);
  const successes = measured.filter((r) => r.failure === null);
  const failures = measured.filter((r) => r.failure !== null);

  const latency: number[] = [];
  const ntpot: number[] = [];
  const tpot: number[] = [];
  const ttft: number[] = [];
  const itl: number[] = [];
  const interChunk: number[] = [];
  const tokensPerEvent: number[] = [];
  const sources: Record<string, number> = {};
  let mismatches = 0;
  let inputTokens = 0;
  let outputTokens = 0;
  for (const r of successes) {
    const m = r.metrics;
    if (m === null) continue;
    latency.push(m.latencyMs);
    if (m.ntpotMs !== null) ntpot.push(m.ntpotMs);
    if (m.tpotMs !== null) tpot.push(m.tpotMs);
    if (m.ttftMs !== null) ttft.push(m.ttftMs);
    for (const gap of m.itlMs) itl.push(gap);
    for (const gap of m.interChunkMs) interChunk.push(gap);
    for (const e of r.events) tokensPerEvent.push(e.tokens);
    sources[r.tokensPerEventSource] = (sources[r.tokensPerEventSource] ?? 0) + 1;
    if (r.tokenCountMismatch) mismatches++;
    inputTokens += r.promptTokens;
    outputTokens += r.outputTokens;
  }

  let windowStart = Infinity;
  let windowEnd = -Infinity;
  for (const r of measured) {
    windowStart = Math.min(windowStart, r.startMs);
    windowEnd = Math.max(windowEnd, r.endMs);
  }
  const rates =
    measured.length > 0
      ? throughput(windowStart, windowEnd, successes.length, inputTokens, outputTokens)
      : { inputTokensPerSec: null, outputTokensPerSec: null, totalTokensPerSec: null, requestsPerSec: null };

  let firstScheduled = Infinity;
  let lastStart = -Infinity;
  for (const r of measured) {
    firstScheduled = Math.min(firstScheduled, r.scheduledMs);
    lastStart = Math.max(lastStart, r.startMs);
  }
  const sendSeconds = measured.length > 0 ? (lastStart - firstScheduled) * SECONDS : null;

  const byKind: LifecycleReport['failures']['by_kind'] = {};
  for (const r of failures) {
    const failure = r.failure;
    if (failure === null) continue;
    const entry = (byKind[failure.kind] ??= { count: 0, sample_messages: [] });
    entry.count++;
    if (entry.sample_messages.length < SAMPLE_MESSAGES && !entry.sample_messages.includes(failure.message)) {
      entry.sample_messages.push(failure.message);
    }
  }

  return {
    load_summary: {
      count: measured.length,
      schedule_delay: summarize(
        measured.map((r) => r.startMs - r.scheduledMs),
        SECONDS,
      ),
      send_duration: sendSeconds,
      intended_rate: context.intendedRate,
      achieved_rate: sendSeconds !== null && sendSeconds > 0 && measured.length > 1 ? (measured.length - 1) / sendSeconds : null,
    },
    successes: {
      count: successes.length,
      latency: {
        request_latency: summarize(latency, SECONDS),
        normalized_time_per_output_token: summarize(ntpot, SECONDS),
        time_per_output_token: summarize(tpot, SECONDS),
        time_to_first_token: summarize(ttft, SECONDS),
        inter_token_latency: summarize(itl, SECONDS),
        inter_chunk_latency: summarize(interChunk, SECONDS),
      },
      throughput: {
        input_tokens_per_sec: rates.inputTokensPerSec,
        output_tokens_per_sec: rates.outputTokensPerSec,
        total_tokens_per_sec: rates.totalTokensPerSec,
        requests_per_sec: rates.requestsPerSec,
      },
      prompt_len: summarize(successes.map((r) => r.promptTokens)),
      output_len: summarize(successes.map((r) => r.outputTokens)),
      tokens_per_event: summarize(tokensPerEvent),
      token_count_source: sources,
      token_count_mismatches: mismatches,
    },
    failures: {
      count: failures.length,
      by_kind: byKind,
      request_latency: summarize(
        failures.map((r) => r.endMs - r.startMs),
        SECONDS,
      ),
      prompt_len: summarize(failures.map((r) => r.promptTokens)),
    },
  };
}
