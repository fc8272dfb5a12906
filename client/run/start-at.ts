/**
 * `--start-at`: waiting for a run's shared start, with the lead its set-up needs before it, and
 * a note when the start is missed (a shard that starts late skews a merge of shards).
 */
import type { Clock } from '../../contracts/clock.ts';

/** How long before the start the transport's first use is made (it takes milliseconds). */
export const READY_LEAD_MS = 1_000;
/**
 * How long before it worker threads are started: their set-up and first use take from a
 * fraction of a second to seconds on a loaded machine, and their connections must not idle
 * out (4 s) before the start.
 */
export const WORKERS_SETUP_LEAD_MS = 3_500;
/** A start missed by more than this is said on stderr. */
export const LATE_START_NOTE_MS = 50;

export function lateStartNote(lateMs: number): void {
  process.stderr.write(`benchtruth: note: the run started ${Math.round(lateMs)} ms after --start-at (its set-up took longer than the lead it was given)\n`);
}

/** Resolves at epoch `epochMs` on the run's clock, or at once when `signal` aborts. */
export function sleepUntilEpoch(clock: Clock, epochMs: number, signal: AbortSignal): Promise<void> {
  const delayMs = epochMs - clock.epochMs(clock.now());
  if (delayMs <= 0 || signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    // Whole milliseconds: the timer never fires early, so the schedule starts at or just after it.
    const timer = setTimeout(done, Math.ceil(delayMs));
    signal.addEventListener('abort', done, { once: true });
  });
}
