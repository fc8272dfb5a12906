/**
 * Every load shape against benchtruth's own server, checked against the truth records'
 * arrival times: schedules land where planned, closed loops hold exactly N in flight, stages
 * run in order, warm-up stays out of the results.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../../contracts/rng.ts';
import { percentile } from '../../contracts/stats.ts';
import type { RequestRecord } from '../../client/record/request-record.ts';
import { arrivalOffsetsMs } from '../../client/load/arrivals.ts';
import { arrivalMs, benchAgainst, peakConcurrency, SCHEDULE_SLACK_MS, truthOf } from '../client/helpers/bench-run.ts';
import { startServer, type RunningServer } from '../helpers/server.ts';

let server: RunningServer;

beforeAll(async () => {
  server = await startServer({ seed: 3, ttftMs: 40, itlMs: 5 });
});

afterAll(async () => {
  await server.close();
});

/**
 * The client's schedule equals the plan exactly; the server saw each request after it was
 * scheduled, typically within the slack (a busy shared machine may delay a few sends).
 */
function expectArrivalsFollow(planned: ArrayLike<number>, records: readonly RequestRecord[]): void {
  expect(records).toHaveLength(planned.length);
  const first = records[0]!.scheduledMs;
  records.forEach((r, i) => expect(r.scheduledMs - first).toBeCloseTo((planned[i] as number) - (planned[0] as number), 6));
  const lateness = records.map((r) => arrivalMs(server, r) - r.scheduledMs);
  for (const late of lateness) expect(late).toBeGreaterThanOrEqual(0);
  expect(percentile(lateness, 50)).toBeLessThanOrEqual(SCHEDULE_SLACK_MS);
}

describe('open-loop schedules', () => {
  it('constant: evenly spaced, warm-up excluded, intended vs achieved rate and schedule delay reported', async () => {
    const result = await benchAgainst(server, { stream: true, rate: 20, durationSec: 1, warmupSec: 0.25, maxTokens: 4, promptTokens: 8, seed: 1 });
    expect(result.records).toHaveLength(25);
    expect(result.records.filter((r) => r.warmup)).toHaveLength(5);
    // The warm-up is a phase of its own: it drains, then the measured schedule starts afresh.
    const warmups = result.records.filter((r) => r.warmup);
    const measured = result.records.filter((r) => !r.warmup);
    expectArrivalsFollow(Array.from({ length: 5 }, (_, i) => i * 50), warmups);
    expectArrivalsFollow(Array.from({ length: 20 }, (_, i) => i * 50), measured);
    expect(measured[0]!.scheduledMs).toBeGreaterThanOrEqual(Math.max(...warmups.map((r) => r.endMs)));
    const arrivals = measured.map((r) => arrivalMs(server, r));
    const truthRate = 19 / (((arrivals[19] as number) - (arrivals[0] as number)) / 1000);
    expect(truthRate).toBeGreaterThan(18);
    expect(truthRate).toBeLessThan(22);
    const load = result.report.load_summary;
    expect(load.count).toBe(20);
    expect(result.report.successes.count).toBe(20);
    expect(load.intended_rate).toBe(20);
    expect(load.achieved_rate).toBeGreaterThan(19);
    expect(load.achieved_rate).toBeLessThan(21);
    expect(load.schedule_delay?.p50).toBeGreaterThanOrEqual(0);
    expect(result.stageReports.get(0)?.load_summary.count).toBe(20);
  });

  it.each([
    ['poisson', { kind: 'poisson' } as const],
    ['gamma (burstiness 0.5)', { kind: 'gamma', burstiness: 0.5 } as const],
  ])('%s: seeded arrivals land where the seed put them', async (_name, arrival) => {
    const load = { type: 'stages' as const, arrival, stages: [{ kind: 'rate' as const, rate: 25, durationSec: 0.8 }], warmupSec: 0 };
    const result = await benchAgainst(server, { load, maxTokens: 2, promptTokens: 4, seed: 5 });
    const planned = arrivalOffsetsMs(25, 20, arrival, new Rng(5).derive('load').derive('stage-0'));
    expectArrivalsFollow(planned, result.records);
    expect(result.report.load_summary.load_type).toBe(arrival.kind);
  });

  it('trace replay: sends at the file offsets', async () => {
    const offsetsMs = [0, 100, 150, 400, 420, 700];
    const result = await benchAgainst(server, { load: { type: 'trace', offsetsMs, warmupSec: 0 }, maxTokens: 2, promptTokens: 4, seed: 6 });
    expectArrivalsFollow(offsetsMs, result.records);
    expect(result.report.load_summary.intended_rate).toBeCloseTo(5 / 0.7);
  });
});

describe('closed loop and stages', () => {
  it('concurrency: exactly N in flight at the server, count measured requests', async () => {
    const load = { type: 'stages' as const, arrival: { kind: 'constant' as const }, stages: [{ kind: 'concurrency' as const, concurrency: 3, count: 12 }], warmupSec: 0 };
    const result = await benchAgainst(server, { load, stream: true, maxTokens: 6, promptTokens: 4, seed: 7 });
    expect(result.records).toHaveLength(12);
    const truths = result.records.map((r) => truthOf(server, r));
    expect(peakConcurrency(truths)).toBe(3);
    expect(result.report.load_summary.concurrency).toBe(3);
    expect(result.report.load_summary.intended_rate).toBeNull();
    // Left out, not null: inference-perf's readers then use their default instead of crashing.
    expect(result.report.load_summary).not.toHaveProperty('requested_rate');
  });

  it('stages run in order, each drained before the next; each has its own report', async () => {
    const load = {
      type: 'stages' as const,
      arrival: { kind: 'constant' as const },
      stages: [
        { kind: 'rate' as const, rate: 10, durationSec: 0.5 },
        { kind: 'concurrency' as const, concurrency: 2, count: 4 },
        { kind: 'rate' as const, rate: 20, durationSec: 0.25 },
      ],
      warmupSec: 0,
    };
    const result = await benchAgainst(server, { load, maxTokens: 3, promptTokens: 4, seed: 8 });
    expect(result.records.map((r) => r.stage)).toEqual([0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2]);
    for (const stage of [1, 2]) {
      const previousEnd = Math.max(...result.records.filter((r) => r.stage === stage - 1).map((r) => truthOf(server, r).arrivalEpochMs + (truthOf(server, r).end?.atMs ?? 0)));
      const firstArrival = Math.min(...result.records.filter((r) => r.stage === stage).map((r) => truthOf(server, r).arrivalEpochMs));
      expect(firstArrival).toBeGreaterThanOrEqual(previousEnd);
    }
    expect([...result.stageReports.keys()]).toEqual([0, 1, 2]);
    expect(result.stageReports.get(0)?.load_summary.intended_rate).toBe(10);
    expect(result.stageReports.get(1)?.load_summary.concurrency).toBe(2);
    expect(result.stageReports.get(2)?.load_summary.count).toBe(5);
    expect(result.report.load_summary.count).toBe(14);
  });

  /** A small sweep: an 8-request probe at concurrency 4, then two half-second stages. */
  const sweepLoad = (warmupSec: number) => ({
    type: 'sweep' as const,
    arrival: { kind: 'constant' as const },
    sweep: { probeConcurrency: 4, probeRequests: 8, numStages: 2, stageDurationSec: 0.5, spacing: 'linear' as const },
    warmupSec,
  });

  it('sweep: probes saturation, then stages rising to it', async () => {
    const result = await benchAgainst(server, { load: sweepLoad(0), maxTokens: 3, promptTokens: 4, seed: 9 });
    const probe = result.records.filter((r) => r.stage === -1);
    expect(probe).toHaveLength(8);
    const rates = [...result.stageReports.values()].map((r) => r.load_summary.intended_rate as number);
    expect(rates).toHaveLength(2);
    expect(rates[1]).toBeCloseTo((rates[0] as number) * 2);
    // The probe is not part of any result.
    expect(result.report.load_summary.count).toBe(result.records.length - 8);
  });

  it('sweep with a warm-up: it runs before the first measured stage, at its rate, and stays out of every result (audit 10 Z6-2)', async () => {
    const result = await benchAgainst(server, { load: sweepLoad(0.5), maxTokens: 3, promptTokens: 4, seed: 9 });
    const warm = result.records.filter((r) => r.warmup);
    expect(warm.length).toBeGreaterThan(0);
    expect(warm.every((r) => r.stage === 0)).toBe(true);
    expect(result.report.load_summary.count).toBe(result.records.length - 8 - warm.length);
  });
});

describe('timeouts and LoRA', () => {
  it('a request slower than the timeout fails as a timeout and is reported, not lost', async () => {
    const slow = await startServer({ seed: 1, ttftMs: 2000, itlMs: 5 });
    try {
      const result = await benchAgainst(slow, { stream: true, rate: 10, durationSec: 0.3, maxTokens: 2, promptTokens: 4, timeoutMs: 150 });
      expect(result.records).toHaveLength(3);
      expect(result.report.failures.by_kind.timeout?.count).toBe(3);
      expect(result.report.failures.by_kind.timeout?.sample_messages[0]).toMatch(/150 ms/);
    } finally {
      await slow.close();
    }
  });

  it('LoRA traffic split: each request names an adapter drawn by weight', async () => {
    const lora = await startServer({
      seed: 1,
      ttftMs: 5,
      itlMs: 1,
      loraModules: [
        { name: 'sql-lora', path: '/adapters/sql', baseModelName: null },
        { name: 'chat-lora', path: '/adapters/chat', baseModelName: null },
      ],
    });
    try {
      const result = await benchAgainst(lora, { rate: 100, durationSec: 0.6, maxTokens: 2, promptTokens: 4, seed: 2, lora: [{ name: 'sql-lora', weight: 3 }, { name: 'chat-lora', weight: 1 }] });
      expect(result.report.failures.count).toBe(0);
      const models = result.records.map((r) => truthOf(lora, r).model);
      const sql = models.filter((m) => m === 'sql-lora').length;
      expect(sql + models.filter((m) => m === 'chat-lora').length).toBe(60);
      expect(sql).toBeGreaterThan(35);
      expect(sql).toBeLessThan(55);
    } finally {
      await lora.close();
    }
  });
});
