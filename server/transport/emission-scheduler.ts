/**
 * One scheduler for every open stream: a binary heap of due times and a single timer, never a
 * timer per stream. Node timers have millisecond granularity, so the timer is armed a little
 * early and the last stretch is covered by setImmediate turns, which keep serving I/O.
 *
 * In a process that only serves (`sleep: true`, set by `benchtruth serve`), a turn within that
 * last stretch that finds nothing due yet sleeps until the next due time
 * (Atomics.wait: a futex with microsecond resolution) instead of spinning through empty event
 * loop turns: spinning burns a core polling for I/O, sleeping costs one syscall. The sleep is
 * shorter than the gap to the next write (≤ the 1.5 ms window), and every run of due work is
 * followed by a setImmediate turn, so sockets are still served between writes.
 *
 * A task whose next due time is not known yet (the batching engine has not produced the token
 * it waits for) returns Infinity and is parked outside the heap until `wake()`.
 *
 * Planning a new response is deferred work (`defer`): the routes hand it here instead of doing
 * it where the request is read, and a turn runs it in the gaps between writes — one job per
 * turn, more while the next write is not near, and every job that has waited 5 ms at once. A
 * burst of arrivals read in one I/O phase would otherwise plan back to back (a few hundred
 * microseconds each) while writes fall due.
 */
import { MAX_TIMER_MS, type Clock } from '../../contracts/clock.ts';
import { LatenessTally } from '../metrics/lateness-tally.ts';

export interface ScheduledTask {
  /** Runs the task's due work; returns its next absolute due time, or null when it is done. */
  run(now: number): number | null;
  /**
   * Called once when `run` threw; the task is dropped. A response ends itself here (drops its
   * connection, finishes its truth as a fault): one broken response must not take every other
   * stream, or the process, down with it.
   */
  fail?(error: unknown): void;
  /**
   * True while the task's next run writes nothing of its own (a sleeping response queueing the
   * rendering of its plan): that run is left out of the lateness tally, which is the writes'.
   */
  readonly preparing?: boolean;
}

const SPIN_WINDOW_MS = 1.5;
/**
 * Sleep right up to the due time, not short of it: the futex wake-up overshoots by some tens of
 * microseconds, and the writes falling due within that overshoot then leave in the same turn —
 * a deliberate, bounded coalescing that saves a wake-up and a loop turn per write.
 */
/** Shorter gaps are not worth a syscall. */
const MIN_SLEEP_MS = 0.01;
/** Longest stretch of due work run without letting the event loop poll I/O. */
const MAX_TURN_MS = 5;
const SLEEPER = new Int32Array(new SharedArrayBuffer(4));
/** A deferred job starts only if the next write is at least this far away (after the turn's first). */
const JOB_GAP_MS = 0.3;
/**
 * A job that has waited this long runs before anything else that is due, budget or not: an
 * overloaded server must still plan the requests it accepted, or they starve behind the writes.
 */
const JOB_MAX_WAIT_MS = 5;

/** A task whose run threw: let it clean up, and say so; never rethrow into the event loop. */
function failed(task: ScheduledTask, error: unknown): void {
  process.emitWarning(`benchtruth: a scheduled task failed: ${error instanceof Error ? error.message : String(error)}`);
  try {
    task.fail?.(error);
  } catch (cleanup) {
    process.emitWarning(`benchtruth: a failed task's cleanup failed: ${cleanup instanceof Error ? cleanup.message : String(cleanup)}`);
  }
}

export class EmissionScheduler {
  readonly #clock: Clock;
  #due: number[] = [];
  #tasks: ScheduledTask[] = [];
  #timer: NodeJS.Timeout | null = null;
  #timerAt = Infinity;
  #immediate: NodeJS.Immediate | null = null;
  readonly #tick = (): void => this.#runDue();
  readonly #parked = new WeakSet<ScheduledTask>();
  #jobs: Array<() => void> = [];
  #jobTimes: number[] = [];
  /** Lateness (run time − due time) of every task run, for the benchmark and /_engine/emission. */
  readonly lateness = new LatenessTally();

  readonly #sleeps: boolean;
  /** The clock moves only when a test moves it: a due time is waited for by that, never by a timer or a spin. */
  readonly #virtual: boolean;
  /** Lets go of the virtual clock (clear()): a test may build many servers on one clock. */
  #stopListening: (() => void) | null;

  /**
   * `sleep` lets the last stretch block instead of spin: only for a process that does nothing
   * but serve (a client in the same process could not read while the thread sleeps).
   */
  constructor(clock: Clock, options: { sleep?: boolean } = {}) {
    this.#clock = clock;
    this.#sleeps = options.sleep === true;
    this.#virtual = clock.onAdvance !== undefined;
    this.#stopListening = clock.onAdvance?.(() => this.#arm()) ?? null;
  }

  get pending(): number {
    return this.#tasks.length;
  }

  schedule(task: ScheduledTask, dueAt: number): void {
    if (!(dueAt < Infinity)) {
      this.#parked.add(task);
      return;
    }
    this.#push(dueAt, task);
    this.#arm();
  }

  /** Runs `job` in a coming turn, between writes (request planning: see the note above). */
  defer(job: () => void): void {
    this.#jobs.push(job);
    this.#jobTimes.push(this.#clock.now());
    this.#arm();
  }

  /** Puts a parked task back in the heap at `dueAt`; a task that is not parked is left alone. */
  wake(task: ScheduledTask, dueAt: number): void {
    if (!this.#parked.has(task) || !(dueAt < Infinity)) return;
    this.#parked.delete(task);
    this.#push(dueAt, task);
    this.#arm();
  }

  #runDue(): void {
    this.#timer = null;
    this.#timerAt = Infinity;
    this.#immediate = null;
    let now = this.#clock.now();
    const head = this.#due[0];
    if (this.#sleeps && this.#jobs.length === 0 && head !== undefined && head > now + MIN_SLEEP_MS && head - now <= SPIN_WINDOW_MS) {
      Atomics.wait(SLEEPER, 0, 0, head - now);
      now = this.#clock.now();
    }
    const lateness = this.lateness;
    // An overloaded server must still read: after a turn's budget the rest waits one
    // setImmediate, so sockets (new requests, aborts, /metrics) are served between batches.
    const turnEnds = now + MAX_TURN_MS;
    let jobsRun = 0;
    for (;;) {
      while (this.#due.length > 0 && (this.#due[0] as number) <= now && now < turnEnds) {
        const dueAt = this.#due[0] as number;
        const task = this.#pop();
        if (task.preparing !== true) lateness.add(now - dueAt);
        let next: number | null;
        try {
          next = task.run(now);
        } catch (error) {
          failed(task, error);
          next = null;
        }
        if (next !== null) {
          if (next < Infinity) this.#push(next, task);
          else this.#parked.add(task);
        }
        now = this.#clock.now();
      }
      if (this.#jobs.length === 0) break;
      if (now - (this.#jobTimes[0] as number) < JOB_MAX_WAIT_MS) {
        if (now >= turnEnds) break;
        const nextDue = this.#due[0];
        if (jobsRun > 0 && nextDue !== undefined && nextDue - now < JOB_GAP_MS) break;
      }
      const job = this.#jobs.shift() as () => void;
      this.#jobTimes.shift();
      try {
        job();
      } catch (error) {
        // One broken job must not stop every stream's writes.
        process.emitWarning(`benchtruth: a deferred job failed: ${error instanceof Error ? error.message : String(error)}`);
      }
      jobsRun++;
      now = this.#clock.now();
    }
    this.#arm();
  }

  #arm(): void {
    if (this.#immediate !== null) return;
    // Deferred jobs, or a write within the spin window: the next turn is the next check phase.
    const dueAt = this.#due[0];
    const wait = dueAt === undefined ? Infinity : dueAt - this.#clock.now();
    if (this.#virtual) {
      // Due by the test's clock, or jobs to run: the next check phase; else the clock's next move.
      if (this.#jobs.length > 0 || wait <= 0) this.#immediate = setImmediate(this.#tick);
      return;
    }
    if (this.#jobs.length > 0 || wait <= SPIN_WINDOW_MS) {
      if (this.#timer !== null) {
        clearTimeout(this.#timer);
        this.#timer = null;
        this.#timerAt = Infinity;
      }
      this.#immediate = setImmediate(this.#tick);
      return;
    }
    if (dueAt === undefined) return;
    const fireAt = dueAt - SPIN_WINDOW_MS;
    if (this.#timer !== null && this.#timerAt <= fireAt) return;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timerAt = fireAt;
    // Node fires a timer over 2^31−1 ms after 1 ms: clamped, a far due time re-arms once a ~24.8-day wait, not a busy loop.
    this.#timer = setTimeout(this.#tick, Math.min(MAX_TIMER_MS, Math.max(1, Math.floor(wait - SPIN_WINDOW_MS))));
  }

  #push(dueAt: number, task: ScheduledTask): void {
    const due = this.#due;
    const tasks = this.#tasks;
    let i = due.length;
    due.push(dueAt);
    tasks.push(task);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((due[parent] as number) <= dueAt) break;
      due[i] = due[parent] as number;
      tasks[i] = tasks[parent] as ScheduledTask;
      i = parent;
    }
    due[i] = dueAt;
    tasks[i] = task;
  }

  #pop(): ScheduledTask {
    const due = this.#due;
    const tasks = this.#tasks;
    const top = tasks[0] as ScheduledTask;
    const lastDue = due.pop() as number;
    const lastTask = tasks.pop() as ScheduledTask;
    const n = due.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        if (left >= n) break;
        const right = left + 1;
        const child = right < n && (due[right] as number) < (due[left] as number) ? right : left;
        if ((due[child] as number) >= lastDue) break;
        due[i] = due[child] as number;
        tasks[i] = tasks[child] as ScheduledTask;
        i = child;
      }
      due[i] = lastDue;
      tasks[i] = lastTask;
    }
    return top;
  }

  /** Drops every pending task without running it, and stops listening to its clock (server shutdown). */
  clear(): void {
    this.#stopListening?.();
    this.#stopListening = null;
    if (this.#timer !== null) clearTimeout(this.#timer);
    if (this.#immediate !== null) clearImmediate(this.#immediate);
    this.#timer = null;
    this.#immediate = null;
    this.#timerAt = Infinity;
    this.#due = [];
    this.#tasks = [];
    this.#jobs = [];
    this.#jobTimes = [];
  }
}
