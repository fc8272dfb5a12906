/**
 * The real clock's wall-clock mapping: anchored at Date.now()'s tick edges, it agrees with the
 * wall clock (to the generous tolerance a shared machine allows) and with performance's own
 * timeline, and it keeps the monotonic readings' spacing exactly.
 */
import { describe, expect, it } from 'vitest';
import { realClock, VirtualClock } from '../../contracts/clock.ts';

describe('realClock.epochMs', () => {
  it('lines a reading up with the wall clock', () => {
    const before = Date.now();
    const epoch = realClock.epochMs(realClock.now());
    const after = Date.now();
    expect(epoch).toBeGreaterThanOrEqual(before - 50);
    expect(epoch).toBeLessThanOrEqual(after + 50);
    // Node's own anchor is a few µs from ours unless its startup pairing was preempted.
    expect(Math.abs(epoch - (performance.timeOrigin + realClock.now()))).toBeLessThan(50);
  });

  it('keeps the spacing of readings', () => {
    expect(realClock.epochMs(1234.5) - realClock.epochMs(1000)).toBeCloseTo(234.5, 9);
  });
});

describe('VirtualClock', () => {
  it('moves only forward, and refuses NaN, which would pass the backward check and let it go back later (review 20)', () => {
    const clock = new VirtualClock();
    clock.set(5);
    clock.advance(2);
    expect(clock.now()).toBe(7);
    expect(() => clock.set(3)).toThrow(RangeError);
    expect(() => clock.set(Number.NaN)).toThrow(RangeError);
    expect(() => clock.advance(Number.NaN)).toThrow(RangeError);
    expect(clock.now()).toBe(7);
  });
});
