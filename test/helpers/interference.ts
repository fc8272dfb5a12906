/**
 * Real-socket timing tests assert the contract's tolerances, and a 2-core shared machine now
 * and then stalls this process for longer than a tolerance (a scheduler time slice, a GC pause).
 * Such a run says nothing about the code, so it is repeated — but only when a stall was
 * actually observed during it (event-loop delay or GC pause). A violation in a run with no
 * observed stall fails at once, and so does one that survives every attempt.
 */
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';

/** A stall this long explains a tolerance miss (baseline deviations are about 1 ms). */
export const STALL_EVIDENCE_MS = 2;

interface Watch {
  stop(): number;
}

function watchStalls(): Watch {
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
      // The delay monitor's own timer granularity is 1 ms; anything beyond it is a stall.
      return Math.max(delay.max / 1e6 - 1, worstGc);
    },
  };
}

export interface TimedOutcome<T> {
  result: T;
  violations: string[];
  attempts: number;
  /** The longest stall seen in each attempt, ms. */
  stalls: number[];
}

export async function runTimed<T>(scenario: () => Promise<T>, violationsOf: (result: T) => string[], maxAttempts = 4): Promise<TimedOutcome<T>> {
  const stalls: number[] = [];
  for (let attempt = 1; ; attempt++) {
    const watch = watchStalls();
    const result = await scenario();
    const stall = watch.stop();
    stalls.push(stall);
    const violations = violationsOf(result);
    if (violations.length === 0 || stall < STALL_EVIDENCE_MS || attempt >= maxAttempts) {
      return { result, violations, attempts: attempt, stalls };
    }
    console.warn(`timing: ${violations.length} tolerance miss(es) in a run where this process stalled ${stall.toFixed(1)} ms; repeating (attempt ${attempt + 1} of ${maxAttempts}). First: ${violations[0]}`);
  }
}
