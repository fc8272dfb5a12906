/**
 * A response whose first write is far off drops its rendered plan while it waits and renders
 * it again shortly before it is due (PlannedResponse.replan). Nothing of that may show: the
 * bytes, the stamps and every read of the record are those of a response that never slept.
 */
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { VirtualClock } from '../../../contracts/clock.ts';
import { Rng } from '../../../contracts/rng.ts';
import type { TruthRecord } from '../../../contracts/truth.ts';
import type { EmissionScheduler, ScheduledTask } from '../../../server/transport/emission-scheduler.ts';
import { playResponse } from '../../../server/transport/response-executor.ts';
import { TruthStore } from '../../../server/truth/truth-store.ts';
import { applyWirePolicy } from '../../../server/wire/apply-wire-policy.ts';
import type { PayloadEvent } from '../../../server/wire/payload-event.ts';
import { parseWireSpec } from '../../../server/wire/wire-spec.ts';

/** A pure planner: each call renders the same record anew (new objects, the same values). */
function planner(firstDueMs: number, spec = 'cut=utf8;gap=2ms'): () => TruthRecord {
  return () => {
    const events: PayloadEvent[] = [' the', ' 你', ' end'].map((text, i) => ({
      kind: 'content',
      tokenStart: i,
      tokenCount: 1,
      data: `{"choices":[{"text":${JSON.stringify(text)}}]}`,
      dueMs: firstDueMs + 10 * i,
    }));
    events.push({ kind: 'done', tokenStart: 0, tokenCount: 0, data: '[DONE]', dueMs: firstDueMs + 30 });
    const applied = applyWirePolicy(events, { framing: 'sse', policy: parseWireSpec(spec), rng: new Rng(5) });
    return {
      id: 'r', dialect: 'vllm', endpoint: '/v1/completions', model: 'm', stream: true, arrivalEpochMs: 0, status: 200, headersMs: null, promptTokens: 1, finishReason: 'length',
      tokens: [' the', ' 你', ' end'].map((text, i) => ({ id: i + 10, text, dueMs: firstDueMs + 10 * i })),
      events: applied.events, writes: applied.writes, fault: null, body: applied.body, end: null,
    };
  };
}

/** A response that records each send and can be closed under the player, as a client that leaves. */
function fakeResponse(clock: VirtualClock): { res: ServerResponse; sends: Buffer[] } {
  const sends: Buffer[] = [];
  const send = (chunk?: Buffer): void => {
    if (chunk !== undefined && chunk.length > 0) sends.push(Buffer.from(chunk));
    clock.advance(0.01);
  };
  const res = Object.assign(new EventEmitter(), {
    socket: null,
    destroyed: false,
    headersSent: false,
    writableFinished: false,
    writeHead: () => {
      res.headersSent = true;
      return res;
    },
    write: (chunk: Buffer) => {
      send(chunk);
      return true;
    },
    end: (chunk?: Buffer) => send(chunk),
    destroy: () => {},
  });
  return { res: res as unknown as ServerResponse, sends };
}

interface Played {
  record: TruthRecord;
  task: ScheduledTask;
  dueAt: () => number | null;
  /** Jobs deferred to the scheduler's gaps, not yet run. */
  jobs: Array<() => void>;
  sends: Buffer[];
  res: ServerResponse;
  truth: TruthStore;
  replans: () => number;
}

function play(clock: VirtualClock, firstDueMs: number, withReplan: boolean, plan = planner(firstDueMs), replanner = plan): Played {
  let replans = 0;
  const replan = (): TruthRecord => {
    replans++;
    return replanner();
  };
  const jobs: Array<() => void> = [];
  const record = plan();
  const { res, sends } = fakeResponse(clock);
  const truth = new TruthStore({ capacity: 10 });
  let dueAt: number | null = null;
  let scheduled: ScheduledTask | null = null;
  const scheduler = {
    schedule: (task: ScheduledTask, at: number) => {
      scheduled = task;
      dueAt = at;
    },
    wake: () => {},
    defer: (job: () => void) => jobs.push(job),
  } as unknown as EmissionScheduler;
  const task = playResponse(res, { record, arrivalMono: 0, headers: {}, headersAtArrival: true, ...(withReplan ? { replan } : {}) }, { clock, scheduler, truth });
  expect(scheduled).toBe(task);
  return { record, task, dueAt: () => dueAt, jobs, sends, res, truth, replans: () => replans };
}

/** Runs the task on the virtual clock until it is done, each turn at its due time, and the deferred jobs after each turn. */
function runToEnd(clock: VirtualClock, played: Played): void {
  let next: number | null = played.dueAt();
  for (let turns = 0; next !== null && turns < 1000; turns++) {
    clock.set(Math.max(clock.now(), next));
    next = played.task.run(clock.now());
    for (const job of played.jobs.splice(0)) job();
  }
  expect(next).toBeNull();
}

afterEach(() => {
  vi.restoreAllMocks();
});

/** The warnings the player emits, kept instead of printed. */
function captureWarnings(): { lines: () => string[] } {
  const spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
  return { lines: () => spy.mock.calls.map((call) => String(call[0])) };
}

describe('ResponsePlayer: a response idle before its first write', () => {
  it('sleeps without its rendered plan, wakes before its first write, and sends the same bytes at the same stamps as one that never slept', () => {
    const warnings = captureWarnings();
    const sleepingClock = new VirtualClock();
    const sleeping = play(sleepingClock, 5000, true);
    const awakeClock = new VirtualClock();
    const awake = play(awakeClock, 5000, false);
    // Asleep: the record holds none of its rendered parts, and it is due to wake 250 ms early.
    expect(sleeping.record.writes).toHaveLength(0);
    expect(sleeping.record.body.byteLength).toBe(0);
    expect(sleeping.dueAt()).toBe(4750);
    expect(awake.dueAt()).toBe(5000);
    // That early run writes nothing (left out of the lateness tally) and only queues the
    // rendering for the scheduler's gaps: no planning inside a turn's writes.
    expect(sleeping.task.preparing).toBe(true);
    sleepingClock.set(4750);
    expect(sleeping.task.run(4750)).toBe(5000);
    expect(sleeping.task.preparing).toBe(false);
    expect(sleeping.replans()).toBe(0);
    expect(sleeping.jobs).toHaveLength(1);
    (sleeping.jobs.pop() as () => void)();
    expect(sleeping.replans()).toBe(1);
    expect(sleeping.record.writes.length).toBeGreaterThan(0);
    expect(sleeping.task.run(4900)).toBe(5000);
    expect(sleeping.sends).toHaveLength(0);
    runToEnd(sleepingClock, sleeping);
    runToEnd(awakeClock, awake);
    expect(sleeping.replans()).toBe(1);
    expect(Buffer.concat(sleeping.sends).equals(Buffer.concat(awake.sends))).toBe(true);
    expect(sleeping.truth.get('r')).toEqual(awake.truth.get('r'));
    expect(sleeping.record.writes.every((w) => w.actualMs !== null && w.actualMs >= w.dueMs)).toBe(true);
    expect(warnings.lines()).toEqual([]);
  });

  it('a read of the record while it sleeps sees the whole plan (the read renders it)', () => {
    const clock = new VirtualClock();
    const sleeping = play(clock, 5000, true);
    const reference = planner(5000)();
    clock.set(100);
    const live = sleeping.truth.get('r') as TruthRecord;
    expect(live.tokens).toEqual(reference.tokens);
    expect(live.events).toEqual(reference.events);
    expect(live.writes).toEqual(reference.writes);
    expect(Buffer.from(live.body).equals(Buffer.from(reference.body))).toBe(true);
    expect(sleeping.replans()).toBe(1);
    // Awake now: its turn at the wake time finds the first write not yet due, and runs on as planned.
    runToEnd(clock, sleeping);
    expect(sleeping.replans()).toBe(1);
    expect(Buffer.concat(sleeping.sends).equals(Buffer.from(reference.body))).toBe(true);
  });

  it('a client that leaves while it sleeps: the record ends client_aborted with its whole plan and no write stamped', () => {
    const clock = new VirtualClock();
    const sleeping = play(clock, 5000, true);
    const ended: TruthRecord[] = [];
    sleeping.truth.subscribe((record) => ended.push(record));
    clock.set(2000);
    sleeping.res.emit('close');
    expect(ended).toHaveLength(1);
    const record = ended[0] as TruthRecord;
    expect(record.end).toEqual({ atMs: 2000, how: 'client_aborted' });
    expect(record.tokens).toHaveLength(3);
    expect(record.writes.length).toBeGreaterThan(0);
    expect(record.writes.every((w) => w.actualMs === null)).toBe(true);
    expect(record.body.byteLength).toBeGreaterThan(0);
    expect(sleeping.task.run(clock.now())).toBeNull();
  });

  it('a first write within a second, or no way to plan again: it never sleeps', () => {
    for (const [firstDueMs, withReplan] of [[900, true], [5000, false]] as const) {
      const clock = new VirtualClock();
      const played = play(clock, firstDueMs, withReplan);
      expect(played.record.writes.length).toBeGreaterThan(0);
      expect(played.dueAt()).toBe(firstDueMs);
      runToEnd(clock, played);
      expect(played.replans()).toBe(0);
    }
  });

  it('gaps too busy to render it before its first write: that run renders it and writes on time', () => {
    const clock = new VirtualClock();
    const sleeping = play(clock, 5000, true);
    clock.set(4750);
    expect(sleeping.task.run(clock.now())).toBe(5000);
    clock.set(5000);
    // The queued rendering has not run: that run renders, and is back in the heap due now, so
    // the write's own run (a write's, tallied as one) sends it.
    expect(sleeping.task.run(clock.now())).toBe(5000);
    expect(sleeping.replans()).toBe(1);
    expect(sleeping.task.preparing).toBe(false);
    expect(sleeping.sends).toHaveLength(0);
    expect(sleeping.task.run(clock.now())).not.toBeNull();
    expect(sleeping.sends.length).toBeGreaterThan(0);
    // The queued job, run late, finds it awake: nothing more.
    for (const job of sleeping.jobs.splice(0)) job();
    expect(sleeping.replans()).toBe(1);
  });

  it('a planner that renders something else the second time is said on a warning (the engine counted the first)', () => {
    const warnings = captureWarnings();
    const clock = new VirtualClock();
    const sleeping = play(clock, 5000, true, planner(5000), planner(5000, 'writes=bytes'));
    sleeping.truth.get('r');
    expect(warnings.lines().join('\n')).toMatch(/request "r" planned again differs from its first plan/);
  });

  it('a planner that throws the second time: the response is dropped and ends as a fault, whoever asked for the plan (a reader of its truth gets the record, not an error)', () => {
    const broken = (): TruthRecord => {
      throw new Error('planner bug');
    };
    for (const by of ['truth read', 'its turn'] as const) {
      const warnings = captureWarnings();
      const clock = new VirtualClock();
      const sleeping = play(clock, 5000, true, planner(5000), broken);
      let destroyed = false;
      (sleeping.res as unknown as { destroy: () => void }).destroy = () => {
        destroyed = true;
      };
      clock.set(4750);
      if (by === 'truth read') expect(sleeping.truth.get('r')?.end?.how, by).toBe('fault');
      else {
        expect(sleeping.task.run(clock.now())).toBe(5000);
        for (const job of sleeping.jobs.splice(0)) job();
      }
      expect(sleeping.record.end, by).toEqual({ atMs: 4750, how: 'fault' });
      expect(destroyed, by).toBe(true);
      expect(sleeping.task.run(5000), by).toBeNull();
      expect(sleeping.sends, by).toEqual([]);
      expect(warnings.lines().join('\n'), by).toMatch(/request "r" could not be planned again \(planner bug\); its response is dropped/);
      vi.restoreAllMocks();
    }
  });
});

describe('ResponsePlayer: a rendering that fails while the response ends', () => {
  it('a client that leaves a sleeping response whose plan cannot be rendered again: it ends as a fault, not client_aborted with nothing in it', () => {
    const warnings = captureWarnings();
    const clock = new VirtualClock();
    const sleeping = play(clock, 5000, true, planner(5000), () => {
      throw new Error('planner bug');
    });
    clock.set(2000);
    sleeping.res.emit('close');
    expect(sleeping.record.end).toEqual({ atMs: 2000, how: 'fault' });
    expect(warnings.lines().join('\n')).toMatch(/could not be planned again/);
  });
});

describe('ResponsePlayer: a response its engine has not timed yet (a request in the batching queue)', () => {
  /** Every due unknown, as the batching engine's deferTiming leaves a plan until its tokens come. */
  const untimed = (plan: () => TruthRecord) => (): TruthRecord => {
    const record = plan();
    for (const item of [...record.tokens, ...record.events, ...record.writes]) item.dueMs = Infinity;
    return record;
  };

  it('does not sleep by itself; sleeps when its engine asks, renders when asked, soon or now', () => {
    const clock = new VirtualClock();
    const played = play(clock, 5000, true, untimed(planner(5000)));
    const player = played.task as ScheduledTask & { sleep(): void; render(when: 'soon' | 'now'): void };
    expect(played.dueAt()).toBe(Infinity);
    expect(played.record.writes.length).toBeGreaterThan(0);
    player.sleep();
    expect(played.record.writes).toHaveLength(0);
    player.render('soon');
    player.render('soon');
    expect(played.jobs).toHaveLength(1);
    expect(played.replans()).toBe(0);
    (played.jobs.pop() as () => void)();
    expect(played.replans()).toBe(1);
    expect(played.record.writes.length).toBeGreaterThan(0);
    // Once rendered again it keeps its plan: asked again, it neither sleeps nor renders.
    player.sleep();
    player.render('now');
    expect(played.replans()).toBe(1);
    expect(played.record.tokens).toHaveLength(3);
    const fresh = play(new VirtualClock(), 5000, true, untimed(planner(5000)));
    const freshPlayer = fresh.task as ScheduledTask & { sleep(): void; render(when: 'soon' | 'now'): void };
    freshPlayer.sleep();
    freshPlayer.render('now');
    expect(fresh.replans()).toBe(1);
    expect(fresh.record.tokens).toHaveLength(3);
    expect(fresh.jobs).toHaveLength(0);
  });

  it('a rendering asked for `now` (inside its engine’s step) that fails ends the response a turn later, not inside the step', () => {
    const warnings = captureWarnings();
    const clock = new VirtualClock();
    const broken = (): TruthRecord => {
      throw new Error('planner bug');
    };
    const played = play(clock, 5000, true, untimed(planner(5000)), broken);
    const player = played.task as ScheduledTask & { sleep(): void; render(when: 'soon' | 'now'): void };
    const ended: TruthRecord[] = [];
    played.truth.subscribe((record) => ended.push(record));
    player.sleep();
    player.render('now');
    expect(ended).toHaveLength(0);
    expect(played.record.end).toBeNull();
    for (const job of played.jobs.splice(0)) job();
    expect(ended).toHaveLength(1);
    expect(played.record.end?.how).toBe('fault');
    expect(warnings.lines().join('\n')).toMatch(/could not be planned again \(planner bug\)/);
  });

  it('refuses to sleep once its first write is timed near, or once anything of it has left', () => {
    type Sleeper = ScheduledTask & { sleep(): void };
    // Its first write 0.5 s away: it never slept, and asked to, it does not.
    const clock = new VirtualClock();
    const timed = play(clock, 500, true);
    (timed.task as Sleeper).sleep();
    expect(timed.record.writes.length).toBeGreaterThan(0);
    // Once its first write has left, nothing more drops.
    clock.set(500);
    expect(timed.task.run(500)).not.toBeNull();
    expect(timed.sends.length).toBeGreaterThan(0);
    (timed.task as Sleeper).sleep();
    expect(timed.record.writes.length).toBeGreaterThan(0);
    expect(timed.replans()).toBe(0);
  });
});
