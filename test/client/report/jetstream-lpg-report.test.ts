/**
 * client/report/lpg-report.ts against a real latency-profile-generator report
 * (test/fixtures/lpg/lpg-report-jetstream.json): the same keys at every level, the same value
 * types (numbers, and strings for server metrics), the generator's units, and never NaN or
 * Infinity in the JSON.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { RequestRecord } from '../../../client/record/request-record.ts';
import { EPOCH_TIMELINE, StageSamples } from '../../../client/record/stage-samples.ts';
import { LPG_ERROR_KEYS, LPG_VLLM_METRICS, lpgDate, lpgErrorKey, lpgFileName, lpgReport, lpgSamplesFromRecords, lpgSamplesFromStages, lpgStartTime, type LpgInput } from '../../../client/report/lpg-report.ts';
import type { ServerMetricsSummary } from '../../../client/scrape/metric-summary.ts';
import { requestMetrics } from '../../../contracts/metrics.ts';

type Json = Record<string, unknown>;
const FIXTURE = JSON.parse(readFileSync(new URL('../../fixtures/lpg/lpg-report-jetstream.json', import.meta.url), 'utf8')) as Json;

function record(index: number, startMs: number, latencyMs: number, promptTokens: number, outputTokens: number, failed = false): RequestRecord {
  const events = Array.from({ length: outputTokens }, (_, i) => ({ atMs: startMs + 100 + i * 10, tokens: 1 }));
  const endMs = startMs + latencyMs;
  return {
    index,
    requestId: `r-${index}`,
    stage: 0,
    warmup: false,
    scheduledMs: startMs,
    startMs,
    firstByteMs: startMs + 1,
    endMs,
    status: failed ? 503 : 200,
    failure: failed ? { kind: 'http_503', message: 'queue full' } : null,
    events,
    tokensPerEventSource: 'dialect',
    outputTokens,
    outputTokensSource: 'events',
    tokenCountMismatch: false,
    promptTokens,
    promptTokensSource: 'client',
    usage: null,
    finishReason: null,
    finishReasonMs: null,
    metrics: failed ? null : requestMetrics({ startMs, endMs, events, outputTokens }),
  };
}

const gauge = (values: Partial<Record<'mean' | 'median' | 'sd' | 'min' | 'max' | 'p90' | 'p99', number>>) => ({
  samples: 5, mean: 0.5, median: 0.5, sd: 0.1, min: 0, max: 1, p90: 0.9, p99: 0.99, ...values,
});
const histogram = { count: 4, sum: 1, mean: 0.25, median: 0.2, p90: 0.4, p99: 0.5, min: 0.01, max: 0.5 };

const SCRAPES: ServerMetricsSummary = {
  scrapes: 5,
  window_sec: 4,
  gauges: {
    'jetstream_slots_used_percentage{id="pod",idx="0"}': gauge({ mean: 0.80625 }),
    'jetstream_prefill_backlog_size{id="pod"}': gauge({ mean: 62.6 }),
  },
  counters: {},
  histograms: {
    'jetstream_time_to_first_token{id="pod"}': histogram,
    'jetstream_time_per_output_token{id="pod"}': histogram,
    'jetstream_time_per_request{id="pod"}': histogram,
  },
};

const RECORDS = [record(0, 1000, 2000, 10, 20), record(1, 1500, 3000, 30, 40), record(2, 2000, 1000, 5, 10), record(3, 2500, 10, 5, 0, true)];

const INPUT: LpgInput = {
  samples: lpgSamplesFromRecords(RECORDS),
  requestRate: 20,
  stream: false,
  backend: 'jetstream',
  modelId: 'google/gemma-7b',
  tokenizerId: 'google/gemma-7b',
  startEpochMs: Date.UTC(2024, 8, 25, 22, 9, 23),
  serverMetrics: SCRAPES,
};

/** The shape of a JSON value: objects by key, arrays by their first element, leaves by type. */
function shape(value: unknown): unknown {
  if (Array.isArray(value)) return [shape(value[0])];
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shape(v)]));
  return typeof value;
}

/** Keys the newer generator writes that the fixture's version did not, after the fixture's own. */
const NEWER_METRIC_KEYS = ['num_prompts_attempted', 'num_prompts_succeeded', 'throughput_rps', ...LPG_ERROR_KEYS];

describe('lpgReport, key by key against a real report', () => {
  const report = JSON.parse(JSON.stringify(lpgReport(INPUT))) as Json;
  const fixtureKeys = (value: Json): Json => Object.fromEntries(Object.entries(value).filter(([k]) => !NEWER_METRIC_KEYS.includes(k)));

  it.each(['dimensions', 'summary_stats'])('%s has exactly the real report’s keys and value types', (section) => {
    expect(shape(report[section])).toEqual(shape(FIXTURE[section]));
  });

  it('config has the real report’s keys, and the newer generator’s num_models and start_time in its order (review 22)', () => {
    const config = report.config as Json;
    expect(Object.keys(config)).toEqual(['model', 'num_models', 'model_server', 'start_time']);
    expect(shape(Object.fromEntries(Object.entries(config).filter(([k]) => k in (FIXTURE.config as Json))))).toEqual(shape(FIXTURE.config));
    expect(config.num_models).toBe(1);
    // Timestamp.FromDatetime of a naive local datetime: the local wall clock read as UTC, microseconds as nanos.
    const offsetS = -new Date(INPUT.startEpochMs).getTimezoneOffset() * 60;
    expect(config.start_time).toEqual({ seconds: INPUT.startEpochMs / 1000 + offsetS, nanos: 0 });
    expect(lpgStartTime(1727302163123.4567)).toEqual({ seconds: 1727302163 - new Date(1727302163123).getTimezoneOffset() * 60, nanos: 123457000 });
  });

  it('metrics has every key and value type of the real report, plus only the newer generator’s additions', () => {
    expect(shape(fixtureKeys(report.metrics as Json))).toEqual(shape(FIXTURE.metrics));
    for (const key of NEWER_METRIC_KEYS) expect(typeof (report.metrics as Json)[key]).toBe('number');
  });

  it('keeps the real report’s key order in metrics, the additions after it', () => {
    expect(Object.keys(report.metrics as Json)).toEqual([...Object.keys(FIXTURE.metrics as Json), ...NEWER_METRIC_KEYS]);
  });

  it('makes failures visible: attempted, succeeded, requests/s and errors per kind', () => {
    const m = report.metrics as Record<string, number>;
    expect(m.num_prompts_attempted).toBe(4);
    expect(m.num_prompts_succeeded).toBe(3);
    expect(m.throughput_rps).toBe(m.throughput);
    // The one failure is an HTTP 503: the generator fails it while parsing the error body.
    expect(Object.fromEntries(LPG_ERROR_KEYS.map((k) => [k, m[k]]))).toEqual({
      ClientConnectorError: 0,
      TimeoutError: 0,
      ContentTypeError: 0,
      ClientOSError: 0,
      ServerDisconnectedError: 0,
      unknown_error: 1,
    });
  });

  it('maps each failure kind onto the aiohttp error the generator would have counted', () => {
    expect(lpgErrorKey('connect_error')).toBe('ClientConnectorError');
    expect(lpgErrorKey('timeout')).toBe('TimeoutError');
    expect(lpgErrorKey('disconnected')).toBe('ServerDisconnectedError');
    for (const kind of ['http_429', 'stream_error', 'malformed', 'truncated', 'worker_crashed']) expect(lpgErrorKey(kind)).toBe('unknown_error');
    const failed = [record(0, 0, 10, 5, 0, true), record(1, 0, 10, 5, 0, true), record(2, 0, 10, 5, 0, true)];
    failed[0] = { ...(failed[0] as RequestRecord), failure: { kind: 'timeout', message: 'timed out' } };
    failed[1] = { ...(failed[1] as RequestRecord), failure: { kind: 'connect_error', message: 'refused' } };
    const m = lpgReport({ ...INPUT, samples: lpgSamplesFromRecords(failed) }).metrics as Record<string, number>;
    expect([m.TimeoutError, m.ClientConnectorError, m.unknown_error, m.num_prompts_succeeded, m.num_prompts_attempted]).toEqual([1, 1, 1, 0, 3]);
  });

  it('a disconnect after the response headers is aiohttp\'s ClientPayloadError: unknown_error, from records and from merged samples alike (audit 9-Y3)', () => {
    const cut = (index: number, status: number | null): RequestRecord => ({ ...record(index, 0, 10, 5, 0, true), status, failure: { kind: 'disconnected', message: 'socket closed' } });
    const records = [cut(0, null), cut(1, 200), cut(2, 200)];
    const fromRecords = lpgReport({ ...INPUT, samples: lpgSamplesFromRecords(records) }).metrics as Record<string, number>;
    expect([fromRecords.ServerDisconnectedError, fromRecords.unknown_error]).toEqual([1, 2]);
    const halves = [new StageSamples(), new StageSamples()];
    records.forEach((r, i) => halves[i % 2]?.add(r, EPOCH_TIMELINE));
    const merged = StageSamples.fromJSON(JSON.parse(JSON.stringify(StageSamples.merge(halves).toJSON())));
    const fromStages = lpgReport({ ...INPUT, samples: lpgSamplesFromStages(new Map([[0, merged]])) }).metrics as Record<string, number>;
    expect([fromStages.ServerDisconnectedError, fromStages.unknown_error]).toEqual([1, 2]);
  });

  it('reads vLLM 0.11’s kv_cache_usage_perc for the gpu_cache_usage_perc the generator asks for', () => {
    const renamed: ServerMetricsSummary = {
      ...SCRAPES,
      gauges: { 'vllm:kv_cache_usage_perc{engine="0",model_name="m"}': gauge({ mean: 0.25 }), 'vllm:num_requests_waiting{engine="0",model_name="m"}': gauge({ mean: 3 }) },
      histograms: {},
    };
    const server = lpgReport({ ...INPUT, backend: 'vllm', serverMetrics: renamed }).metrics.server_metrics as Record<string, Record<string, string>>;
    expect(Object.keys(server)).toEqual(['vllm:gpu_cache_usage_perc', 'vllm:num_requests_waiting']);
    expect(server['vllm:gpu_cache_usage_perc']?.Mean).toBe('0.25');
    // The old name wins where a server still exports it.
    const both = { ...renamed, gauges: { ...renamed.gauges, 'vllm:gpu_cache_usage_perc{engine="0"}': gauge({ mean: 0.75 }) } };
    const old = lpgReport({ ...INPUT, backend: 'vllm', serverMetrics: both }).metrics.server_metrics as Record<string, Record<string, string>>;
    expect(old['vllm:gpu_cache_usage_perc']?.Mean).toBe('0.75');
  });

  it('uses the generator’s units: latency in ms, per-token latency in s, throughput in requests/s', () => {
    const m = report.metrics as Record<string, number>;
    expect(m.num_prompts).toBe(4);
    expect(m.benchmark_time).toBe(3.5);
    expect(m.throughput).toBeCloseTo(4 / 3.5, 12);
    expect(m.total_output_token).toBe(70);
    expect(m.total_input_tokens).toBe(45);
    expect(m.output_tokens_per_min).toBeCloseTo((60 * 70) / 3.5, 9);
    expect(m.min_latency).toBe(1000);
    expect(m.max_latency).toBe(3000);
    expect(m.median_latency).toBe(2000);
    expect(m.min_per_token_latency).toBeCloseTo(3 / 70, 12);
    expect(m.max_per_output_token_latency).toBe(100);
    expect(m.avg_output_len).toBeCloseTo(70 / 3, 12);
    const summary = (report.summary_stats as { stats: Array<Record<string, Json>> }).stats[0] as Record<string, Json>;
    expect(summary.request_latency).toMatchObject({ mean: m.avg_latency, p99: m.p99_latency });
    expect(summary.tpot).toMatchObject({ median: m.median_per_output_token_latency });
    expect(summary.throughput).toEqual({ mean: m.throughput });
    expect(report.dimensions).toMatchObject({ backend: 'jetstream', model_id: 'google/gemma-7b', date: lpgDate(INPUT.startEpochMs) });
  });

  it('writes server metrics as the Prometheus API strings, gauges with Sd and histograms without', () => {
    const server = (report.metrics as Json).server_metrics as Record<string, Record<string, string>>;
    expect(server.jetstream_slots_used_percentage?.Mean).toBe('0.80625');
    expect(Object.keys(server.jetstream_time_to_first_token ?? {})).toEqual(['Mean', 'Median', 'Min', 'Max', 'P90', 'P99']);
    const listed = ((report.summary_stats as { stats: Array<{ model_server_metrics: Json[] }> }).stats[0]?.model_server_metrics ?? []).map((e) => e.Name);
    expect(listed).toEqual(Object.keys(server));
  });

  it('adds the TTFT statistics (seconds) to a streamed run', () => {
    const streamed = lpgReport({ ...INPUT, stream: true }).metrics as Record<string, number>;
    expect(Object.keys(streamed).filter((k) => k.endsWith('_TTFT'))).toEqual(['avg_TTFT', 'median_TTFT', 'sd_TTFT', 'min_TTFT', 'max_TTFT', 'p90_TTFT', 'p99_TTFT']);
    expect(streamed.avg_TTFT).toBeCloseTo(0.1, 12);
  });

  it('never writes NaN or Infinity: empty samples and an infinite rate are null', () => {
    const empty = lpgReport({ ...INPUT, samples: lpgSamplesFromRecords([RECORDS[3] as RequestRecord]), requestRate: Infinity, stream: true, serverMetrics: null });
    const text = JSON.stringify(empty);
    expect(text).not.toMatch(/NaN|Infinity/);
    const m = empty.metrics;
    expect(m.request_rate).toBeNull();
    expect(m.avg_latency).toBeNull();
    expect(m.p99_TTFT).toBeNull();
    expect(lpgFileName(empty, Infinity)).toMatch(/^benchmark-jetstream-infqps-\d{8}-\d{6}-google-gemma-7b\.json$/);
  });
});

describe('lpgSamplesFromStages', () => {
  it('times a file of two stages of one rate by their own spans, not the stage run between them (audit 11-R13-4)', () => {
    const early = new StageSamples();
    const late = new StageSamples();
    early.add({ ...(RECORDS[0] as (typeof RECORDS)[number]), startMs: 0, endMs: 1000 }, EPOCH_TIMELINE);
    late.add({ ...(RECORDS[1] as (typeof RECORDS)[number]), stage: 2, startMs: 5000, endMs: 6000 }, EPOCH_TIMELINE);
    expect(lpgSamplesFromStages(new Map([[0, early], [2, late]])).windowSec).toBe(2);
  });

  it('gives the same report from a run’s compact stage samples as from its records', () => {
    const first = new StageSamples();
    const second = new StageSamples();
    // Two stages of one rate: the file's time is each stage's span added up, from either source.
    const staged = RECORDS.map((r, i) => ({ ...r, stage: i < 2 ? 0 : 1 }));
    staged.forEach((r) => (r.stage === 0 ? first : second).add(r, EPOCH_TIMELINE));
    const fromStages = lpgReport({ ...INPUT, samples: lpgSamplesFromStages(new Map([[0, first], [1, second]])) });
    expect(fromStages).toEqual(lpgReport({ ...INPUT, samples: lpgSamplesFromRecords(staged) }));
  });
});
