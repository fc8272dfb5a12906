/**
 * How a command counts the stop signals it gets (SIGINT, SIGTERM, SIGHUP): the first stops it
 * gracefully, a second ends the grace, a third leaves at once. A signal that repeats the one just
 * counted within SAME_STOP_WITHIN_MS is its echo, not another stop: launchers pass a signal on
 * to their child and its process group (timeout(1), npx, tsx). Under `serve --workers` only the
 * primary counts, and tells the workers each stop. Pure: the caller gives the time.
 */

/** A repeat of the last counted signal this soon is its echo. */
export const SAME_STOP_WITHIN_MS = 250;

export type StopStep = 'stop' | 'end-grace' | 'leave' | 'echo';

export class StopSignals {
  #count = 0;
  #last: { signal: string; atMs: number } | null = null;

  /** What `signal`, arriving at `atMs` (any monotonic clock), asks of the command. */
  next(signal: string, atMs: number): StopStep {
    const last = this.#last;
    if (last !== null && signal === last.signal && atMs - last.atMs < SAME_STOP_WITHIN_MS) return 'echo';
    this.#last = { signal, atMs };
    this.#count++;
    return this.#count === 1 ? 'stop' : this.#count === 2 ? 'end-grace' : 'leave';
  }
}
