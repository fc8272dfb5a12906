/**
 * The stage runner without sockets: a fake `issue` whose requests finish when the test says,
 * so closed-loop concurrency and worker shares are checked exactly.
 */
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../contracts/clock.ts';
import type { StagePlan } from '../../../client/load/load-plan.ts';
import { runStage, shareOf } from '../../../client/run/stage-runner.ts';

function fakeIo(clock: VirtualClock, finishAfterTicks: (n: number) => number) {
  let inFlight = 0;
  let peak = 0;
  let issued = 0;
  const log: Array<{ warmup: boolean; scheduledMs: number }> = [];
  const controller = new AbortController();
  return {
    controller,
    stats: () => ({ peak, issued, log, inFlight }),
    io: {
      clock,
      signal: controller.signal,
      issue: async (_stage: number, warmup: boolean, scheduledMs: number) => {
        const n = issued++;
        log.push({ warmup, scheduledMs });
        peak = Math.max(peak, ++inFlight);
        for (let i = 0; i < finishAfterTicks(n); i++) await Promise.resolve();
        clock.advance(1);
        inFlight--;
      },
    },
  };
}

describe('closed loop', () => {
  it.each([1, 3, 8])('holds exactly %i in flight and sends exactly count', async (concurrency) => {
    const clock = new VirtualClock();
    const fake = fakeIo(clock, (n) => 1 + ((n * 7) % 5));
    const plan: StagePlan = { stage: 0, kind: 'closed', loadType: 'concurrency', concurrency, count: 25, warmupMs: 0 };
    await runStage(plan, fake.io);
    expect(fake.stats().peak).toBe(concurrency);
    expect(fake.stats().issued).toBe(25);
  });

  it('requests started in the warm-up window are flagged and come on top of count', async () => {
    const clock = new VirtualClock();
    const fake = fakeIo(clock, () => 1);
    await runStage({ stage: 0, kind: 'closed', loadType: 'concurrency', concurrency: 2, count: 6, warmupMs: 4 }, fake.io);
    const { log } = fake.stats();
    expect(log.filter((l) => !l.warmup)).toHaveLength(6);
    expect(log.filter((l) => l.warmup).length).toBeGreaterThan(0);
    expect(log.every((l) => l.warmup === l.scheduledMs < 4)).toBe(true);
  });

  it("a lane's next send is scheduled at its last request's end, so time lost between them is schedule_delay (X6-3)", async () => {
    const clock = new VirtualClock();
    const log: Array<{ scheduledMs: number; issuedMs: number }> = [];
    const io = {
      clock,
      signal: new AbortController().signal,
      issue: async (_stage: number, _warmup: boolean, scheduledMs: number): Promise<number> => {
        log.push({ scheduledMs, issuedMs: clock.now() });
        clock.advance(10);
        const endMs = clock.now();
        // The client is busy 3 ms after each end (recording it) before the lane sends again.
        clock.advance(3);
        return endMs;
      },
    };
    await runStage({ stage: 0, kind: 'closed', loadType: 'concurrency', concurrency: 1, count: 3, warmupMs: 0 }, io);
    expect(log).toEqual([
      { scheduledMs: 0, issuedMs: 0 },
      { scheduledMs: 10, issuedMs: 13 },
      { scheduledMs: 23, issuedMs: 26 },
    ]);
  });

  it("every lane's first send is due at the stage's start, so lanes the client starts late show it (audit 12-Y6-1)", async () => {
    const clock = new VirtualClock();
    const log: Array<{ warmup: boolean; scheduledMs: number; issuedMs: number }> = [];
    const io = {
      clock,
      signal: new AbortController().signal,
      issue: async (_stage: number, warmup: boolean, scheduledMs: number): Promise<number> => {
        // Setting a request up costs the client 2 ms before the next lane gets to run.
        log.push({ warmup, scheduledMs, issuedMs: clock.now() });
        clock.advance(2);
        await Promise.resolve();
        clock.advance(50);
        return clock.now();
      },
    };
    await runStage({ stage: 0, kind: 'closed', loadType: 'concurrency', concurrency: 3, count: 3, warmupMs: 0 }, io);
    expect(log.map(({ scheduledMs, issuedMs }) => [scheduledMs, issuedMs])).toEqual([[0, 0], [0, 2], [0, 4]]);
    log.length = 0;
    await runStage({ stage: 1, kind: 'closed', loadType: 'concurrency', concurrency: 2, count: 2, warmupMs: 1 }, io, undefined, clock.now());
    const warm = log.filter((l) => l.warmup);
    const measured = log.filter((l) => !l.warmup);
    expect(new Set(warm.slice(0, 2).map((l) => l.scheduledMs)).size).toBe(1);
    expect(measured.map((l) => l.scheduledMs)).toEqual([measured[0]?.scheduledMs, measured[0]?.scheduledMs]);
    expect((measured[1]?.issuedMs ?? 0) - (measured[1]?.scheduledMs ?? 0)).toBe(2);
  });

  it('an abort stops new sends; in-flight ones finish', async () => {
    const clock = new VirtualClock();
    const fake = fakeIo(clock, () => 2);
    const done = runStage({ stage: 0, kind: 'closed', loadType: 'concurrency', concurrency: 4, count: 1000, warmupMs: 0 }, fake.io);
    for (let i = 0; i < 20; i++) await Promise.resolve();
    fake.controller.abort();
    await done;
    expect(fake.stats().issued).toBeLessThan(1000);
  });
});

describe('worker shares', () => {
  it.each([
    [10, 3, [4, 3, 3]],
    [2, 4, [1, 1, 0, 0]],
  ])('%i split over %i workers', (total, workers, expected) => {
    expect(Array.from({ length: workers }, (_, worker) => shareOf(total, { worker, workers }))).toEqual(expected);
  });

  it('open loop: worker w sends every workers-th planned send, at its planned offset', async () => {
    const clock = new VirtualClock();
    const plan: StagePlan = { stage: 0, kind: 'open', loadType: 'constant', intendedRate: 1000, sends: Array.from({ length: 7 }, (_, i) => ({ offsetMs: 0, warmup: i < 2 })) };
    const logs = await Promise.all(
      [0, 1].map(async (worker) => {
        const fake = fakeIo(clock, () => 0);
        await runStage(plan, fake.io, { worker, workers: 2 });
        return fake.stats().log.map((l) => l.warmup);
      }),
    );
    expect(logs).toEqual([
      [true, false, false, false],
      [true, false, false],
    ]);
  });
});

describe('warm-up is a phase of its own', () => {
  it('open loop: measuredStart comes once the warm-up has drained; the measured schedule keeps its spacing from there', async () => {
    const clock = new VirtualClock();
    const fake = fakeIo(clock, (n) => 1 + (n % 3));
    const inFlightAtStart: number[] = [];
    const plan: StagePlan = { stage: 0, kind: 'open', loadType: 'constant', intendedRate: 1, sends: [0, 0, 0, 0, 0].map((offsetMs, i) => ({ offsetMs, warmup: i < 2 })) };
    await runStage(plan, {
      ...fake.io,
      measuredStart: () => {
        inFlightAtStart.push(fake.stats().inFlight);
        clock.advance(10);
        return Promise.resolve(clock.now());
      },
    });
    const { log, peak } = fake.stats();
    expect(inFlightAtStart).toEqual([0]);
    expect(fake.stats().log).toHaveLength(5);
    expect(peak).toBeGreaterThan(0);
    expect(log.map((l) => l.warmup)).toEqual([true, true, false, false, false]);
    // Scheduled at the origin measuredStart answered (the warm-up took the clock to 2, then +10).
    expect(log.filter((l) => !l.warmup).map((l) => l.scheduledMs)).toEqual([12, 12, 12]);
  });

  it('a worker whose share holds no warm-up send still reaches measuredStart (its barrier must not wait forever)', async () => {
    const clock = new VirtualClock();
    const plan: StagePlan = { stage: 0, kind: 'open', loadType: 'constant', intendedRate: 1, sends: [true, false, false].map((warmup) => ({ offsetMs: 0, warmup })) };
    const calls: number[] = [];
    await Promise.all(
      [0, 1].map((worker) => {
        const fake = fakeIo(clock, () => 0);
        return runStage(plan, { ...fake.io, measuredStart: () => Promise.resolve(void calls.push(worker)) }, { worker, workers: 2 });
      }),
    );
    expect(calls.sort()).toEqual([0, 1]);
  });

  it('measuredStart answering null (a stopped run) sends no measured request', async () => {
    const clock = new VirtualClock();
    const fake = fakeIo(clock, () => 0);
    await runStage({ stage: 0, kind: 'closed', loadType: 'concurrency', concurrency: 2, count: 5, warmupMs: 2 }, { ...fake.io, measuredStart: () => Promise.resolve(null) });
    expect(fake.stats().log.every((l) => l.warmup)).toBe(true);
  });
});
