/**
 * Workers and shards merge raw samples: for any records and any split of them, the merged
 * report equals the report of one process that saw every record (property), per LoRA adapter
 * too; an adapter's report is the report of its requests alone.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { requestMetrics } from '../../../contracts/metrics.ts';
import type { RequestRecord } from '../../../client/record/request-record.ts';
import { EPOCH_TIMELINE, StageSamples } from '../../../client/record/stage-samples.ts';
import { lifecycleReport, lifecycleReportFromSamples } from '../../../client/report/lifecycle-report.ts';
import { buildRunReports, mergeRawSamples, rawSamplesFile } from '../../../client/report/run-reports.ts';

const recordArb = fc
  .record({
    scheduled: fc.double({ min: 0, max: 10_000, noNaN: true }),
    delay: fc.double({ min: 0, max: 50, noNaN: true }),
    ttft: fc.double({ min: 0.1, max: 500, noNaN: true }),
    gaps: fc.array(fc.record({ gap: fc.double({ min: 0, max: 80, noNaN: true }), tokens: fc.integer({ min: 1, max: 4 }) }), { maxLength: 12 }),
    tail: fc.double({ min: 0, max: 5, noNaN: true }),
    prompt: fc.integer({ min: 1, max: 4000 }),
    failure: fc.option(fc.constantFrom('http_500', 'timeout', 'truncated'), { freq: 4 }),
    message: fc.constantFrom('boom', 'late', 'cut', 'no [DONE]'),
    stage: fc.integer({ min: 0, max: 2 }),
    source: fc.constantFrom('continuous_usage', 'tokenizer', 'one_per_event') as fc.Arbitrary<RequestRecord['tokensPerEventSource']>,
    // Edge answers: no token-bearing event at all (N = 0), and usage that disagrees with the events.
    shape: fc.constantFrom('events', 'events', 'events', 'zero_tokens', 'usage_disagrees'),
    adapter: fc.constantFrom(undefined, 'movie', 'consumer', 'org/adapter v2'),
  })
  .map((r, ): Omit<RequestRecord, 'index' | 'requestId'> => {
    const start = r.scheduled + r.delay;
    const events = [{ atMs: start + r.ttft, tokens: 1 }];
    for (const g of r.gaps) events.push({ atMs: (events[events.length - 1]!.atMs as number) + g.gap, tokens: g.tokens });
    const end = events[events.length - 1]!.atMs + r.tail;
    if (r.shape === 'zero_tokens') events.length = 0;
    const eventSum = events.reduce((n, e) => n + e.tokens, 0);
    const outputTokens = r.shape === 'usage_disagrees' ? eventSum + 1 : eventSum;
    const failure = r.failure === null ? null : { kind: r.failure as 'timeout', message: r.message };
    return {
      stage: r.stage,
      warmup: false,
      scheduledMs: r.scheduled,
      startMs: start,
      firstByteMs: start + r.ttft,
      endMs: end,
      status: 200,
      failure,
      events,
      tokensPerEventSource: r.source,
      outputTokens,
      outputTokensSource: r.shape === 'usage_disagrees' ? 'usage' : 'events',
      tokenCountMismatch: r.shape === 'usage_disagrees',
      promptTokens: r.prompt,
      promptTokensSource: 'client',
      usage: r.shape === 'usage_disagrees' ? { promptTokens: r.prompt, completionTokens: outputTokens, totalTokens: r.prompt + outputTokens } : null,
      finishReason: 'length',
      finishReasonMs: end,
      metrics: failure === null ? requestMetrics({ startMs: start, endMs: end, events, outputTokens }) : null,
      ...(r.adapter === undefined ? {} : { loraAdapter: r.adapter }),
    };
  });

const recordsArb = fc.array(recordArb, { minLength: 1, maxLength: 40 }).map((rs) => rs.map((r, i) => ({ ...r, index: i, requestId: `r-${i}` }) as RequestRecord));

function nonFinitePaths(value: unknown, path = '$'): string[] {
  if (typeof value === 'number') return Number.isFinite(value) ? [] : [path];
  if (Array.isArray(value)) return value.flatMap((v, i) => nonFinitePaths(v, `${path}[${i}]`));
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => nonFinitePaths(v, `${path}.${k}`));
  return [];
}

function samplesByStage(records: readonly RequestRecord[]): Map<number, StageSamples> {
  const out = new Map<number, StageSamples>();
  for (const r of records) {
    let s = out.get(r.stage);
    if (s === undefined) out.set(r.stage, (s = new StageSamples()));
    s.add(r, { baseEpochMs: 1.7e12, offsetMs: (t) => t });
  }
  return out;
}

const contexts = new Map([0, 1, 2].map((s) => [s, { loadType: 'constant', intendedRate: 5 + s, concurrency: null }]));
const slo = { ttftMs: 250, tpotMs: 30, itlMs: 60 };

describe('merging raw samples', () => {
  it('any split over any number of shards reports exactly what one process reports', () => {
    fc.assert(
      fc.property(recordsArb, fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 40, maxLength: 40 }), (records, assignment) => {
        const single = buildRunReports(samplesByStage(records), contexts, slo);
        const shards = [0, 1, 2, 3].map((k) => records.filter((_, i) => assignment[i] === k));
        // Through the file format, as `benchtruth merge` and the worker threads do.
        const files = shards.map((part) => JSON.parse(JSON.stringify(rawSamplesFile(samplesByStage(part), contexts, slo))));
        const merged = mergeRawSamples(files);
        const mergedReports = buildRunReports(merged.samples, merged.contexts, merged.slo);
        expect(mergedReports.summary).toEqual(single.summary);
        expect(mergedReports.stages).toEqual(single.stages);
        expect(mergedReports.adapters).toEqual(single.adapters);
        // JSON.stringify would silently write NaN or Infinity as null: none may be there to write.
        expect(nonFinitePaths([single.summary, ...single.stages.values()])).toEqual([]);
      }),
      { seed: 20261130, numRuns: 150 },
    );
  });

  it('the percentiles a run asked for survive the merge; shards asking for others are not one run (audit 15-C2)', () => {
    fc.assert(
      fc.property(recordsArb, fc.array(fc.integer({ min: 0, max: 1 }), { minLength: 40, maxLength: 40 }), (records, assignment) => {
        const asked = [0.1, 25, 99.9];
        const single = buildRunReports(samplesByStage(records), contexts, slo, asked);
        const files = [0, 1].map((k) => JSON.parse(JSON.stringify(rawSamplesFile(samplesByStage(records.filter((_, i) => assignment[i] === k)), contexts, slo, null, asked))));
        const merged = mergeRawSamples(files);
        expect(merged.percentiles).toEqual(asked);
        expect(buildRunReports(merged.samples, merged.contexts, merged.slo, merged.percentiles).summary).toEqual(single.summary);
      }),
      { seed: 15, numRuns: 40 },
    );
    const one = JSON.parse(JSON.stringify(rawSamplesFile(new Map(), contexts, slo, null, [25])));
    const other = JSON.parse(JSON.stringify(rawSamplesFile(new Map(), contexts, slo, null, [75])));
    expect(() => mergeRawSamples([one, other])).toThrow(/the shards report different percentiles \(25 vs 75\)/);
  });

  it("an adapter's reports are the reports of its requests alone; requests without one are in none", () => {
    fc.assert(
      fc.property(recordsArb, (records) => {
        const reports = buildRunReports(samplesByStage(records), contexts, slo);
        const names = [...new Set(records.flatMap((r) => (r.loraAdapter === undefined ? [] : [r.loraAdapter])))].sort();
        expect([...reports.adapters.keys()]).toEqual(names);
        for (const name of names) {
          const own = records.filter((r) => r.loraAdapter === name).map(({ loraAdapter: _, ...rest }) => rest as RequestRecord);
          const alone = buildRunReports(samplesByStage(own), new Map([...contexts].filter(([stage]) => own.some((r) => r.stage === stage))), slo);
          const adapter = reports.adapters.get(name)!;
          expect(adapter.stages).toEqual(alone.stages);
          // The summary's context is the whole run's (its stages' rates), as inference-perf's adapter summary.
          expect(adapter.summary.successes).toEqual(alone.summary.successes);
          expect(adapter.summary.failures).toEqual(alone.summary.failures);
        }
      }),
      { seed: 4242, numRuns: 100 },
    );
  });

  it('the compact samples report what the records imply (pooled ITL, TPOT, failures by kind)', () => {
    fc.assert(
      fc.property(recordsArb, (records) => {
        const fromRecords = lifecycleReport(records, { intendedRate: null });
        const samples = StageSamples.merge([...samplesByStage(records).values()]);
        const viaSamples = lifecycleReportFromSamples(samples, { intendedRate: null });
        const ok = records.filter((r) => r.failure === null);
        expect(viaSamples.successes.count).toBe(ok.length);
        expect(viaSamples.successes.latency.inter_token_latency).toEqual(fromRecords.successes.latency.inter_token_latency);
        const pooled = ok.flatMap((r) => r.metrics!.itlMs).sort((a, b) => a - b);
        expect(viaSamples.successes.latency.inter_token_latency?.max ?? null).toBe(pooled.length > 0 ? pooled[pooled.length - 1]! / 1000 : null);
        const failures = records.filter((r) => r.failure !== null).length;
        expect(Object.values(viaSamples.failures.by_kind).reduce((n, k) => n + k.count, 0)).toBe(failures);
      }),
      { seed: 7, numRuns: 100 },
    );
  });

  it('in sketch mode (tiny exact limit) a merge reports what one process reports: quantiles, count, min, max exact', () => {
    fc.assert(
      fc.property(recordsArb, fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 40, maxLength: 40 }), fc.integer({ min: 0, max: 30 }), (records, assignment, limit) => {
        const one = new StageSamples(limit);
        for (const r of records) one.add(r, EPOCH_TIMELINE);
        const parts = [0, 1, 2].map((k) => {
          const part = new StageSamples(limit);
          for (const [i, r] of records.entries()) if (assignment[i] === k) part.add(r, EPOCH_TIMELINE);
          return StageSamples.fromJSON(JSON.parse(JSON.stringify(part.toJSON())));
        });
        const merged = StageSamples.merge(parts, limit);
        const a = lifecycleReportFromSamples(merged, { intendedRate: null, slo });
        const b = lifecycleReportFromSamples(one, { intendedRate: null, slo });
        expect(a.successes.pooled_latency_samples).toBe(b.successes.pooled_latency_samples);
        for (const key of ['inter_token_latency', 'inter_chunk_latency'] as const) {
          const da = a.successes.latency[key];
          const db = b.successes.latency[key];
          if (da === null || db === null) {
            expect(da).toEqual(db);
            continue;
          }
          const { mean: meanA, ...restA } = da;
          const { mean: meanB, ...restB } = db;
          expect(restA).toEqual(restB);
          expect(meanA).toBeCloseTo(meanB, 9);
        }
        const strip = (r: typeof a) => ({ ...r, successes: { ...r.successes, latency: { ...r.successes.latency, inter_token_latency: null, inter_chunk_latency: null } } });
        expect(strip(a)).toEqual(strip(b));
      }),
      { seed: 5150, numRuns: 100 },
    );
  });

  it('empty samples report null, never 0 or NaN', () => {
    const report = lifecycleReportFromSamples(new StageSamples(), { intendedRate: 2, slo });
    expect(report.successes.latency.time_to_first_token).toBeNull();
    expect(report.successes.throughput.requests_per_sec).toBeNull();
    expect(report.goodput?.good_fraction).toBeNull();
    expect(JSON.stringify(report)).not.toMatch(/NaN/);
  });
});
