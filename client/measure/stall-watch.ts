/**
 * Watches this thread for stalls: event-loop delay beyond the monitor's own 1 ms granularity,
 * and GC pauses. A stall delays every arrival stamp taken during it, so a truth comparison
 * made across one says more about the machine than about the measurement.
 */
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';

/** A stall this long can explain a tolerance miss (clean runs deviate by about 1 ms). */
export const STALL_EVIDENCE_MS = 2;

export interface StallWatch {
  /** Stops watching; returns the longest stall seen, in ms. */
  stop(): number;
}

export function watchStalls(): StallWatch {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  let worstGc = 0;
  const gc = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) worstGc = Math.max(worstGc, entry.duration);
  });
  gc.observe({ entryTypes: ['gc'] });
  return {
    stop(): number {
      delay.disable();
      gc.disconnect();
      return Math.max(delay.max / 1e6 - 1, worstGc);
    },
  };
}
