/**
 * The lifecycle report's layout against what inference-perf writes and reads: whole-null empty
 * samples, `median` beside `p50`, no `requested_rate` for closed loops, send_duration as
 * inference-perf computes it, both token-count sources, and goodput in seconds with
 * inference-perf's `successes.goodput_metrics`. The console table copes with every null.
 */
import { describe, expect, it } from 'vitest';
import { requestMetrics } from '../../../contracts/metrics.ts';
import type { FailureKind, RequestRecord } from '../../../client/record/request-record.ts';
import { EPOCH_TIMELINE, StageSamples } from '../../../client/record/stage-samples.ts';
import { consoleSummary } from '../../../client/report/console-summary.ts';
import { buildRunReports } from '../../../client/report/run-reports.ts';
import { lifecycleReport, lifecycleReportFromSamples, percentileKey } from '../../../client/report/lifecycle-report.ts';

/** A success with one token per event at the given times (ms), or a failure when `failed`. */
function record(index: number, startMs: number, eventTimes: number[], over: Partial<RequestRecord> = {}): RequestRecord {
  const events = eventTimes.map((atMs) => ({ atMs, tokens: 1 }));
  const endMs = over.endMs ?? (eventTimes.at(-1) ?? startMs) + 1;
  const failed = over.failure !== undefined && over.failure !== null;
  return {
    index,
    requestId: `r-${index}`,
    stage: 0,
    warmup: false,
    scheduledMs: startMs,
    startMs,
    firstByteMs: eventTimes[0] ?? null,
    endMs,
    status: failed ? 500 : 200,
    failure: null,
    events: failed ? [] : events,
    tokensPerEventSource: 'continuous_usage',
    outputTokens: failed ? 0 : events.length,
    outputTokensSource: 'usage',
    tokenCountMismatch: false,
    promptTokens: 10,
    promptTokensSource: 'usage',
    usage: null,
    finishReason: 'length',
    finishReasonMs: endMs,
    metrics: failed ? null : requestMetrics({ startMs, endMs, events, outputTokens: events.length }),
    ...over,
  };
}

const failure = { kind: 'http_500' as const, message: 'boom' };

/** Every distribution-shaped object whose statistics are all null: inference-perf's readers take such a dict for data. */
function allNullObjects(value: unknown, path = '$'): string[] {
  if (value === null || typeof value !== 'object') return [];
  const entries = Object.entries(value);
  if ('mean' in value && entries.every(([, v]) => v === null)) return [path];
  return entries.flatMap(([k, v]) => allNullObjects(v, `${path}.${k}`));
}

describe('empty samples', () => {
  it('a stage whose requests all failed writes each empty distribution as null, not as an object of nulls', () => {
    const report = lifecycleReport([record(0, 0, [], { failure, endMs: 40 }), record(1, 10, [], { failure, endMs: 60 })], { intendedRate: 5 });
    expect(report.successes.latency.request_latency).toBeNull();
    expect(report.successes.latency.time_to_first_token).toBeNull();
    expect(report.successes.prompt_len).toBeNull();
    expect(report.successes.tokens_per_event).toBeNull();
    expect(report.failures.request_latency).toMatchObject({ min: 0.04, max: 0.05 });
    expect(allNullObjects(JSON.parse(JSON.stringify(report)))).toEqual([]);
  });

  it('a run without failures writes the failure distributions as null', () => {
    const report = lifecycleReport([record(0, 0, [5, 9])], { intendedRate: 5 });
    expect(report.failures).toEqual({ count: 0, by_kind: {}, request_latency: null, prompt_len: null, prompt_tokens: { total: 0, cached: null, uncached: null }, by_label: {} });
  });

  it('carries inference-perf’s newer keys: benchmark_time_seconds, the token-usage blocks, failures.by_label (review 20)', () => {
    const ok = record(0, 0, [5, 9]);
    const failed = record(1, 2, [8], { failure: { kind: 'http_503', message: 'Service Unavailable' } });
    const report = lifecycleReport([ok, failed], { intendedRate: 5 });
    expect(report.benchmark_time_seconds).toBe(Math.max(ok.endMs, failed.endMs) / 1000 - Math.min(ok.startMs, failed.startMs) / 1000);
    expect(report.successes.prompt_tokens).toEqual({ total: ok.promptTokens, cached: null, uncached: null, ...report.successes.prompt_len });
    expect(report.successes.output_tokens).toEqual({ total: 2, ...report.successes.output_len });
    expect(report.failures.by_label).toEqual({ '503 - Service Unavailable': { count: 1, messages: [{ message: 'Service Unavailable' }] } });
    expect(report.failures.prompt_tokens).toEqual({ total: failed.promptTokens, cached: null, uncached: null, ...report.failures.prompt_len });
    // Most frequent first, then by name, whatever order the kinds came in (merged reports write the same JSON).
    const mixed = lifecycleReport(
      [record(2, 0, [1], { failure: { kind: 'timeout', message: 't' } }), record(3, 0, [1], { failure: { kind: 'http_503', message: 'a' } }), record(4, 0, [1], { failure: { kind: 'http_503', message: 'b' } })],
      { intendedRate: 5 },
    );
    expect(Object.keys(mixed.failures.by_label)).toEqual(['503 - Service Unavailable', 'Timeout']);
    expect(Object.keys(mixed.failures.by_kind)).toEqual(['http_503', 'timeout']);
    expect(lifecycleReport([], { intendedRate: 5 }).benchmark_time_seconds).toBeNull();
  });

  it('failures.by_label uses inference-perf’s concise labels (make_concise_label), pooling kinds of one label (review 23: our kinds)', () => {
    const failed = (i: number, kind: FailureKind, message: string): RequestRecord => record(i, 0, [1], { failure: { kind, message } });
    const report = lifecycleReport(
      [
        failed(0, 'http_429', 'slow down'),
        failed(1, 'http_429', 'slow down'),
        failed(2, 'http_400', "This model's maximum context length is 2048 tokens."),
        failed(3, 'http_404', 'nothing here'),
        failed(4, 'timeout', 'no answer within 5 s'),
        failed(5, 'connect_error', 'ECONNREFUSED'),
        failed(6, 'disconnected', 'the server closed the connection'),
      ],
      { intendedRate: 5 },
    );
    expect(report.failures.by_label).toEqual({
      '429 - Rate Limit': { count: 2, messages: [{ message: 'slow down' }] },
      '400 - Context Window': { count: 1, messages: [{ message: "This model's maximum context length is 2048 tokens." }] },
      '404 - other': { count: 1, messages: [{ message: 'nothing here' }] },
      'Connection Error': { count: 1, messages: [{ message: 'ECONNREFUSED' }] },
      Timeout: { count: 1, messages: [{ message: 'no answer within 5 s' }] },
      disconnected: { count: 1, messages: [{ message: 'the server closed the connection' }] },
    });
  });

  it('each failure is labelled by its own message, not its kind’s samples; merged and older raw samples agree (diff review 23)', () => {
    const failed = (i: number, message: string): RequestRecord => record(i, 0, [1], { failure: { kind: 'http_400', message } });
    const records = [
      ...Array.from({ length: 97 }, (_, i) => failed(i, `This model's maximum context length is 2048 tokens. However, you requested ${3000 + i} tokens.`)),
      ...Array.from({ length: 3 }, (_, i) => failed(97 + i, `Requested sample logprobs of ${21 + i}, which is greater than max allowed: 20`)),
    ];
    const counts = (report: ReturnType<typeof lifecycleReport>) => Object.fromEntries(Object.entries(report.failures.by_label).map(([label, { count }]) => [label, count]));
    expect(counts(lifecycleReport(records, { intendedRate: 5 }))).toEqual({ '400 - Context Window': 97, '400 - other': 3 });
    // Raw samples round-trip and merge with their labels.
    const half = (from: number, to: number) => {
      const samples = new StageSamples();
      for (const r of records.slice(from, to)) samples.add(r, EPOCH_TIMELINE);
      return StageSamples.fromJSON(JSON.parse(JSON.stringify(samples.toJSON())));
    };
    const merged = StageSamples.merge([half(0, 50), half(50, 100)]);
    expect(counts(lifecycleReportFromSamples(merged, { intendedRate: 5 }))).toEqual({ '400 - Context Window': 97, '400 - other': 3 });
    // A file written before labels were kept: each kind under its first sample's label.
    const { failuresByLabel: _labels, ...older } = half(0, 100).toJSON();
    expect(counts(lifecycleReportFromSamples(StageSamples.fromJSON(older), { intendedRate: 5 }))).toEqual({ '400 - other': 100 });
    // Merged with such a file, the newer parts keep their own labels; only the older part's are derived (diff review 23).
    const { failuresByLabel: _none, ...olderEmpty } = new StageSamples().toJSON();
    expect(counts(lifecycleReportFromSamples(StageSamples.merge([half(0, 100), StageSamples.fromJSON(olderEmpty)]), { intendedRate: 5 }))).toEqual({ '400 - Context Window': 97, '400 - other': 3 });
    const { failuresByLabel: _some, ...olderThree } = half(97, 100).toJSON();
    expect(counts(lifecycleReportFromSamples(StageSamples.merge([half(0, 97), StageSamples.fromJSON(olderThree)]), { intendedRate: 5 }))).toEqual({ '400 - Context Window': 97, '400 - other': 3 });
  });

  it('one-token answers: TPOT and ITL are null, TTFT is not', () => {
    const report = lifecycleReport([record(0, 0, [5]), record(1, 2, [8])], { intendedRate: null });
    expect(report.successes.latency.time_per_output_token).toBeNull();
    expect(report.successes.latency.inter_token_latency).toBeNull();
    expect(report.successes.latency.time_to_first_token).not.toBeNull();
  });

  it('the console table prints dashes for null distributions and a missing rate', () => {
    const failedStage = lifecycleReport([record(0, 0, [], { failure, endMs: 40 })], { intendedRate: null, concurrency: 2, loadType: 'concurrency' });
    const text = consoleSummary(failedStage, new Map([[0, failedStage], [1, failedStage]]));
    expect(text).toMatch(/time to first token\s+— +— +— +— +—/);
    expect(text).toMatch(/TTFT p50 — ms/);
    const empty = lifecycleReportFromSamples(new StageSamples(), { intendedRate: null });
    expect(consoleSummary(empty)).toMatch(/schedule delay p99 — ms/);
  });

  it('a failure whose server sent an empty body says so, and prefers a sample that is not empty (review 23: "(e.g. )")', () => {
    const empty = (i: number, message: string): RequestRecord => record(i, 0, [], { failure: { kind: 'http_503', message }, endMs: 40 });
    expect(consoleSummary(lifecycleReport([empty(0, '')], { intendedRate: null }))).toContain('failures http_503: 1 (an empty message)');
    expect(consoleSummary(lifecycleReport([empty(0, ''), empty(1, 'busy')], { intendedRate: null }))).toContain('failures http_503: 2 (e.g. busy)');
  });

  it('a server\'s failure message is printed with its control characters escaped: no escape sequence or line break reaches the terminal (audit 17-H3)', () => {
    const hostile = { kind: 'http_500' as const, message: '\u001b[2J\u001b[31mFAKE: all requests succeeded\r\n\u009b\u007f' };
    const text = consoleSummary(lifecycleReport([record(0, 0, [], { failure: hostile, endMs: 40 })], { intendedRate: null, concurrency: 1, loadType: 'concurrency' }));
    expect(text).toContain('failures http_500: 1 (e.g. \\u001b[2J\\u001b[31mFAKE: all requests succeeded\\u000d\\u000a\\u009b\\u007f)');
    expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
  });

  it('a stage line names its load once: "concurrency 2", "constant intended 5.00 req/s" (audit 9-X4 F4)', () => {
    const closed = lifecycleReport([record(0, 0, [5])], { intendedRate: null, concurrency: 2, loadType: 'concurrency' });
    const open = lifecycleReport([record(0, 0, [5])], { intendedRate: 5, loadType: 'constant' });
    const text = consoleSummary(closed, new Map([[0, closed], [1, open]]));
    expect(text).toMatch(/stage 0: concurrency 2, achieved/);
    expect(text).toMatch(/stage 1: constant intended 5\.00 req\/s, achieved/);
  });
});

describe('run reports', () => {
  it('a run whose stages never ran states no load type (not "mixed"); stages of two kinds are "mixed" (audit 9-X4 F5)', () => {
    const probeOnly = buildRunReports(new Map(), new Map([[-1, { loadType: 'constant', intendedRate: 50, concurrency: null }]]), null);
    expect(probeOnly.summary.load_summary).not.toHaveProperty('load_type');
    const contexts = new Map([
      [0, { loadType: 'constant', intendedRate: 5, concurrency: null }],
      [1, { loadType: 'concurrency', intendedRate: null, concurrency: 2 }],
    ]);
    expect(buildRunReports(new Map(), contexts, null).summary.load_summary.load_type).toBe('mixed');
  });
});

describe('distribution keys', () => {
  it('every distribution carries median (inference-perf) equal to p50 (older layout), and every other key', () => {
    const report = lifecycleReport([record(0, 0, [5, 9, 20]), record(1, 3, [10, 12]), record(2, 6, [], { failure })], { intendedRate: 5 });
    const distributions = [
      report.load_summary.schedule_delay,
      ...Object.values(report.successes.latency),
      report.successes.prompt_len,
      report.successes.output_len,
      report.successes.tokens_per_event,
      report.failures.request_latency,
      report.failures.prompt_len,
    ];
    for (const d of distributions) {
      expect(d).not.toBeNull();
      expect(Object.keys(d ?? {}).sort()).toEqual(['max', 'mean', 'median', 'min', 'p10', 'p50', 'p90', 'p99']);
      expect(d?.median).toBe(d?.p50);
    }
  });
});

describe('load summary', () => {
  it('a closed loop has no requested_rate key at all (inference-perf reads a null as a number and fails)', () => {
    const report = lifecycleReport([record(0, 0, [5])], { intendedRate: null, concurrency: 4, loadType: 'concurrency' });
    expect(report.load_summary).not.toHaveProperty('requested_rate');
    expect(report.load_summary.intended_rate).toBeNull();
    expect(JSON.stringify(report)).not.toMatch(/requested_rate/);
    expect(lifecycleReport([record(0, 0, [5])], { intendedRate: 3 }).load_summary).toMatchObject({ intended_rate: 3, requested_rate: 3 });
  });

  it('send_duration is last start − first start; achieved rate still counts from the first scheduled time', () => {
    const late = record(0, 100, [105], { scheduledMs: 50 });
    const report = lifecycleReport([late, record(1, 200, [205], { scheduledMs: 200 }), record(2, 350, [355], { scheduledMs: 300 })], { intendedRate: 10 });
    expect(report.load_summary.send_duration).toBe(0.25);
    expect(report.load_summary.achieved_rate).toBe(2 / 0.3);
  });
});

describe('token count sources', () => {
  it('counts the tokens-per-event source and the output-token (N) source separately', () => {
    const report = lifecycleReport(
      [
        record(0, 0, [5, 6], { tokensPerEventSource: 'tokenizer', outputTokensSource: 'usage' }),
        record(1, 0, [5, 6], { tokensPerEventSource: 'tokenizer', outputTokensSource: 'events' }),
        record(2, 0, [5, 6], { tokensPerEventSource: 'continuous_usage', outputTokensSource: 'usage' }),
      ],
      { intendedRate: null },
    );
    expect(report.successes.tokens_per_event_source).toEqual({ tokenizer: 2, continuous_usage: 1 });
    expect(report.successes.output_tokens_source).toEqual({ usage: 2, events: 1 });
    expect(report.successes).not.toHaveProperty('token_count_source');
  });

  it('raw samples written before the split still merge: their tokenCountSources are the tokens-per-event counts', () => {
    const samples = new StageSamples();
    samples.add(record(0, 0, [5, 6], { tokensPerEventSource: 'dialect' }), EPOCH_TIMELINE);
    const { tokensPerEventSources, outputTokensSources, ...legacy } = samples.toJSON();
    expect(tokensPerEventSources).toEqual({ dialect: 1 });
    expect(outputTokensSources).toEqual({ usage: 1 });
    const back = StageSamples.fromJSON({ ...legacy, tokenCountSources: { dialect: 1 } });
    expect(back.tokensPerEventSources).toEqual({ dialect: 1 });
    expect(back.outputTokensSources).toEqual({});
  });
});

describe('goodput', () => {
  // Successes: r0 TTFT 50 ms; r1 TTFT 300 ms (misses 250 ms); r2 one token (no TPOT: cannot miss it).
  // A failure widens the measured window to [0, 1000] but not the successes' [0, 400].
  const records = [
    record(0, 0, [50, 60, 70], { endMs: 80 }),
    record(1, 100, [400], { endMs: 400, promptTokens: 20 }),
    record(2, 200, [250], { endMs: 260 }),
    record(3, 300, [], { failure, endMs: 1000 }),
  ];
  const report = lifecycleReport(records, { intendedRate: 4, slo: { ttftMs: 250, tpotMs: 20 } });

  it('our block: snake_case objectives in seconds, the same names for violations', () => {
    expect(report.goodput).toEqual({
      slo: { ttft: 0.25, tpot: 0.02 },
      good_requests: 2,
      good_fraction: 2 / 3,
      requests_per_sec: 2,
      output_tokens_per_sec: 4,
      violations: { ttft: 1, tpot: 0 },
    });
    expect(JSON.stringify(report.goodput)).not.toMatch(/Ms"/);
  });

  it("inference-perf's successes.goodput_metrics: percentages, input + output tokens, over the successes' own window", () => {
    expect(report.successes.goodput_metrics).toEqual({
      goodput_percentage: (2 / 3) * 100,
      request_goodput: 2 / 0.4,
      token_goodput: (10 + 3 + 10 + 1) / 0.4,
      good_requests: 2,
      total_requests: 3,
      ttft_attainment_percentage: (2 / 3) * 100,
      tpot_attainment_percentage: 100,
    });
  });

  it('no SLOs: no goodput; no successes: no goodput_metrics; a zero-width window: no rates rather than 0', () => {
    expect(lifecycleReport(records, { intendedRate: 4 })).not.toHaveProperty('goodput');
    expect(lifecycleReport(records, { intendedRate: 4 }).successes).not.toHaveProperty('goodput_metrics');
    const failedOnly = lifecycleReport([records[3]!], { intendedRate: 4, slo: { ttftMs: 250 } });
    expect(failedOnly.successes).not.toHaveProperty('goodput_metrics');
    expect(failedOnly.goodput?.good_fraction).toBeNull();
    const instant = lifecycleReport([record(0, 0, [0], { endMs: 0 })], { intendedRate: 4, slo: { latencyMs: 5 } });
    expect(instant.successes.goodput_metrics).toEqual({ goodput_percentage: 100, good_requests: 1, total_requests: 1, request_latency_attainment_percentage: 100 });
  });
});

describe("goodput by inference-perf's rule (report.goodput.constraints; audit 15-R1)", () => {
  // r0: gaps 10 and 50 ms (mean 30, largest 50); r1: gaps 20, 20; r2: one token (no gaps, no TPOT).
  const records = [record(0, 0, [10, 20, 70], { endMs: 80 }), record(1, 100, [110, 130, 150], { endMs: 160 }), record(2, 200, [210], { endMs: 220 })];

  it('its ITL objective bounds the mean gap of a request, ours every gap', () => {
    const theirs = lifecycleReport(records.slice(0, 2), { intendedRate: 4, slo: { itlMs: 35, rule: 'inference-perf' } });
    expect(theirs.goodput).toMatchObject({ good_requests: 2, violations: { itl: 0 }, rule: 'inference-perf' });
    const ours = lifecycleReport(records.slice(0, 2), { intendedRate: 4, slo: { itlMs: 35 } });
    expect(ours.goodput).toMatchObject({ good_requests: 1, violations: { itl: 1 } });
    expect(ours.goodput).not.toHaveProperty('rule');
  });

  it('a request without a value for a constrained metric is not good there; ours meets it vacuously', () => {
    const theirs = lifecycleReport(records, { intendedRate: 4, slo: { tpotMs: 100, rule: 'inference-perf' } });
    expect(theirs.successes.goodput_metrics).toMatchObject({ good_requests: 2, total_requests: 3, tpot_attainment_percentage: (2 / 3) * 100 });
    const ours = lifecycleReport(records, { intendedRate: 4, slo: { tpotMs: 100 } });
    expect(ours.successes.goodput_metrics).toMatchObject({ good_requests: 3, tpot_attainment_percentage: 100 });
  });

  // As its summarize_requests: TTFT, TPOT and ITL exist only for a response that streamed two
  // token times or more; NTPOT of a zero-token answer is 0.0 (audit 16-M finding 1).
  it('a one-token answer has no TTFT there, a non-streamed answer no TTFT, TPOT or ITL', () => {
    const slo = { ttftMs: 100, tpotMs: 100, itlMs: 100, rule: 'inference-perf' } as const;
    const oneToken = lifecycleReport(records.slice(1), { intendedRate: 4, slo: { ttftMs: 100, rule: 'inference-perf' } });
    expect(oneToken.successes.goodput_metrics).toMatchObject({ good_requests: 1, total_requests: 2, ttft_attainment_percentage: 50 });
    const body = record(3, 300, [310, 310, 310], { endMs: 311, tokensPerEventSource: 'usage', streamed: false });
    const nonStreamed = lifecycleReport([body], { intendedRate: 4, slo });
    expect(nonStreamed.successes.goodput_metrics).toMatchObject({ goodput_percentage: 0, ttft_attainment_percentage: 0, tpot_attainment_percentage: 0, itl_attainment_percentage: 0 });
    expect(lifecycleReport([body], { intendedRate: 4, slo: { ttftMs: 100, tpotMs: 100, itlMs: 100 } }).goodput?.good_requests).toBe(1);
  });

  it("a zero-token answer's NTPOT is 0 there, so it meets an NTPOT objective", () => {
    const empty = record(4, 400, [], { endMs: 420, outputTokens: 0, metrics: requestMetrics({ startMs: 400, endMs: 420, events: [], outputTokens: 0 }) });
    expect(lifecycleReport([empty], { intendedRate: 4, slo: { ntpotMs: 5, rule: 'inference-perf' } }).goodput?.good_requests).toBe(1);
  });
});

describe('report.request_lifecycle.percentiles (audit 15-C2)', () => {
  it("keys are inference-perf's f\"p{p:g}\" (audit 15-R7)", () => {
    const cases: Array<[number, string]> = [[0.1, 'p0.1'], [99.9, 'p99.9'], [25, 'p25'], [1e-5, 'p1e-05'], [12.3456789, 'p12.3457'], [0.0001, 'p0.0001'], [99.99999, 'p100'], [0.00012345678, 'p0.000123457']];
    for (const [p, key] of cases) expect(percentileKey(p), String(p)).toBe(key);
  });

  it('every distribution adds the percentiles asked for, numpy-exact, beside its fixed ones', () => {
    const records = Array.from({ length: 40 }, (_, i) => record(i, i * 3, [i * 3 + 5 + (i % 7), i * 3 + 9 + (i % 5), i * 3 + 20]));
    const report = lifecycleReport(records, { intendedRate: 5, percentiles: [0.1, 25, 50, 99.9] });
    const ttft = report.successes.latency.time_to_first_token;
    const ttfts = records.map((r) => (r.events[0]?.atMs as number) - r.startMs).sort((a, b) => a - b);
    // numpy.percentile(x, 25) on the TTFTs in ms, then / 1000.
    const at = (p: number): number => {
      const position = ((ttfts.length - 1) * p) / 100;
      const lower = Math.floor(position);
      return ((ttfts[lower] as number) + ((ttfts[Math.min(lower + 1, ttfts.length - 1)] as number) - (ttfts[lower] as number)) * (position - lower)) / 1000;
    };
    expect(ttft?.['p25']).toBeCloseTo(at(25), 12);
    expect(ttft?.['p0.1']).toBeCloseTo(at(0.1), 12);
    expect(ttft?.['p99.9']).toBeCloseTo(at(99.9), 12);
    expect(Object.keys(ttft ?? {})).toEqual(['mean', 'min', 'max', 'p10', 'p50', 'median', 'p90', 'p99', 'p0.1', 'p25', 'p99.9']);
    // The pooled gaps too, and token counts.
    expect(report.successes.latency.inter_token_latency?.['p25']).toBeTypeOf('number');
    expect(report.successes.output_len?.['p99.9']).toBe(3);
    // Without the list, the fixed keys only.
    expect(Object.keys(lifecycleReport(records, { intendedRate: 5 }).successes.latency.time_to_first_token ?? {})).toEqual(['mean', 'min', 'max', 'p10', 'p50', 'median', 'p90', 'p99']);
  });
});
