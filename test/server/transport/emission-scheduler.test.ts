/** The one scheduler every stream shares: order of due work, parking, deferred jobs. Order only, never timing. */
import { describe, expect, it, vi } from 'vitest';
import { realClock } from '../../../contracts/clock.ts';
import { EmissionScheduler, type ScheduledTask } from '../../../server/transport/emission-scheduler.ts';

/** Waits until `done()` holds (a stalled machine only makes it slower), at most 5 s. */
async function until(done: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!done() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 2));
}

describe('EmissionScheduler', () => {
  it('runs tasks in due order and reschedules a task at the time it returns', async () => {
    const scheduler = new EmissionScheduler(realClock);
    const seen: string[] = [];
    const now = realClock.now();
    // Due times are absolute, so however late a turn runs, due order decides.
    let left = 3;
    const repeating: ScheduledTask = {
      run: () => {
        seen.push(`r${left}`);
        left--;
        return left > 0 ? now + 6 - left : null;
      },
    };
    scheduler.schedule({ run: () => (seen.push('b'), null) }, now + 6.5);
    scheduler.schedule({ run: () => (seen.push('a'), null) }, now + 2);
    scheduler.schedule(repeating, now + 3);
    await until(() => seen.length === 5);
    expect(seen).toEqual(['a', 'r3', 'r2', 'r1', 'b']);
    expect(scheduler.pending).toBe(0);
  });

  it('parks a task that returns Infinity until it is woken', async () => {
    const scheduler = new EmissionScheduler(realClock);
    let runs = 0;
    const task: ScheduledTask = { run: () => (++runs === 1 ? Infinity : null) };
    scheduler.schedule(task, realClock.now());
    await until(() => runs === 1);
    // Parked: a task due later still runs, and the parked one has not run again by then
    // (parked tasks are not in `pending`, so waiting for it to drain would prove nothing).
    let later = false;
    scheduler.schedule({ run: () => ((later = true), null) }, realClock.now() + 5);
    await until(() => later);
    expect(later).toBe(true);
    expect(runs).toBe(1);
    scheduler.wake(task, realClock.now());
    await until(() => runs === 2);
    expect(runs).toBe(2);
  });

  it('runs deferred jobs in order, after the writes already due, and keeps going when one throws', async () => {
    const scheduler = new EmissionScheduler(realClock);
    const seen: string[] = [];
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    scheduler.schedule({ run: () => (seen.push('write'), null) }, realClock.now() - 1);
    scheduler.defer(() => seen.push('job 1'));
    scheduler.defer(() => {
      throw new Error('broken');
    });
    scheduler.defer(() => seen.push('job 3'));
    await until(() => seen.length === 3);
    expect(seen).toEqual(['write', 'job 1', 'job 3']);
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('broken'));
    warn.mockRestore();
  });

  it('a job scheduled while another write is far off still runs at once', async () => {
    const scheduler = new EmissionScheduler(realClock);
    const seen: string[] = [];
    const writeAt = realClock.now() + 60_000;
    scheduler.schedule({ run: () => (seen.push('late write'), null) }, writeAt);
    scheduler.defer(() => seen.push('job'));
    await until(() => seen.length > 0);
    expect(seen[0]).toBe('job');
    scheduler.clear();
  });
});

describe('EmissionScheduler: a task that throws', () => {
  it('is dropped and told (fail), the process does not see the throw, and the other tasks keep running', async () => {
    const scheduler = new EmissionScheduler(realClock);
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const seen: string[] = [];
    const failures: unknown[] = [];
    const now = realClock.now();
    let brokenRuns = 0;
    scheduler.schedule(
      {
        run: () => {
          brokenRuns++;
          throw new TypeError('Invalid character in header content');
        },
        fail: (error) => failures.push(error),
      },
      now,
    );
    // A task without fail() that throws is dropped too.
    scheduler.schedule({ run: () => { throw new Error('no cleanup'); } }, now + 0.5);
    scheduler.schedule({ run: () => (seen.push('after'), null) }, now + 1);
    await until(() => seen.length === 1);
    expect(seen).toEqual(['after']);
    expect(brokenRuns).toBe(1);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toBeInstanceOf(TypeError);
    expect(scheduler.pending).toBe(0);
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('Invalid character in header content'));
    warn.mockRestore();
  });

  it('tallies the lateness of writing runs only: a run its task says prepares (writes nothing) is left out', async () => {
    const scheduler = new EmissionScheduler(realClock);
    let runs = 0;
    const preparing: ScheduledTask & { preparing: boolean } = {
      preparing: true,
      run: () => {
        runs++;
        if (runs === 1) {
          preparing.preparing = false;
          return realClock.now();
        }
        return null;
      },
    };
    scheduler.schedule(preparing, realClock.now());
    scheduler.schedule({ run: () => null }, realClock.now());
    await until(() => runs === 2 && scheduler.pending === 0);
    expect(runs).toBe(2);
    // The other task's run and the preparing task's second (writing) run.
    expect(scheduler.lateness.summary().count).toBe(2);
  });
});
