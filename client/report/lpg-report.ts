/**
 * The latency profile generator's JSON report (ai-on-gke's benchmark_serving.py, the layout of
 * test/fixtures/lpg/lpg-report-jetstream.json), built purely from request records and the
 * client's own scrape summaries. Units are the generator's, not ours:
 *
 * | key | unit |
 * | --- | --- |
 * | benchmark_time | s, first request start → last response end |
 * | throughput | requests/s (num_prompts / benchmark_time, as that generator version wrote it) |
 * | throughput_rps | requests/s, the same figure under the newer generator's unambiguous name |
 * | num_prompts_attempted, num_prompts_succeeded | requests (the newer generator's counts) |
 * | ClientConnectorError … unknown_error | failed requests per kind (LPG_ERROR_KEYS) |
 * | *_tokens_per_min | tokens/min |
 * | *_per_token_latency | s per token of prompt + output (request latency / (input + output)) |
 * | *_latency | ms per request |
 * | *_per_output_token_latency (and summary tpot) | ms per output token (latency / output) |
 * | *_input_len, *_output_len | tokens |
 * | *_TTFT (streamed runs only) | s |
 * | server_metrics | the metric's own unit, values as strings (Prometheus API answers) |
 *
 * Keys the newer generator added (attempted/succeeded counts, throughput_rps, its per-error
 * counts) come after the fixture's, so a reader of either version finds what it expects. (The
 * newer generator also redefined `throughput` as output tokens/s; ours keeps the fixture's
 * requests/s and says so in `throughput_rps`.)
 *
 * Where the generator would write 0 for an empty sample or NaN/Infinity (e.g. an infinite
 * request rate) we write null: a reader must be able to tell "none" from "zero".
 */
import type { RequestRecord } from '../record/request-record.ts';
import { EMPTY_WINDOW, widen, type StageSamples } from '../record/stage-samples.ts';
import { statsBlock, type ServerMetricsSummary, type StatsBlock } from '../scrape/metric-summary.ts';

/** What the generator scrapes for a JetStream backend (the fixture's five). */
export const LPG_JETSTREAM_METRICS = [
  'jetstream_slots_used_percentage',
  'jetstream_prefill_backlog_size',
  'jetstream_time_to_first_token',
  'jetstream_time_per_output_token',
  'jetstream_time_per_request',
] as const;

/**
 * What the archived generator (ai-on-gke HEAD, metrics_to_scrape) asks vLLM for, in its order.
 * A metric the server does not export is left out of the report, as the generator leaves out a
 * query that answers nothing (benchtruth's server has no num_requests_swapped or
 * iteration_tokens_total).
 */
export const LPG_VLLM_METRICS = [
  'vllm:gpu_cache_usage_perc',
  'vllm:num_requests_waiting',
  'vllm:num_requests_running',
  'vllm:num_requests_swapped',
  'vllm:time_to_first_token_seconds',
  'vllm:time_per_output_token_seconds',
  'vllm:request_queue_time_seconds',
  'vllm:request_inference_time_seconds',
  'vllm:request_prompt_tokens',
  'vllm:request_generation_tokens',
  'vllm:iteration_tokens_total',
] as const;

/**
 * Newer names a metric the generator asks for may be scraped under: vLLM 0.11 (and our server)
 * renamed the KV-cache gauge. The value is reported under the name the generator's reader expects.
 */
export const LPG_METRIC_FALLBACKS: Readonly<Record<string, readonly string[]>> = Object.freeze({
  'vllm:gpu_cache_usage_perc': ['vllm:kv_cache_usage_perc'],
});

/**
 * The newer generator's per-error counters (init_errors_map: aiohttp exception names) and which
 * of our failure kinds each one counts. Its reader sees what aiohttp would have raised:
 * connect_error → ClientConnectorError, timeout → TimeoutError, disconnected before the response
 * headers → ServerDisconnectedError (after them aiohttp raises ClientPayloadError, which the
 * generator has no counter for: unknown_error); HTTP errors, stream error events, malformed
 * bodies and worker crashes fail there while parsing (a JSON or key error), so → unknown_error.
 * A truncated stream (no `[DONE]`, the body otherwise ended cleanly) is not one the generator can
 * see (it skips the terminator but never requires it, and would count the stream a success); the
 * contract counts it a failure, filed here under unknown_error too.
 * ContentTypeError and ClientOSError stay 0: benchtruth has no such failure of its own.
 */
export const LPG_ERROR_KEYS = ['ClientConnectorError', 'TimeoutError', 'ContentTypeError', 'ClientOSError', 'ServerDisconnectedError', 'unknown_error'] as const;
export type LpgErrorKey = (typeof LPG_ERROR_KEYS)[number];

export function lpgErrorKey(kind: string): LpgErrorKey {
  if (kind === 'connect_error') return 'ClientConnectorError';
  if (kind === 'timeout') return 'TimeoutError';
  if (kind === 'disconnected') return 'ServerDisconnectedError';
  return 'unknown_error';
}

function lpgErrorCounts(failuresByKind: Readonly<Record<string, number>>, disconnectedAfterHeaders: number): Record<LpgErrorKey, number> {
  const out = Object.fromEntries(LPG_ERROR_KEYS.map((key) => [key, 0])) as Record<LpgErrorKey, number>;
  for (const [kind, count] of Object.entries(failuresByKind)) out[lpgErrorKey(kind)] += count;
  out.ServerDisconnectedError -= disconnectedAfterHeaders;
  out.unknown_error += disconnectedAfterHeaders;
  return out;
}

export type LpgStat = 'Mean' | 'Median' | 'Sd' | 'Min' | 'Max' | 'P90' | 'P99';
export type LpgServerMetric = Partial<Record<LpgStat, string>>;

/** What the report needs of the measured requests: per-success columns, index-aligned. */
export interface LpgSamples {
  /** Measured (non-warm-up) requests sent, failures included (the generator's num_prompts). */
  attempted: number;
  /** First start → last end of the measured requests, in seconds; null when there were none. */
  windowSec: number | null;
  latencyMs: ArrayLike<number>;
  /** NaN where a success had no token (no TTFT). */
  ttftMs: ArrayLike<number>;
  promptTokens: ArrayLike<number>;
  outputTokens: ArrayLike<number>;
  /** Failed measured requests by failure kind (`http_503`, `timeout` …). */
  failuresByKind: Record<string, number>;
  /** Of the `disconnected` ones, those cut after their response headers. */
  disconnectedAfterHeaders: number;
}

export function lpgSamplesFromRecords(records: readonly RequestRecord[]): LpgSamples {
  const successes = records.filter((r) => r.failure === null && r.metrics !== null);
  // Each stage's own span, added up (as lpgSamplesFromStages): never the time between stages.
  const spans = new Map<number, { first: number; last: number }>();
  const failuresByKind: Record<string, number> = {};
  let disconnectedAfterHeaders = 0;
  for (const r of records) {
    const span = spans.get(r.stage);
    if (span === undefined) spans.set(r.stage, { first: r.startMs, last: r.endMs });
    else {
      span.first = Math.min(span.first, r.startMs);
      span.last = Math.max(span.last, r.endMs);
    }
    // As stage-samples.ts counts them: a record without metrics failed too.
    if (r.failure !== null || r.metrics === null) {
      const kind = r.failure?.kind ?? 'malformed';
      failuresByKind[kind] = (failuresByKind[kind] ?? 0) + 1;
      if (kind === 'disconnected' && r.status !== null) disconnectedAfterHeaders++;
    }
  }
  return {
    attempted: records.length,
    windowSec: records.length === 0 ? null : [...spans.values()].reduce((ms, span) => ms + span.last - span.first, 0) / 1000,
    latencyMs: successes.map((r) => r.endMs - r.startMs),
    ttftMs: successes.map((r) => r.metrics?.ttftMs ?? Number.NaN),
    promptTokens: successes.map((r) => r.promptTokens),
    outputTokens: successes.map((r) => r.outputTokens),
    failuresByKind,
    disconnectedAfterHeaders,
  };
}

/** The same from a run's compact per-stage samples (what workers and shards merge). */
export function lpgSamplesFromStages(stages: ReadonlyMap<number, StageSamples>): LpgSamples {
  const all = [...stages.values()];
  const cat = (pick: (s: StageSamples) => ArrayLike<number>): number[] => all.flatMap((s) => Array.from(pick(s)));
  // Stages of one rate share a file: its time is theirs added up, never the stages run between them.
  let windowMs: number | null = null;
  let attempted = 0;
  const failuresByKind: Record<string, number> = {};
  let disconnectedAfterHeaders = 0;
  for (const s of all) {
    attempted += s.success.latencyMs.length + s.failure.latencyMs.length;
    disconnectedAfterHeaders += s.disconnectedAfterHeaders;
    for (const [kind, entry] of Object.entries(s.failuresByKind)) failuresByKind[kind] = (failuresByKind[kind] ?? 0) + entry.count;
    const { firstStartMs, lastEndMs } = s.window;
    if (firstStartMs !== null && lastEndMs !== null) windowMs = (windowMs ?? 0) + (lastEndMs - firstStartMs);
  }
  return {
    attempted,
    windowSec: windowMs === null ? null : windowMs / 1000,
    latencyMs: cat((s) => s.success.latencyMs.view()),
    ttftMs: cat((s) => s.success.ttftMs.view()),
    promptTokens: cat((s) => s.success.promptTokens.view()),
    outputTokens: cat((s) => s.success.outputTokens.view()),
    failuresByKind,
    disconnectedAfterHeaders,
  };
}

export interface LpgInput {
  samples: LpgSamples;
  /** Requests/s asked for; null (or Infinity) for "as fast as possible". */
  requestRate: number | null;
  stream: boolean;
  /** The generator's --backend: jetstream, vllm … */
  backend: string;
  modelId: string;
  tokenizerId: string;
  /** Wall-clock start of the run, for `dimensions.date`. */
  startEpochMs: number;
  /** Scrape summary of the measured window; null when nothing was scraped. */
  serverMetrics: ServerMetricsSummary | null;
  /** Metric names to report (default: by backend). */
  metricNames?: readonly string[];
}

/** The generator's summary statistics of one set. */
export type LpgStatsBlock = StatsBlock;

export interface LpgReport {
  metrics: Record<string, unknown>;
  dimensions: { date: string; backend: string; model_id: string; tokenizer_id: string };
  config: { model: string; num_models: number; model_server: string; start_time: { seconds: number; nanos: number } };
  summary_stats: {
    stats: Array<{
      request_rate: number | null;
      request_latency: LpgStatsBlock;
      throughput: { mean: number | null };
      input_length: LpgStatsBlock;
      output_length: LpgStatsBlock;
      tpot: LpgStatsBlock;
      model_server_metrics: Array<{ Name: string } & LpgServerMetric>;
    }>;
  };
}

const finite = (x: number | null): number | null => (x === null || !Number.isFinite(x) ? null : x);

/** Summary statistics with nothing non-finite in them (the generator writes no NaN). */
function finiteStats(values: readonly number[]): LpgStatsBlock {
  const block = statsBlock(values);
  return { mean: finite(block.mean), median: finite(block.median), sd: finite(block.sd), min: finite(block.min), max: finite(block.max), p90: finite(block.p90), p99: finite(block.p99) };
}

/** The generator's get_stats_for_set: avg_/median_/sd_/min_/max_/p90_/p99_<name>. */
function flatStats(name: string, block: LpgStatsBlock): Record<string, number | null> {
  return {
    [`avg_${name}`]: block.mean,
    [`median_${name}`]: block.median,
    [`sd_${name}`]: block.sd,
    [`min_${name}`]: block.min,
    [`max_${name}`]: block.max,
    [`p90_${name}`]: block.p90,
    [`p99_${name}`]: block.p99,
  };
}

/** `%Y%m%d-%H%M%S` in local time, as Python's datetime.fromtimestamp().strftime writes it. */
export function lpgDate(epochMs: number): string {
  const d = new Date(epochMs);
  const two = (n: number): string => String(n).padStart(2, '0');
  return `${d.getFullYear()}${two(d.getMonth() + 1)}${two(d.getDate())}-${two(d.getHours())}${two(d.getMinutes())}${two(d.getSeconds())}`;
}

/**
 * The generator's `config.start_time`: protobuf's Timestamp.FromDatetime of its start, a naive
 * local datetime (datetime.fromtimestamp), which protobuf reads as UTC: the local wall-clock
 * time's seconds (epoch seconds where the zone is UTC, as in its container) and microseconds
 * as nanos.
 */
export function lpgStartTime(epochMs: number): { seconds: number; nanos: number } {
  const micros = Math.round(epochMs * 1000);
  const localOffsetS = -new Date(epochMs).getTimezoneOffset() * 60;
  return { seconds: Math.floor(micros / 1e6) + localOffsetS, nanos: (((micros % 1e6) + 1e6) % 1e6) * 1000 };
}

/** Prometheus answers values as strings; a stat it could not compute is left out, as the generator does. */
function promValue(x: number | null | undefined): string | undefined {
  return x === null || x === undefined || !Number.isFinite(x) ? undefined : String(x);
}

/** All series of one metric name in a summary (keys are `name` or `name{labels}`). */
function seriesOf<T>(table: Record<string, T>, name: string): T | undefined {
  for (const [key, value] of Object.entries(table)) if (key === name || key.startsWith(`${name}{`)) return value;
  return undefined;
}

export function lpgServerMetrics(summary: ServerMetricsSummary | null, names: readonly string[]): Record<string, LpgServerMetric> {
  const out: Record<string, LpgServerMetric> = {};
  if (summary === null) return out;
  for (const name of names) {
    const scraped = [name, ...(LPG_METRIC_FALLBACKS[name] ?? [])].find((n) => seriesOf(summary.gauges, n) !== undefined || seriesOf(summary.histograms, n) !== undefined) ?? name;
    const gauge = seriesOf(summary.gauges, scraped);
    const histogram = seriesOf(summary.histograms, scraped);
    const entry: Record<string, string | undefined> = {};
    if (gauge !== undefined) {
      Object.assign(entry, { Mean: promValue(gauge.mean), Median: promValue(gauge.median), Sd: promValue(gauge.sd), Min: promValue(gauge.min), Max: promValue(gauge.max), P90: promValue(gauge.p90), P99: promValue(gauge.p99) });
    } else if (histogram !== undefined) {
      Object.assign(entry, { Mean: promValue(histogram.mean), Median: promValue(histogram.median), Min: promValue(histogram.min), Max: promValue(histogram.max), P90: promValue(histogram.p90), P99: promValue(histogram.p99) });
    } else {
      continue;
    }
    out[name] = Object.fromEntries(Object.entries(entry).filter(([, v]) => v !== undefined)) as LpgServerMetric;
  }
  return out;
}

export function lpgReport(input: LpgInput): LpgReport {
  const { samples } = input;
  const benchmarkTime = samples.windowSec;
  const perMinute = (total: number): number | null => (benchmarkTime !== null && benchmarkTime > 0 ? (60 * total) / benchmarkTime : null);
  const latencySec = Array.from(samples.latencyMs, (ms) => ms / 1000);
  const inputLens = Array.from(samples.promptTokens);
  const outputLens = Array.from(samples.outputTokens);
  const totalOutput = outputLens.reduce((a, b) => a + b, 0);
  const totalInput = inputLens.reduce((a, b) => a + b, 0);
  const perToken: number[] = [];
  const perOutputTokenMs: number[] = [];
  latencySec.forEach((latency, i) => {
    const tokens = (inputLens[i] as number) + (outputLens[i] as number);
    if (tokens > 0) perToken.push(latency / tokens);
    if ((outputLens[i] as number) > 0) perOutputTokenMs.push((1000 * latency) / (outputLens[i] as number));
  });
  const latency = finiteStats(latencySec.map((s) => 1000 * s));
  const inputLength = finiteStats(inputLens);
  const outputLength = finiteStats(outputLens);
  const tpot = finiteStats(perOutputTokenMs);
  const rate = finite(input.requestRate);
  const throughput = benchmarkTime !== null && benchmarkTime > 0 ? samples.attempted / benchmarkTime : null;
  const names = input.metricNames ?? (input.backend === 'vllm' ? LPG_VLLM_METRICS : LPG_JETSTREAM_METRICS);
  const serverMetrics = lpgServerMetrics(input.serverMetrics, names);
  const ttft = input.stream
    ? flatStats('TTFT', finiteStats(Array.from(samples.ttftMs).filter((ms) => !Number.isNaN(ms)).map((ms) => ms / 1000)))
    : {};
  return {
    metrics: {
      num_prompts: samples.attempted,
      request_rate: rate,
      server_metrics: serverMetrics,
      benchmark_time: benchmarkTime,
      throughput,
      total_output_token: totalOutput,
      output_tokens_per_min: perMinute(totalOutput),
      total_input_tokens: totalInput,
      input_tokens_per_min: perMinute(totalInput),
      total_tokens: totalInput + totalOutput,
      tokens_per_min: perMinute(totalInput + totalOutput),
      ...flatStats('per_token_latency', finiteStats(perToken)),
      ...flatStats('latency', latency),
      ...flatStats('per_output_token_latency', tpot),
      ...flatStats('input_len', inputLength),
      ...flatStats('output_len', outputLength),
      ...ttft,
      num_prompts_attempted: samples.attempted,
      num_prompts_succeeded: samples.latencyMs.length,
      throughput_rps: throughput,
      ...lpgErrorCounts(samples.failuresByKind, samples.disconnectedAfterHeaders),
    },
    dimensions: { date: lpgDate(input.startEpochMs), backend: input.backend, model_id: input.modelId, tokenizer_id: input.tokenizerId },
    config: { model: input.modelId, num_models: 1, model_server: input.backend, start_time: lpgStartTime(input.startEpochMs) },
    summary_stats: {
      stats: [
        {
          request_rate: rate,
          request_latency: latency,
          throughput: { mean: throughput },
          input_length: inputLength,
          output_length: outputLength,
          tpot,
          model_server_metrics: Object.entries(serverMetrics).map(([Name, stats]) => ({ Name, ...stats })),
        },
      ],
    },
  };
}

/** The generator's file name: `<prefix>-<backend>-<rate>qps-<date>-<model with / as ->.json`. */
export function lpgFileName(report: LpgReport, requestRate: number | null, prefix = 'benchmark'): string {
  const rate = requestRate === null || !Number.isFinite(requestRate) ? 'inf' : Number.isInteger(requestRate) ? `${requestRate}.0` : String(requestRate);
  return `${prefix}-${report.dimensions.backend}-${rate}qps-${report.dimensions.date}-${report.dimensions.model_id.replaceAll('/', '-')}.json`;
}

/**
 * One LPG file's worth of a run. The generator runs one request rate per file (its
 * latency_throughput_curve.sh sweeps rates by running it once per rate), so a run's measured
 * stages are grouped by rate: each open-loop rate gets its own file (stages repeating a rate
 * share it), and closed-loop stages, which have no request rate, share one file under `inf`.
 */
export interface LpgGroup {
  /** Requests/s; null for closed-loop stages (named `inf`, as the generator names its one unpaced load). */
  requestRate: number | null;
  stages: number[];
}

export function lpgGroups(stageRates: ReadonlyMap<number, number | null>): LpgGroup[] {
  const groups: LpgGroup[] = [];
  for (const [stage, rate] of [...stageRates].filter(([s]) => s >= 0).sort((a, b) => a[0] - b[0])) {
    const requestRate = rate !== null && Number.isFinite(rate) ? rate : null;
    const group = groups.find((g) => g.requestRate === requestRate);
    if (group === undefined) groups.push({ requestRate, stages: [stage] });
    else group.stages.push(stage);
  }
  return groups;
}

/** Everything a run knows, turned into the generator's reports and their file names. */
export interface LpgRunContext {
  api: string;
  stream: boolean;
  model: string;
  tokenizerId?: string;
  /** The run's start: a file's date when its stages measured nothing. */
  startEpochMs: number;
  stages: ReadonlyMap<number, StageSamples>;
  /** Each measured stage's intended requests/s; null for a closed loop. */
  stageRates: ReadonlyMap<number, number | null>;
  /** The server-metrics summary over exactly these stages' scrapes; absent or null when nothing was scraped. */
  serverMetricsOver?: ((stages: readonly number[]) => ServerMetricsSummary | null) | null;
}

export function lpgReportsForRun(run: LpgRunContext): Array<{ fileName: string; report: LpgReport }> {
  const backend = run.api.startsWith('jetstream') ? 'jetstream' : 'vllm';
  return lpgGroups(run.stageRates).map(({ requestRate, stages }) => {
    const samples = new Map(stages.flatMap((stage) => (run.stages.has(stage) ? [[stage, run.stages.get(stage) as StageSamples] as const] : [])));
    // Each file's date is when its own requests started, as each generator run stamps its own.
    const window = [...samples.values()].reduce((joined, s) => widen(joined, s.window), EMPTY_WINDOW);
    const report = lpgReport({
      samples: lpgSamplesFromStages(samples),
      requestRate,
      // JetStream's HTTP and gRPC surfaces always stream.
      stream: run.stream || run.api === 'jetstream-http' || run.api === 'jetstream-grpc',
      backend,
      modelId: run.model,
      tokenizerId: run.tokenizerId ?? run.model,
      startEpochMs: window.firstStartMs === null ? run.startEpochMs : window.baseEpochMs + window.firstStartMs,
      serverMetrics: run.serverMetricsOver?.(stages) ?? null,
    });
    return { fileName: lpgFileName(report, requestRate), report };
  });
}
