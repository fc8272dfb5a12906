/**
 * Real-socket timing tests assert the contract's tolerances, and a 2-core shared machine now
 * and then stalls this process for longer than a tolerance (a scheduler time slice, a GC pause).
 * Such a run says nothing about the code, so it is repeated — but only when a stall was
 * actually observed during it (event-loop delay or GC pause). A violation in a run with no
 * observed stall fails at once, and so does one that survives every attempt.
 */
import { STALL_EVIDENCE_MS, watchStalls } from '../../client/measure/stall-watch.ts';

export { STALL_EVIDENCE_MS };

export interface TimedOutcome<T> {
  result: T;
  violations: string[];
  attempts: number;
  /** The longest stall seen in each attempt, ms. */
  stalls: number[];
}

export async function runTimed<T>(scenario: () => Promise<T>, violationsOf: (result: T) => string[] | Promise<string[]>, maxAttempts = 6): Promise<TimedOutcome<T>> {
  const stalls: number[] = [];
  for (let attempt = 1; ; attempt++) {
    const watch = watchStalls();
    const result = await scenario();
    const stall = watch.stop();
    stalls.push(stall);
    const violations = await violationsOf(result);
    if (violations.length === 0 || stall < STALL_EVIDENCE_MS || attempt >= maxAttempts) {
      return { result, violations, attempts: attempt, stalls };
    }
    console.warn(`timing: ${violations.length} tolerance miss(es) in a run where this process stalled ${stall.toFixed(1)} ms; repeating (attempt ${attempt + 1} of ${maxAttempts}). First: ${violations[0]}`);
  }
}
