/**
 * Runs one stage plan: an open loop sends on an absolute schedule through one timer (a late
 * send never delays later ones, and `schedule_delay` shows the lateness); a closed loop keeps
 * exactly N requests in flight, sending the next the moment one finishes. Either way the stage
 * resolves only when every request it started has finished. A worker takes every
 * `workers`-th send (open) or its share of N and of the count (closed).
 */
import type { Clock } from '../../contracts/clock.ts';
import type { StagePlan } from '../load/load-plan.ts';

export interface StageShare {
  worker: number;
  workers: number;
}

export interface StageIo {
  clock: Clock;
  signal: AbortSignal;
  /** Sends one request; resolves when it has finished and been recorded. */
  issue(stage: number, warmup: boolean, scheduledMs: number): Promise<void>;
}

/** This worker's part of `total` split as evenly as possible over `workers`. */
export function shareOf(total: number, { worker, workers }: StageShare): number {
  return Math.floor(total / workers) + (worker < total % workers ? 1 : 0);
}

/**
 * `startMs` anchors the stage's schedule (default: now); worker threads pass a shared start so
 * their shares interleave as one schedule. A closed loop's lanes wait until then.
 */
export async function runStage(plan: StagePlan, io: StageIo, share: StageShare = { worker: 0, workers: 1 }, startMs?: number): Promise<void> {
  const origin = startMs ?? io.clock.now();
  if (plan.kind === 'open') return runOpen(plan, io, share, origin);
  await waitUntil(io, origin);
  return runClosed(plan, io, share, origin);
}

/** Resolves at clock reading `ms` (or at once when it has passed or the run is interrupted). */
function waitUntil(io: StageIo, ms: number): Promise<void> {
  const delay = ms - io.clock.now();
  if (delay <= 0 || io.signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      io.signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, delay);
    io.signal.addEventListener('abort', done, { once: true });
  });
}

async function runOpen(plan: Extract<StagePlan, { kind: 'open' }>, io: StageIo, share: StageShare, startMs: number): Promise<void> {
  const sends = plan.sends.filter((_, i) => i % share.workers === share.worker);
  const pending: Promise<void>[] = [];
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
        pending.push(io.issue(plan.stage, send.warmup, due));
        next++;
      }
      if (next >= sends.length) {
        io.signal.removeEventListener('abort', stop);
        return resolve();
      }
      timer = setTimeout(tick, Math.max(0, startMs + sends[next]!.offsetMs - io.clock.now()));
    };
    tick();
  });
  await Promise.all(pending);
}

async function runClosed(plan: Extract<StagePlan, { kind: 'closed' }>, io: StageIo, share: StageShare, startMs: number): Promise<void> {
  const concurrency = shareOf(plan.concurrency, share);
  const count = shareOf(plan.count, share);
  let measuredIssued = 0;
  const lane = async (): Promise<void> => {
    while (!io.signal.aborted) {
      const now = io.clock.now();
      const warmup = now < startMs + plan.warmupMs;
      if (!warmup) {
        if (measuredIssued >= count) return;
        measuredIssued++;
      }
      await io.issue(plan.stage, warmup, now);
    }
  };
  if (concurrency === 0 || count === 0) return;
  await Promise.all(Array.from({ length: concurrency }, lane));
}
