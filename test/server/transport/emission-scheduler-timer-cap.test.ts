/**
 * A due time further off than Node's timers can represent (2^31−1 ms) must arm one capped
 * timer, not a 1 ms one: Node turns an overflowing delay into 1 ms, and the scheduler would
 * re-arm it in a busy loop (audit 6-B, B1).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Clock } from '../../../contracts/clock.ts';
import { EmissionScheduler } from '../../../server/transport/emission-scheduler.ts';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('EmissionScheduler timer cap', () => {
  it('arms at most 2^31−1 ms for a task due in 999 hours', () => {
    const armed: number[] = [];
    vi.spyOn(globalThis, 'setTimeout').mockImplementation(((_fn: () => void, delay?: number) => {
      armed.push(delay ?? 0);
      return { unref: () => undefined, ref: () => undefined, hasRef: () => false, refresh: () => undefined, [Symbol.toPrimitive]: () => 0 } as unknown as NodeJS.Timeout;
    }) as typeof setTimeout);
    vi.spyOn(globalThis, 'clearTimeout').mockImplementation(() => undefined);
    // A clock standing at 0 that no test moves: the real clock's path, which arms timers.
    const standing: Clock = { now: () => 0, epochMs: (reading) => reading };
    const scheduler = new EmissionScheduler(standing);
    scheduler.schedule({ run: () => null }, 999 * 3_600_000);
    expect(armed).toEqual([2 ** 31 - 1]);
  });

  it('listens to a clock that moves only when told, and lets go of it when cleared (diff review 22: a leak per server on a shared clock)', () => {
    let listeners = 0;
    const virtual: Clock = {
      now: () => 0,
      epochMs: (reading) => reading,
      onAdvance: () => {
        listeners++;
        return () => void listeners--;
      },
    };
    const schedulers = [new EmissionScheduler(virtual), new EmissionScheduler(virtual)];
    expect(listeners).toBe(2);
    for (const scheduler of schedulers) scheduler.clear();
    expect(listeners).toBe(0);
    schedulers[0]?.clear();
    expect(listeners).toBe(0);
  });
});
