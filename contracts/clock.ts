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
  /**
   * A clock that moves only when told to calls `listener` each time it moves (returns the
   * unsubscribe): whoever waits on it waits for that, never for real time. Absent on the real clock.
   */
  onAdvance?(listener: () => void): () => void;
}

/**
 * `performance.now()` minus wall-clock epoch milliseconds, taken at Date.now()'s tick edges: a
 * reading made right after the wall clock turns a millisecond is a few µs past that instant, so
 * the smallest of several such differences pins the anchor to microseconds. Node's own
 * `timeOrigin` pairs two clock reads at startup, and a process preempted between them (a busy
 * machine starting a server) stays off by that preemption, about a millisecond, for its whole
 * life: its records would not line up with another process's. A preemption can also fall between
 * an edge and its reading, so edges are taken until the two best agree (on a quiet machine, the
 * first three), at most 12 or for 20 ms. Falls back to `timeOrigin` when the wall clock does not
 * tick (a frozen or faked Date).
 */
function epochOffsetMs(): number {
  // Each pairing errs one way only (a delay between the tick and the reading), so the least wins.
  const AGREE_MS = 0.02;
  let best = Infinity;
  let second = Infinity;
  const deadline = performance.now() + 20;
  for (let i = 0; i < 12; i++) {
    const start = Date.now();
    let edge = start;
    while (edge === start && performance.now() < deadline) edge = Date.now();
    if (edge === start) break;
    const offset = performance.now() - edge;
    if (offset < best) [best, second] = [offset, best];
    else if (offset < second) second = offset;
    if (i >= 2 && second - best <= AGREE_MS) break;
  }
  return best === Infinity ? -performance.timeOrigin : best;
}

const EPOCH_OFFSET_MS = epochOffsetMs();

/** The real clock: `performance.now()`, mapped onto the wall clock at microsecond precision. */
export const realClock: Clock = Object.freeze({
  now: () => performance.now(),
  epochMs: (reading: number) => reading - EPOCH_OFFSET_MS,
});

/** A clock that only moves when told to; used to run the whole pipeline in memory. */
export class VirtualClock implements Clock {
  #now: number;
  readonly #originEpochMs: number;
  readonly #listeners = new Set<() => void>();

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
    // NaN compares false with everything: it would pass the check below and let the clock go back later.
    if (Number.isNaN(ms)) throw new RangeError('virtual clock cannot be set to NaN');
    if (ms < this.#now) throw new RangeError(`virtual clock cannot go back from ${this.#now} to ${ms}`);
    const moved = ms > this.#now;
    this.#now = ms;
    if (moved) for (const listener of this.#listeners) listener();
  }

  onAdvance(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  advance(deltaMs: number): void {
    this.set(this.#now + deltaMs);
  }
}
