/** Counting stop signals: echoes of the last one within 250 ms are no second stop (audit 18-S1). */
import { describe, expect, it } from 'vitest';
import { SAME_STOP_WITHIN_MS, StopSignals } from '../../contracts/stop-signals.ts';

describe('StopSignals', () => {
  it('stop, end the grace, leave; echoes of the last signal in between are left out', () => {
    const stops = new StopSignals();
    expect(stops.next('SIGTERM', 0)).toBe('stop');
    expect(stops.next('SIGTERM', 1)).toBe('echo');
    expect(stops.next('SIGTERM', SAME_STOP_WITHIN_MS - 1)).toBe('echo');
    expect(stops.next('SIGTERM', 5_000)).toBe('end-grace');
    // A worker's copy of the second Ctrl-C from its primary, a few ms after the terminal's.
    expect(stops.next('SIGTERM', 5_003)).toBe('echo');
    expect(stops.next('SIGTERM', 9_000)).toBe('leave');
    expect(stops.next('SIGTERM', 20_000)).toBe('leave');
  });

  it('a different signal is never an echo', () => {
    const stops = new StopSignals();
    expect(stops.next('SIGINT', 0)).toBe('stop');
    expect(stops.next('SIGTERM', 1)).toBe('end-grace');
  });
});
