/**
 * The metric and statistics contract at its edges: one-token and zero-token answers, streams of
 * only role/usage chunks, multi-token single events, count mismatches, tiny and tied samples,
 * the pooled-gap sketch, and reports that never carry NaN or Infinity.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { requestMetrics } from '../../../contracts/metrics.ts';
import { distribution, percentile, populationSd, mean } from '../../../contracts/stats.ts';
import { completionsApi } from '../../../client/apis/completions.ts';
import { ResponseMeasurer } from '../../../client/measure/response-measurer.ts';
import { PooledGaps } from '../../../client/record/pooled-gaps.ts';
import type { RequestRecord } from '../../../client/record/request-record.ts';
import { EPOCH_TIMELINE, StageSamples } from '../../../client/record/stage-samples.ts';
import { lifecycleReport } from '../../../client/report/lifecycle-report.ts';
import { recordFromLine, requestLine } from '../../../client/report/request-line.ts';
import { compareRunWithTruth, formatTruthComparison } from '../../../client/measure/truth-comparison.ts';
import { minimalTruthRecord } from '../../helpers/truth-records.ts';
import type { TruthRecord } from '../../../contracts/truth.ts';

const enc = new TextEncoder();
const identity = { index: 0, requestId: 'r', stage: 0, warmup: false, scheduledMs: 0, startMs: 0, promptTokens: 3 };

interface ChunkSpec {
  text?: string;
  usage?: number;
  finish?: string | null;
  choices?: boolean;
}

function chunk(spec: ChunkSpec): string {
  const choices = spec.choices === false ? [] : [{ index: 0, text: spec.text ?? '', logprobs: null, finish_reason: spec.finish ?? null, stop_reason: null }];
  const usage = spec.usage === undefined ? {} : { usage: { prompt_tokens: 3, total_tokens: 3 + spec.usage, completion_tokens: spec.usage } };
  return `data: ${JSON.stringify({ id: 'c', object: 'text_completion', created: 1, model: 'm', choices, ...usage })}\n\n`;
}

function streamed(chunks: Array<[ChunkSpec, number]>, endMs: number, tokenizerFallback = false): RequestRecord {
  const measurer = new ResponseMeasurer(identity, { api: completionsApi, stream: true, tokenizerFallback });
  measurer.response(200);
  for (const [spec, at] of chunks) measurer.data(enc.encode(chunk(spec)), at);
  measurer.data(enc.encode('data: [DONE]\n\n'), endMs);
  return measurer.end(endMs);
}

/** Every number in a JSON-bound value is finite (JSON.stringify would write NaN/Infinity as null silently). */
function nonFinitePaths(value: unknown, path = '$'): string[] {
  if (typeof value === 'number') return Number.isFinite(value) ? [] : [path];
  if (Array.isArray(value)) return value.flatMap((v, i) => nonFinitePaths(v, `${path}[${i}]`));
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => nonFinitePaths(v, `${path}.${k}`));
  return [];
}

describe('per-request metrics at the edges', () => {
  it('a one-token answer has TTFT, no TPOT, no ITL, NTPOT = latency', () => {
    const m = requestMetrics({ startMs: 10, endMs: 40, events: [{ atMs: 25, tokens: 1 }], outputTokens: 1 });
    expect(m).toEqual({ latencyMs: 30, ttftMs: 15, tpotMs: null, ntpotMs: 30, itlMs: [], interChunkMs: [], outputTokens: 1 });
  });

  it('a zero-token answer has no TTFT, TPOT or NTPOT (null, never 0, NaN or Infinity)', () => {
    const m = requestMetrics({ startMs: 0, endMs: 12, events: [], outputTokens: 0 });
    expect(m).toEqual({ latencyMs: 12, ttftMs: null, tpotMs: null, ntpotMs: null, itlMs: [], interChunkMs: [], outputTokens: 0 });
  });

  it('N = 0 with events that carried text (usage said 0) has no TTFT or gaps either, however the record was rebuilt (audit 16-M finding 3)', () => {
    const m = requestMetrics({ startMs: 0, endMs: 20, events: [{ atMs: 10, tokens: 1 }, { atMs: 15, tokens: 1 }], outputTokens: 0 });
    expect(m).toEqual({ latencyMs: 20, ttftMs: null, tpotMs: null, ntpotMs: null, itlMs: [], interChunkMs: [], outputTokens: 0 });
  });

  it('a multi-token single event has zero ITL gaps inside it and no inter-chunk gap', () => {
    const m = requestMetrics({ startMs: 0, endMs: 30, events: [{ atMs: 20, tokens: 4 }], outputTokens: 4 });
    expect(m.itlMs).toEqual([0, 0, 0]);
    expect(m.interChunkMs).toEqual([]);
    expect(m.tpotMs).toBe(0);
    expect(m.ntpotMs).toBe(7.5);
  });

  it('ITL has N − 1 gaps and its mean equals TPOT whenever N is the events\' sum (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ gap: fc.integer({ min: 0, max: 100 }), tokens: fc.integer({ min: 1, max: 5 }) }), { maxLength: 20 }), (specs) => {
        let at = 5;
        const events = specs.map((s) => ({ atMs: (at += s.gap), tokens: s.tokens }));
        const n = events.reduce((a, e) => a + e.tokens, 0);
        const m = requestMetrics({ startMs: 0, endMs: at + 1, events, outputTokens: n });
        expect(m.itlMs.length).toBe(Math.max(n - 1, 0));
        expect(m.interChunkMs.length).toBe(Math.max(events.length - 1, 0));
        if (n > 1) expect(mean(m.itlMs)).toBeCloseTo(m.tpotMs as number, 9);
        else expect(m.tpotMs).toBeNull();
        expect(m.ntpotMs === null).toBe(n === 0);
        expect(nonFinitePaths(m)).toEqual([]);
      }),
      { seed: 4242, numRuns: 200 },
    );
  });
});

describe('measured streams at the edges', () => {
  it('role/usage-only chunks are never token-bearing; an empty answer with usage 0 has null TTFT and NTPOT', () => {
    const record = streamed([[{ text: '' }, 5], [{ text: '', finish: 'stop' }, 6], [{ choices: false, usage: 0 }, 7]], 8);
    expect(record.failure).toBeNull();
    expect(record.events).toEqual([]);
    expect(record.outputTokens).toBe(0);
    expect(record.outputTokensSource).toBe('usage');
    expect(record.tokenCountMismatch).toBe(false);
    expect(record.metrics).toMatchObject({ latencyMs: 8, ttftMs: null, tpotMs: null, ntpotMs: null, itlMs: [], interChunkMs: [] });
  });

  it('an empty stream without usage is a zero-token success, source events', () => {
    const record = streamed([[{ text: '', finish: 'length' }, 3]], 4);
    expect(record).toMatchObject({ failure: null, outputTokens: 0, outputTokensSource: 'events', tokenCountMismatch: false });
    expect(record.metrics?.ntpotMs).toBeNull();
  });

  it('usage that claims tokens no event carried is a client/server count mismatch', () => {
    const record = streamed([[{ text: '' }, 5], [{ choices: false, usage: 2 }, 7]], 8);
    expect(record.events).toEqual([]);
    expect(record.outputTokens).toBe(2);
    expect(record.tokenCountMismatch).toBe(true);
    // requests.jsonl read back (a dead worker's requests) decides it the same way.
    expect(recordFromLine(requestLine(record, 0, 1.7e12)).tokenCountMismatch).toBe(true);
    expect(lifecycleReport([record], { intendedRate: null }).successes.token_count_mismatches).toBe(1);
  });

  it('a stop string on the first token (text stripped, running usage 1, as the fake server answers): the finish chunk that showed it carries it, as the truth does (audit 12-R18-F1)', () => {
    const record = streamed([[{ text: '', finish: 'stop', usage: 1 }, 205], [{ choices: false, usage: 1 }, 206]], 207);
    expect(record).toMatchObject({ failure: null, events: [{ atMs: 205, tokens: 1 }], outputTokens: 1, outputTokensSource: 'usage', tokenCountMismatch: false });
    expect(record.metrics).toMatchObject({ ttftMs: 205, tpotMs: null, ntpotMs: 207, itlMs: [] });
  });

  it('a one-token stream: TTFT at its event, TPOT null, NTPOT = latency / 1', () => {
    const record = streamed([[{ text: '' }, 2], [{ text: ' hi' }, 9], [{ text: '', finish: 'stop' }, 10], [{ choices: false, usage: 1 }, 11]], 12);
    expect(record.metrics).toMatchObject({ ttftMs: 9, tpotMs: null, ntpotMs: 12, itlMs: [], interChunkMs: [], outputTokens: 1 });
    expect(record.tokenCountMismatch).toBe(false);
  });

  it('a multi-token event counted by continuous usage gives zero ITL gaps inside it only', () => {
    const record = streamed([[{ text: ' a', usage: 1 }, 10], [{ text: ' b c d', usage: 4 }, 30]], 31);
    expect(record.tokensPerEventSource).toBe('continuous_usage');
    expect(record.metrics?.itlMs).toEqual([20, 0, 0]);
    expect(record.metrics?.interChunkMs).toEqual([20]);
    expect(record.metrics?.tpotMs).toBeCloseTo(20 / 3, 12);
  });

  it('usage disagreeing with the counted events is a mismatch, and usage wins N', () => {
    const record = streamed([[{ text: ' a' }, 10], [{ text: ' b' }, 20], [{ choices: false, usage: 5 }, 21]], 22);
    expect(record).toMatchObject({ outputTokens: 5, outputTokensSource: 'usage', tokenCountMismatch: true, tokensPerEventSource: 'one_per_event' });
    const report = lifecycleReport([record], { intendedRate: null });
    expect(report.successes.token_count_mismatches).toBe(1);
  });

  it('usage of 0 while token events arrived: N = 0, and none of its event gaps enters the pooled ITL or inter-chunk samples', () => {
    const record = streamed([[{ text: ' a' }, 10], [{ text: ' b' }, 60], [{ choices: false, usage: 0 }, 61]], 62);
    expect(record).toMatchObject({ outputTokens: 0, outputTokensSource: 'usage', tokenCountMismatch: true });
    const samples = new StageSamples();
    samples.add(record, EPOCH_TIMELINE);
    expect(samples.interChunkMs.count).toBe(0);
    expect(samples.intraEventZeros).toBe(0);
    const report = lifecycleReport([record], { intendedRate: null });
    expect(report.successes.latency.inter_token_latency).toBeNull();
  });
});

describe('statistics at the edges', () => {
  it('n = 1: every statistic is the sample, sd 0', () => {
    expect(distribution([7])).toEqual({ mean: 7, min: 7, max: 7, sd: 0, p10: 7, p50: 7, p90: 7, p99: 7 });
  });

  it('n = 2: numpy linear interpolation between the two', () => {
    const d = distribution([4, 2]);
    expect(d).toMatchObject({ mean: 3, min: 2, max: 4, sd: 1, p50: 3 });
    expect(d.p10).toBeCloseTo(2.2, 12);
    expect(d.p90).toBeCloseTo(3.8, 12);
    expect(d.p99).toBeCloseTo(3.98, 12);
  });

  it('ties interpolate to the tied value; numeric (not string) order', () => {
    expect(distribution([5, 5, 5, 5])).toEqual({ mean: 5, min: 5, max: 5, sd: 0, p10: 5, p50: 5, p90: 5, p99: 5 });
    expect(percentile([10, 9, 100, 9], 50)).toBe(9.5);
    expect(populationSd([1, 3])).toBe(1);
  });

  it('empty samples are null everywhere', () => {
    expect(distribution([])).toEqual({ mean: null, min: null, max: null, sd: null, p10: null, p50: null, p90: null, p99: null });
    expect(new PooledGaps().distribution()).toEqual(distribution([]));
  });
});

describe('the pooled-gap sketch', () => {
  const gapsArb = fc.array(fc.oneof(fc.constant(0), fc.double({ min: 0.01, max: 5000, noNaN: true })), { minLength: 1, maxLength: 300 });

  it('merging shards in sketch mode equals one process (buckets, count, min, max exact; sums to rounding)', () => {
    fc.assert(
      fc.property(fc.array(gapsArb, { minLength: 1, maxLength: 4 }), fc.integer({ min: 0, max: 40 }), (parts, limit) => {
        const single = new PooledGaps(limit);
        for (const part of parts) for (const g of part) single.push(g);
        const merged = new PooledGaps(limit);
        for (const part of parts) {
          const shard = new PooledGaps(limit);
          for (const g of part) shard.push(g);
          merged.absorb(PooledGaps.fromJSON(JSON.parse(JSON.stringify(shard.toJSON()))));
        }
        expect(merged.isExact).toBe(single.isExact);
        const a = merged.distribution(3);
        const b = single.distribution(3);
        for (const key of ['min', 'max', 'p10', 'p50', 'p90', 'p99'] as const) expect(a[key]).toBe(b[key]);
        expect(a.mean).toBeCloseTo(b.mean as number, 9);
      }),
      { seed: 99, numRuns: 100 },
    );
  });

  it('a sketch reduced to zeros added from outside still reports a finite max', () => {
    const gaps = PooledGaps.fromJSON({ exact: null, sketch: { zeros: 0, buckets: [], sum: 0, sumSquares: 0, min: Infinity, max: -Infinity, count: 0 } });
    expect(nonFinitePaths(gaps.distribution(2))).toEqual([]);
    expect(gaps.distribution(2)).toMatchObject({ min: 0, max: 0, p50: 0 });
  });
});

describe('reports at the edges', () => {
  const base = (over: Partial<RequestRecord>): RequestRecord => ({
    index: 0,
    requestId: 'r',
    stage: 0,
    warmup: false,
    scheduledMs: 0,
    startMs: 0,
    firstByteMs: null,
    endMs: 10,
    status: 200,
    failure: null,
    events: [],
    tokensPerEventSource: 'one_per_event',
    outputTokens: 0,
    outputTokensSource: 'events',
    tokenCountMismatch: false,
    promptTokens: 3,
    promptTokensSource: 'client',
    usage: null,
    finishReason: 'stop',
    finishReasonMs: 10,
    metrics: null,
    ...over,
  });

  it('a stage of zero-token and one-token answers reports no NaN or Infinity', () => {
    const zero = base({ metrics: requestMetrics({ startMs: 0, endMs: 10, events: [], outputTokens: 0 }) });
    const one = base({ index: 1, startMs: 5, scheduledMs: 2, endMs: 20, events: [{ atMs: 12, tokens: 1 }], outputTokens: 1 });
    one.metrics = requestMetrics({ startMs: 5, endMs: 20, events: one.events, outputTokens: 1 });
    const report = lifecycleReport([zero, one], { intendedRate: null, slo: { ttftMs: 100, tpotMs: 10, itlMs: 10 } });
    expect(nonFinitePaths(report)).toEqual([]);
    expect(report.successes.latency.time_per_output_token).toBeNull();
    expect(report.successes.latency.normalized_time_per_output_token).toMatchObject({ min: 0.015, max: 0.015 });
    expect(report.successes.latency.time_to_first_token).toMatchObject({ min: 0.007, max: 0.007 });
    expect(report.successes.latency.inter_token_latency).toBeNull();
    expect(report.load_summary.schedule_delay).toMatchObject({ min: 0, max: 0.003 });
    // Window [0, 20] ms: two successes, one output token.
    expect(report.successes.throughput).toEqual({ input_tokens_per_sec: 300, output_tokens_per_sec: 50, total_tokens_per_sec: 350, requests_per_sec: 100 });
  });

  it('a stage of only failures measured a window with zero successes: rates are 0, latency distributions null', () => {
    const failed = base({ failure: { kind: 'http_500', message: 'boom' }, endMs: 500 });
    const report = lifecycleReport([failed], { intendedRate: null });
    expect(report.successes.count).toBe(0);
    expect(report.successes.throughput.requests_per_sec).toBe(0);
    expect(report.successes.latency.request_latency).toBeNull();
    expect(report.failures.request_latency?.mean).toBe(0.5);
    expect(nonFinitePaths(report)).toEqual([]);
  });

  it('requests/s counts successes only; failures still bound the measured window', () => {
    const ok = base({ startMs: 0, endMs: 100, events: [{ atMs: 50, tokens: 1 }], outputTokens: 1 });
    ok.metrics = requestMetrics({ startMs: 0, endMs: 100, events: ok.events, outputTokens: 1 });
    const failed = base({ index: 1, startMs: 50, scheduledMs: 50, endMs: 250, failure: { kind: 'timeout', message: 'late' } });
    const report = lifecycleReport([ok, failed], { intendedRate: null });
    expect(report.successes.throughput).toEqual({ input_tokens_per_sec: 12, output_tokens_per_sec: 4, total_tokens_per_sec: 16, requests_per_sec: 4 });
    expect(report.failures.count).toBe(1);
  });

  it('warm-up requests are outside the window and the counts', () => {
    const warm = base({ warmup: true, startMs: -1000, scheduledMs: -1000, endMs: -900, events: [{ atMs: -950, tokens: 1 }], outputTokens: 1 });
    warm.metrics = requestMetrics({ startMs: -1000, endMs: -900, events: warm.events, outputTokens: 1 });
    const one = base({ startMs: 0, endMs: 100, events: [{ atMs: 50, tokens: 2 }], outputTokens: 2 });
    one.metrics = requestMetrics({ startMs: 0, endMs: 100, events: one.events, outputTokens: 2 });
    const report = lifecycleReport([warm, one], { intendedRate: null });
    expect(report.load_summary.count).toBe(1);
    expect(report.successes.throughput.requests_per_sec).toBe(10);
    expect(report.successes.throughput.output_tokens_per_sec).toBe(20);
  });

  it('a stage whose window has no width reports null rates (not Infinity)', () => {
    const instant = base({ failure: { kind: 'connect_error', message: 'refused' }, endMs: 0 });
    const report = lifecycleReport([instant], { intendedRate: null });
    expect(report.successes.throughput.requests_per_sec).toBeNull();
    expect(nonFinitePaths(report)).toEqual([]);
  });

  it('StageSamples JSON round trip keeps missing values missing (NaN columns ↔ null)', () => {
    const samples = new StageSamples();
    samples.add(base({ metrics: requestMetrics({ startMs: 0, endMs: 10, events: [], outputTokens: 0 }) }), EPOCH_TIMELINE);
    const text = JSON.stringify(samples.toJSON());
    expect(text).not.toMatch(/NaN|Infinity/);
    const back = StageSamples.fromJSON(JSON.parse(text));
    expect(Number.isNaN(back.success.ttftMs.view()[0])).toBe(true);
    expect(Number.isNaN(back.success.ntpotMs.view()[0])).toBe(true);
  });
});

describe('the truth comparison at the edges', () => {
  /** A truth record whose token events complete at the given times (one write per event). */
  function truthWithEvents(id: string, times: number[], endMs: number): TruthRecord {
    const base = minimalTruthRecord(id, { bodyBytes: times.length * 10 });
    return {
      ...base,
      tokens: times.map((t, i) => ({ id: i, text: 'a', dueMs: t })),
      events: times.map((t, i) => ({ kind: 'content' as const, tokenStart: i, tokenCount: 1, offset: i * 10, length: 10, completesAt: i * 10 + 8, dueMs: t })),
      writes: times.map((t, i) => ({ offset: i * 10, length: 10, dueMs: t, actualMs: t })),
      end: { atMs: endMs, how: 'completed' },
    };
  }

  it('a one-token answer has no ITL: it is left out of the ITL means, not averaged in as 0', () => {
    const truths = new Map([
      ['one', truthWithEvents('one', [10], 12)],
      ['two', truthWithEvents('two', [10, 30], 32)],
    ]);
    const record = (id: string, times: number[], end: number): RequestRecord => {
      const events = times.map((t) => ({ atMs: t + 1, tokens: 1 }));
      return {
        index: 0, requestId: id, stage: 0, warmup: false, scheduledMs: 0, startMs: 0, firstByteMs: 11, endMs: end + 1, status: 200, failure: null,
        events, tokensPerEventSource: 'one_per_event', outputTokens: times.length, outputTokensSource: 'events', tokenCountMismatch: false,
        promptTokens: 1, promptTokensSource: 'client', usage: null, finishReason: 'length', finishReasonMs: end + 1,
        metrics: requestMetrics({ startMs: 0, endMs: end + 1, events, outputTokens: times.length }),
      };
    };
    const comparison = compareRunWithTruth([record('one', [10], 12), record('two', [10, 30], 32)], (id) => truths.get(id));
    expect(comparison.pass).toBe(true);
    const itl = comparison.metrics.find((m) => m.metric === 'itl');
    expect(itl).toMatchObject({ clientMean: 20, truthMean: 20, samples: 1 });
    const ttft = comparison.metrics.find((m) => m.metric === 'ttft');
    expect(ttft).toMatchObject({ clientMean: 11, truthMean: 10 });
    // Judged with an observed stall (the demo's last run): the same verdicts, and it says so.
    const widened = compareRunWithTruth([record('one', [10], 12)], (id) => truths.get(id), 12.5);
    expect(widened).toMatchObject({ pass: true, slackMs: 12.5 });
    expect(widened.metrics.find((m) => m.metric === 'ttft')?.tolerance).toBe('0 ≤ Δ ≤ 5 ms + 12.5 ms');
    expect(formatTruthComparison(widened)).toContain('widened by the 12.5 ms this process was observed stalled');
  });
});
