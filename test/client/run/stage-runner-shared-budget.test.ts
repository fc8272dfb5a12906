/**
 * A closed loop over several workers: their lanes claim measured sends from one budget, so the
 * count is sent exactly (never lost to a worker with no lane) and N stay in flight until it is
 * exhausted. Simulated workers share one fake server whose requests finish only when the test
 * says (in a seeded order); between steps every pending microtask runs, so nothing is timed.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../contracts/clock.ts';
import { Rng } from '../../../contracts/rng.ts';
import type { StagePlan } from '../../../client/load/load-plan.ts';
import { closedCountOf, localBudget, runStage, sharedBudget, shareOf, type SendBudget, type StageIo } from '../../../client/run/stage-runner.ts';

/** Every microtask queued so far (and those they queue) has run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function fakeServer() {
  const clock = new VirtualClock();
  const finishers: Array<() => void> = [];
  const stats = { inFlight: 0, peak: 0, measured: 0, warmup: 0 };
  const io = (measuredBudget?: SendBudget): StageIo => ({
    clock,
    signal: new AbortController().signal,
    issue: (_stage, warmup) => {
      if (warmup) stats.warmup++;
      else stats.measured++;
      stats.peak = Math.max(stats.peak, ++stats.inFlight);
      return new Promise<void>((resolve) =>
        finishers.push(() => {
          stats.inFlight--;
          resolve();
        }),
      );
    },
    ...(measuredBudget === undefined ? {} : { measuredBudget }),
  });
  return { clock, finishers, stats, io };
}

/**
 * Runs `workers` simulated workers of one closed stage, finishing one request at a time in a
 * seeded order; returns the in-flight count seen after each step while sends were left.
 */
async function runWorkers(plan: Extract<StagePlan, { kind: 'closed' }>, workers: number, budgetOf: (worker: number) => SendBudget | undefined) {
  const server = fakeServer();
  const rng = new Rng(7);
  let finished = false;
  const done = Promise.all(Array.from({ length: workers }, (_, worker) => runStage(plan, server.io(budgetOf(worker)), { worker, workers }, 0))).then(() => (finished = true));
  const inFlightWhileSending: number[] = [];
  // Bounded: every step finishes one request, and there are at most count of them.
  for (let step = 0; step <= plan.count; step++) {
    await settle();
    if (finished) break;
    if (server.stats.measured < plan.count) inFlightWhileSending.push(server.stats.inFlight);
    const next = server.finishers.splice(rng.int(0, server.finishers.length - 1), 1)[0];
    next?.();
  }
  await settle();
  expect(finished).toBe(true);
  await done;
  return { ...server.stats, inFlightWhileSending };
}

const closed = (concurrency: number, count: number): Extract<StagePlan, { kind: 'closed' }> => ({ stage: 0, kind: 'closed', loadType: 'concurrency', concurrency, count, warmupMs: 0 });

describe('closed loop over workers sharing one budget', () => {
  it('--concurrency 1 --count 10 over 2 workers sends all 10 (the worker with no lane claims none)', async () => {
    const budget = localBudget(10);
    const result = await runWorkers(closed(1, 10), 2, () => budget);
    expect(result.measured).toBe(10);
    expect(result.peak).toBe(1);
  });

  it.each([
    [4, 60, 3],
    [6, 120, 2],
    [5, 23, 4],
    [2, 9, 3],
  ])('--concurrency %i --count %i over %i workers: exactly count sent, N in flight until it is exhausted', async (concurrency, count, workers) => {
    const budget = localBudget(count);
    const result = await runWorkers(closed(concurrency, count), workers, () => budget);
    expect(result.measured).toBe(count);
    expect(result.peak).toBe(concurrency);
    expect(result.inFlightWhileSending.length).toBeGreaterThan(0);
    expect(result.inFlightWhileSending.every((n) => n === concurrency)).toBe(true);
  });

  it('the same through a SharedArrayBuffer counter (what worker threads are handed)', async () => {
    const cells = new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT * 2));
    cells[1] = 60;
    const result = await runWorkers(closed(4, 60), 3, () => sharedBudget(cells, 1, 60, 0));
    expect(result.measured).toBe(60);
    expect(result.inFlightWhileSending.every((n) => n === 4)).toBe(true);
    expect(cells[0]).toBe(0);
  });

  it('without a shared budget (shards) each share sends its lanes-proportional part: still the whole count', async () => {
    const result = await runWorkers(closed(1, 10), 2, () => undefined);
    expect(result.measured).toBe(10);
    expect(result.peak).toBe(1);
  });

  it('a warm-up still runs on every lane until its window ends; the measured count is exact after it', async () => {
    const budget = localBudget(12);
    const plan: StagePlan = { ...closed(3, 12), warmupMs: 5 };
    const server = fakeServer();
    const done = Promise.all([0, 1].map((worker) => runStage(plan, server.io(budget), { worker, workers: 2 }, 0)));
    await settle();
    for (let step = 0; step < 100 && server.finishers.length > 0; step++) {
      server.clock.advance(1);
      server.finishers.shift()?.();
      await settle();
    }
    await done;
    expect(server.stats.measured).toBe(12);
    expect(server.stats.warmup).toBeGreaterThan(0);
    expect(server.stats.peak).toBe(3);
  });
});

describe('closedCountOf', () => {
  it.each([
    [1, 10, 2, [10, 0]],
    [4, 60, 3, [30, 15, 15]],
    [3, 10, 4, [3, 3, 4, 0]],
  ])('--concurrency %i --count %i over %i shares: the count in proportion to lanes', (concurrency, count, workers, expected) => {
    expect(Array.from({ length: workers }, (_, worker) => closedCountOf({ concurrency, count }, [{ worker, workers }]))).toEqual(expected);
  });

  it('the parts add up to the count, and a share with no lane carries none', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 1, max: 5000 }), fc.integer({ min: 1, max: 16 }), (concurrency, count, workers) => {
        const shares = Array.from({ length: workers }, (_, worker) => ({ worker, workers }));
        const parts = shares.map((share) => closedCountOf({ concurrency, count }, [share]));
        expect(parts.reduce((a, b) => a + b, 0)).toBe(count);
        expect(closedCountOf({ concurrency, count }, shares)).toBe(count);
        for (const [i, share] of shares.entries()) if (shareOf(concurrency, share) === 0) expect(parts[i]).toBe(0);
      }),
      { seed: 6 },
    );
  });
});
