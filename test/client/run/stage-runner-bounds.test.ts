/**
 * The stage runner never hands Node a timer delay it cannot hold (over 2^31-1 ms Node fires it
 * after 1 ms: a busy loop that never ends), and a closed loop holds no more lanes than it can
 * use. Fake timers (which emulate that overflow) and a virtual clock: nothing here waits.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { VirtualClock } from '../../../contracts/clock.ts';
import type { StagePlan } from '../../../client/load/load-plan.ts';
import { runStage, type StageIo } from '../../../client/run/stage-runner.ts';

const BEYOND_A_TIMER_MS = 2 ** 32;
const MAX_TIMER_MS = 2 ** 31 - 1;

function countingIo(clock: VirtualClock, measuredStart?: StageIo['measuredStart']) {
  const controller = new AbortController();
  const sent: boolean[] = [];
  let reads = 0;
  const io: StageIo = {
    clock: { now: () => (reads++, clock.now()), epochMs: (ms: number) => clock.epochMs(ms) },
    signal: controller.signal,
    issue: async (_stage, warmup) => {
      sent.push(warmup);
      clock.advance(1);
    },
    ...(measuredStart !== undefined ? { measuredStart } : {}),
  };
  return { io, controller, sent, reads: () => reads };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('timer delays beyond 2^31-1 ms', () => {
  it('an open loop waits for a far send in capped timers, then sends it on time', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const clock = new VirtualClock();
    const fake = countingIo(clock);
    const plan: StagePlan = { stage: 0, kind: 'open', loadType: 'trace', intendedRate: null, sends: [{ offsetMs: 0, warmup: false }, { offsetMs: BEYOND_A_TIMER_MS, warmup: false }] };
    const done = runStage(plan, fake.io, undefined, 0);
    await vi.advanceTimersByTimeAsync(1000);
    // An overflowing delay would have re-armed every 1 ms: ~1000 clock reads by now.
    expect(fake.reads()).toBeLessThan(10);
    expect(fake.sent).toHaveLength(1);
    clock.set(BEYOND_A_TIMER_MS);
    await vi.advanceTimersByTimeAsync(MAX_TIMER_MS);
    await done;
    expect(fake.sent).toHaveLength(2);
  });

  it('a measured start far ahead is waited for, not taken after 1 ms', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const clock = new VirtualClock();
    const fake = countingIo(clock, async () => clock.now() + BEYOND_A_TIMER_MS);
    const done = runStage({ stage: 0, kind: 'closed', loadType: 'concurrency', concurrency: 1, count: 2, warmupMs: 1 }, fake.io, undefined, 0);
    await vi.advanceTimersByTimeAsync(1000);
    expect(fake.sent.filter((warmup) => !warmup)).toHaveLength(0);
    clock.advance(BEYOND_A_TIMER_MS);
    await vi.advanceTimersByTimeAsync(MAX_TIMER_MS);
    await done;
    expect(fake.sent.filter((warmup) => !warmup)).toHaveLength(2);
  });
});

describe('closed-loop lanes', () => {
  it('--concurrency far above the count holds only as many lanes as requests (no allocation of a billion)', async () => {
    const clock = new VirtualClock();
    const fake = countingIo(clock);
    await runStage({ stage: 0, kind: 'closed', loadType: 'concurrency', concurrency: 1e9, count: 1, warmupMs: 0 }, fake.io);
    expect(fake.sent).toEqual([false]);
  });
});
