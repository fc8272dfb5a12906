/**
 * One timer for every in-flight request's timeout: each is aborted at its own deadline (so a
 * closed loop's slot frees then), requests that finish first cost nothing, and far deadlines
 * never arm an overflowing timer.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Clock } from '../../../contracts/clock.ts';
import { DeadlineSweep } from '../../../client/run/deadline-sweep.ts';
import type { InFlight } from '../../../client/send/http-sender.ts';

const clock: Clock = { now: () => Date.now(), epochMs: (reading) => reading };

/** An in-flight request that, as a real one does once aborted, settles and leaves the set. */
function handle(deadlineMs: number, aborted: Array<[number, number]>, sweep: DeadlineSweep): InFlight {
  const h: InFlight = {
    deadlineMs,
    abort: () => {
      aborted.push([deadlineMs, Date.now()]);
      sweep.delete(h);
    },
  };
  return h;
}

describe('DeadlineSweep', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('aborts each request at its own deadline, whatever order they were added in', () => {
    const aborted: Array<[number, number]> = [];
    const sweep = new DeadlineSweep(clock, 100);
    for (const deadline of [130, 100, 175, 101]) sweep.add(handle(deadline, aborted, sweep));
    vi.advanceTimersByTime(200);
    // Each at its deadline (a timer fires on the millisecond), not at the next tick of a periodic sweep.
    expect(aborted.map(([deadline, at]) => at - deadline)).toEqual([0, 0, 0, 0]);
    expect(aborted.map(([deadline]) => deadline)).toEqual([100, 101, 130, 175]);
    sweep.stop();
  });

  it('a request that finished is never aborted, and the timer moves on to the next deadline', () => {
    const aborted: Array<[number, number]> = [];
    const sweep = new DeadlineSweep(clock, 100);
    const early = handle(50, aborted, sweep);
    sweep.add(early);
    sweep.add(handle(80, aborted, sweep));
    sweep.delete(early);
    vi.advanceTimersByTime(100);
    expect(aborted).toEqual([[80, 80]]);
    expect(vi.getTimerCount()).toBe(0);
    sweep.stop();
  });

  it('a deadline beyond one timer’s reach arms the longest timer, never a 1 ms busy loop', () => {
    const aborted: Array<[number, number]> = [];
    const sweep = new DeadlineSweep(clock, 3e9);
    sweep.add(handle(3e9, aborted, sweep));
    vi.advanceTimersByTime(1000);
    expect(aborted).toEqual([]);
    expect(vi.getTimerCount()).toBe(1);
    sweep.stop();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('abortAll cuts off everything still in flight (the end of the grace period)', () => {
    const reasons: string[] = [];
    const sweep = new DeadlineSweep(clock, 100);
    sweep.add({ deadlineMs: 100, abort: (r) => reasons.push(r.message) });
    sweep.add({ deadlineMs: 120, abort: (r) => reasons.push(r.message) });
    sweep.abortAll(new Error('grace over'));
    expect(reasons).toEqual(['grace over', 'grace over']);
    sweep.stop();
  });
});
