/**
 * Runs one stage plan: an open loop sends on an absolute schedule through one timer (a late
 * send never delays later ones, and `schedule_delay` shows the lateness); a closed loop keeps
 * exactly N requests in flight, sending the next the moment one finishes. Either way the stage
 * resolves only when every request it started has finished. A worker takes every
 * `workers`-th send (open) or its share of the N lanes (closed); a closed loop's lanes claim
 * their measured sends one at a time from one budget shared by every worker of the process,
 * so N stay in flight until the count is exhausted, whichever worker's lanes free up first.
 *
 * A stage with warm-up runs it as a phase of its own: the warm-up requests are sent and all
 * finish, then `measuredStart` is awaited (the server-metrics scrape that opens the measured
 * window, a worker barrier) and the measured part starts at the moment it answers. So the
 * measured requests, like every later stage's, start on a drained server, and a scrape taken
 * there sees no warm-up request that is still running.
 */
import { MAX_TIMER_MS, type Clock } from '../../contracts/clock.ts';
import type { PlannedSend, StagePlan } from '../load/load-plan.ts';

export interface StageShare {
  worker: number;
  workers: number;
}

/** The two parts of a stage with warm-up, each started on its own (a stage without one has only `measured`). */
export type StagePhase = 'warmup' | 'measured';

export interface StageIo {
  clock: Clock;
  signal: AbortSignal;
  /**
   * Sends one request; resolves when it has finished and been recorded, with when it ended (a
   * clock reading: a closed loop's lane means its next send for that moment, so the time spent
   * between one request's end and the next one's send shows as schedule_delay). `index` is the
   * request's number in the run when the plan fixes it (an open loop's sends); else the caller
   * numbers it.
   */
  issue(stage: number, warmup: boolean, scheduledMs: number, index?: number): Promise<number | void>;
  /**
   * Called once per stage with warm-up, after the warm-up has drained (even when this worker's
   * share of it was empty): resolves with where the measured part's schedule starts (a clock
   * reading; default now), or null to send no measured request (the run was stopped).
   */
  measuredStart?(stage: number): Promise<number | null | undefined>;
  /**
   * Where a closed stage's lanes claim their measured sends: shared by every worker of this
   * process (worker threads hand one shared counter to each). Default: this share's own count.
   */
  measuredBudget?: SendBudget;
}

/** The measured sends a closed stage has left; every lane drawing on it claims one send at a time. */
export interface SendBudget {
  /** Takes one send: its number among the stage's measured sends (from `first`), or null once none is left. */
  claim(): number | null;
}

/** A budget of `count` sends held in this thread, numbered from `first`. */
export function localBudget(count: number, first = 0): SendBudget {
  let taken = 0;
  return { claim: () => (taken < count ? first + taken++ : null) };
}

/**
 * A budget held in cell `cell` of a counter shared between worker threads (a SharedArrayBuffer
 * view, set to `count` before the workers start): Atomics make each claim exactly one send, and
 * its number is `first` + how many were claimed before it, whichever worker claims it.
 */
export function sharedBudget(counter: Int32Array, cell: number, count: number, first: number): SendBudget {
  return {
    claim: () => {
      // Atomics.sub answers the value before: a claim that found none left only drives it below zero.
      const before = Atomics.sub(counter, cell, 1);
      return before > 0 ? first + count - before : null;
    },
  };
}

/** The shares of shard `shard.index` of `shard.count`, each run by `workers` worker threads. */
export function shardShares(shard: { index: number; count: number }, workers: number): StageShare[] {
  return Array.from({ length: workers }, (_, w) => ({ worker: w * shard.count + shard.index, workers: shard.count * workers }));
}

/**
 * Where a shard's claims of a closed stage are numbered from: the measured sends of the shards
 * before it, so every shard's numbers are its own and together they are 0 … count − 1.
 */
export function closedFirstOf(plan: { concurrency: number; count: number }, shard: { index: number; count: number }, workers: number): number {
  const earlier = Array.from({ length: shard.index }, (_, index) => shardShares({ index, count: shard.count }, workers)).flat();
  return closedCountOf(plan, earlier);
}


/** This worker's part of `total` split as evenly as possible over `workers`. */
export function shareOf(total: number, { worker, workers }: StageShare): number {
  return Math.floor(total / workers) + (worker < total % workers ? 1 : 0);
}

/** The lanes workers 0..share.worker-1 hold of `total` (the shares before this one). */
function lanesBefore(total: number, { worker, workers }: StageShare): number {
  return worker * Math.floor(total / workers) + Math.min(worker, total % workers);
}

/**
 * The measured sends a closed stage's `shares` (one process's workers, or one shard's) make
 * between them: the count split over every share in proportion to its lanes (cumulative
 * rounding, so the parts add up to the count exactly), so a share with no lane carries no send
 * and no request of the count is lost whatever the split of N.
 */
export function closedCountOf(plan: { concurrency: number; count: number }, shares: readonly StageShare[]): number {
  if (plan.concurrency <= 0) return 0;
  // In BigInt: count × lanes may pass 2^53 (a huge --concurrency), where doubles round.
  const upTo = (lanes: number): number => Number((BigInt(plan.count) * BigInt(lanes)) / BigInt(plan.concurrency));
  return shares.reduce((sum, share) => {
    const before = lanesBefore(plan.concurrency, share);
    return sum + upTo(before + shareOf(plan.concurrency, share)) - upTo(before);
  }, 0);
}

/**
 * `startMs` anchors the stage's schedule (default: now); worker threads pass a shared start so
 * their shares interleave as one schedule. A closed loop's lanes wait until then. An open
 * stage's send i is request number `firstIndex + i` in every split (default: the caller numbers).
 */
export async function runStage(plan: StagePlan, io: StageIo, share: StageShare = { worker: 0, workers: 1 }, startMs?: number, firstIndex?: number): Promise<void> {
  const origin = startMs ?? io.clock.now();
  if (plan.kind === 'open') return runOpen(plan, io, share, origin, firstIndex);
  await waitUntil(io, origin);
  return runClosed(plan, io, share, origin, firstIndex);
}

/** Whether a plan starts with a warm-up phase. */
export function hasWarmup(plan: StagePlan): boolean {
  return plan.kind === 'open' ? plan.sends.some((s) => s.warmup) : plan.warmupMs > 0;
}

/** After the warm-up has drained: the measured part's start, or null to stop. */
async function measuredOrigin(plan: StagePlan, io: StageIo): Promise<number | null> {
  if (io.signal.aborted) return null;
  const origin = await io.measuredStart?.(plan.stage);
  if (origin === null || io.signal.aborted) return null;
  return origin ?? io.clock.now();
}

/** Resolves at clock reading `ms` (or at once when it has passed or the run is interrupted). */
function waitUntil(io: StageIo, ms: number): Promise<void> {
  const delay = ms - io.clock.now();
  if (delay <= 0 || io.signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const done = (): void => {
      clearTimeout(timer);
      io.signal.removeEventListener('abort', done);
      resolve();
    };
    // A wait beyond one timer's reach is several timers, each re-armed for what is left.
    const arm = (): void => {
      const left = ms - io.clock.now();
      if (left <= 0) return done();
      timer = setTimeout(arm, Math.min(left, MAX_TIMER_MS));
    };
    io.signal.addEventListener('abort', done, { once: true });
    arm();
  });
}

/** A planned send with its request number (undefined: numbered by the caller). */
type NumberedSend = PlannedSend & { index: number | undefined };

async function runOpen(plan: Extract<StagePlan, { kind: 'open' }>, io: StageIo, share: StageShare, startMs: number, firstIndex: number | undefined): Promise<void> {
  // The share is taken over the whole plan's numbering, and each send keeps its number, so a
  // split over workers sends exactly what one process would, whatever the stage's count.
  const mine: NumberedSend[] = [];
  plan.sends.forEach((send, i) => {
    if (i % share.workers === share.worker) mine.push({ ...send, index: firstIndex === undefined ? undefined : firstIndex + i });
  });
  if (!hasWarmup(plan)) return sendOnSchedule(plan.stage, mine, io, startMs);
  await sendOnSchedule(plan.stage, mine.filter((s) => s.warmup), io, startMs);
  const origin = await measuredOrigin(plan, io);
  if (origin === null) return;
  // The measured schedule keeps its spacing and starts at `origin` with its first planned send.
  const firstMeasured = plan.sends.find((s) => !s.warmup)?.offsetMs ?? 0;
  const measured = mine.filter((s) => !s.warmup).map((s) => ({ ...s, offsetMs: s.offsetMs - firstMeasured }));
  return sendOnSchedule(plan.stage, measured, io, origin);
}

/** Sends each planned send at `startMs + offsetMs` and resolves when every one has finished. */
async function sendOnSchedule(stage: number, sends: readonly NumberedSend[], io: StageIo, startMs: number): Promise<void> {
  const pending: Array<Promise<number | void>> = [];
  await new Promise<void>((resolve) => {
    let next = 0;
    let timer: NodeJS.Timeout | null = null;
    const stop = (): void => {
      if (timer !== null) clearTimeout(timer);
      resolve();
    };
    if (io.signal.aborted) return resolve();
    io.signal.addEventListener('abort', stop, { once: true });
    const tick = (): void => {
      const now = io.clock.now();
      while (next < sends.length) {
        const send = sends[next]!;
        const due = startMs + send.offsetMs;
        if (due > now) break;
        pending.push(io.issue(stage, send.warmup, due, send.index));
        next++;
      }
      if (next >= sends.length) {
        io.signal.removeEventListener('abort', stop);
        return resolve();
      }
      timer = setTimeout(tick, Math.min(MAX_TIMER_MS, Math.max(0, startMs + sends[next]!.offsetMs - io.clock.now())));
    };
    tick();
  });
  await Promise.all(pending);
}

/** When a closed loop's lane means its next send: the moment its last request ended (else now). */
function nextDue(ended: number | void, io: StageIo): number {
  return typeof ended === 'number' ? Math.min(ended, io.clock.now()) : io.clock.now();
}

async function runClosed(plan: Extract<StagePlan, { kind: 'closed' }>, io: StageIo, share: StageShare, startMs: number, firstIndex: number | undefined): Promise<void> {
  const concurrency = shareOf(plan.concurrency, share);
  // Taken before any lane runs: every lane of this worker draws on the same budget.
  const budget = io.measuredBudget ?? localBudget(closedCountOf(plan, [share]));
  const lanes = (lane: () => Promise<void>, count = concurrency): Promise<unknown> => Promise.all(Array.from({ length: count }, lane));
  // When the measured lanes start: the stage's start, or the measured part's after a warm-up.
  let measuredFrom = startMs;
  if (hasWarmup(plan)) {
    // Warm-up: each lane sends until the warm-up window is over, then waits for its last one.
    const warmupEndMs = startMs + plan.warmupMs;
    // Every lane's first send is due at the warm-up's start: a lane the client starts late shows it.
    await lanes(async () => {
      for (let due = startMs; !io.signal.aborted && io.clock.now() < warmupEndMs; ) due = nextDue(await io.issue(plan.stage, true, due), io);
    });
    const origin = await measuredOrigin(plan, io);
    if (origin === null) return;
    await waitUntil(io, origin);
    measuredFrom = origin;
  }
  // A worker with no lane claims nothing: the others' lanes send the whole count. No more
  // lanes than the stage's count: a lane beyond it could never claim a send.
  // A measured send is numbered by its claim (the stage's first number + the claim's), so the
  // stage's numbers follow the previous stage's in every split; warm-up sends are the caller's.
  // Every lane's first measured send is due when the measured lanes start: a lane the client
  // starts late shows it as schedule_delay.
  await lanes(async () => {
    for (let due = measuredFrom; !io.signal.aborted; ) {
      const claimed = budget.claim();
      if (claimed === null) break;
      due = nextDue(await io.issue(plan.stage, false, due, firstIndex === undefined ? undefined : firstIndex + claimed), io);
    }
  }, Math.min(concurrency, plan.count));
}
