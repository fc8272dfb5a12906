/**
 * The one way benchtruth reads time. Every timestamp is a fractional millisecond count on a
 * monotonic timeline; `epochMs` maps a reading onto wall-clock milliseconds from one
 * process-wide origin so that records written by different processes on one machine line up.
 */
/**
 * The longest delay Node's setTimeout honours (2^31−1 ms, about 24.8 days): a longer one fires
 * after 1 ms, so every timer armed for a far time is clamped to this and re-armed.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export interface Clock {
  /** Monotonic milliseconds (fractional). Never goes backwards. */
  now(): number;
  /** Wall-clock epoch milliseconds of a reading of `now()`. */
  epochMs(reading: number): number;
}

/** The real clock: `performance.now()` anchored at `performance.timeOrigin`. */
export const realClock: Clock = Object.freeze({
  now: () => performance.now(),
  epochMs: (reading: number) => performance.timeOrigin + reading,
});

/** A clock that only moves when told to; used to run the whole pipeline in memory. */
export class VirtualClock implements Clock {
  #now: number;
  readonly #originEpochMs: number;

  constructor(startMs = 0, originEpochMs = 0) {
    this.#now = startMs;
    this.#originEpochMs = originEpochMs;
  }

  now(): number {
    return this.#now;
  }

  epochMs(reading: number): number {
    return this.#originEpochMs + reading;
  }

  /** Moves time forward to `ms`; moving backwards is a bug in the caller. */
  set(ms: number): void {
    if (ms < this.#now) throw new RangeError(`virtual clock cannot go back from ${this.#now} to ${ms}`);
    this.#now = ms;
  }

  advance(deltaMs: number): void {
    this.set(this.#now + deltaMs);
  }
}
