/**
 * One scheduler for every open stream: a binary heap of due times and a single timer, never a
 * timer per stream. Node timers have millisecond granularity, so the timer is armed a little
 * early and the last stretch is covered by setImmediate turns, which keep serving I/O.
 */
import type { Clock } from '../../contracts/clock.ts';

export interface ScheduledTask {
  /** Runs the task's due work; returns its next absolute due time, or null when it is done. */
  run(now: number): number | null;
}

const SPIN_WINDOW_MS = 1.5;

export class EmissionScheduler {
  readonly #clock: Clock;
  #due: number[] = [];
  #tasks: ScheduledTask[] = [];
  #timer: NodeJS.Timeout | null = null;
  #timerAt = Infinity;
  #immediate: NodeJS.Immediate | null = null;
  readonly #tick = (): void => this.#runDue();

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  get pending(): number {
    return this.#tasks.length;
  }

  schedule(task: ScheduledTask, dueAt: number): void {
    this.#push(dueAt, task);
    this.#arm();
  }

  #runDue(): void {
    this.#timer = null;
    this.#timerAt = Infinity;
    this.#immediate = null;
    let now = this.#clock.now();
    while (this.#due.length > 0 && (this.#due[0] as number) <= now) {
      const task = this.#pop();
      const next = task.run(now);
      if (next !== null) this.#push(next, task);
      now = this.#clock.now();
    }
    this.#arm();
  }

  #arm(): void {
    if (this.#due.length === 0 || this.#immediate !== null) return;
    const dueAt = this.#due[0] as number;
    const wait = dueAt - this.#clock.now();
    if (wait <= SPIN_WINDOW_MS) {
      if (this.#timer !== null) {
        clearTimeout(this.#timer);
        this.#timer = null;
        this.#timerAt = Infinity;
      }
      this.#immediate = setImmediate(this.#tick);
      return;
    }
    const fireAt = dueAt - SPIN_WINDOW_MS;
    if (this.#timer !== null && this.#timerAt <= fireAt) return;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timerAt = fireAt;
    this.#timer = setTimeout(this.#tick, Math.max(1, Math.floor(wait - SPIN_WINDOW_MS)));
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

  /** Drops every pending task without running it (server shutdown). */
  clear(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    if (this.#immediate !== null) clearImmediate(this.#immediate);
    this.#timer = null;
    this.#immediate = null;
    this.#timerAt = Infinity;
    this.#due = [];
    this.#tasks = [];
  }
}
