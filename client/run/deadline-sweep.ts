/**
 * The in-flight requests of a run and their timeouts, with one timer for all of them (never a
 * timer per request): it is armed for the earliest deadline in flight, aborts what is due when
 * it fires and re-arms for the next. A request is therefore cut off at its deadline, so a
 * closed loop's slot frees then, not at the next tick of a periodic sweep. A request that
 * finishes first costs nothing: the timer, when it fires for it, just moves on.
 */
import { MAX_TIMER_MS, type Clock } from '../../contracts/clock.ts';
import { RequestTimeout, type InFlight } from '../send/http-sender.ts';


export class DeadlineSweep {
  readonly #clock: Clock;
  readonly #timeoutMs: number;
  readonly #inFlight = new Set<InFlight>();
  #timer: NodeJS.Timeout | null = null;
  #armedAt = Infinity;
  readonly #fire = (): void => this.#sweep();

  constructor(clock: Clock, timeoutMs: number) {
    this.#clock = clock;
    this.#timeoutMs = timeoutMs;
  }

  add(handle: InFlight): void {
    this.#inFlight.add(handle);
    this.#arm(handle.deadlineMs);
  }

  delete(handle: InFlight): void {
    this.#inFlight.delete(handle);
  }

  /** Aborts every request still in flight with `reason` (the end of an interrupt's grace period). */
  abortAll(reason: Error): void {
    for (const handle of this.#inFlight) handle.abort(reason);
  }

  stop(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#armedAt = Infinity;
  }

  #arm(deadlineMs: number): void {
    if (deadlineMs >= this.#armedAt) return;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#armedAt = deadlineMs;
    this.#timer = setTimeout(this.#fire, Math.min(MAX_TIMER_MS, Math.max(0, deadlineMs - this.#clock.now())));
  }

  #sweep(): void {
    this.#timer = null;
    this.#armedAt = Infinity;
    const now = this.#clock.now();
    let next = Infinity;
    for (const handle of this.#inFlight) {
      if (now >= handle.deadlineMs) handle.abort(new RequestTimeout(this.#timeoutMs));
      else if (handle.deadlineMs < next) next = handle.deadlineMs;
    }
    if (next < Infinity) this.#arm(next);
  }
}
