/**
 * The response player on a virtual clock and a fake response: a stalled stream may hand whole
 * events over together but never a planned cut, and a disconnect is stamped when it happens.
 */
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../contracts/clock.ts';
import { Rng } from '../../../contracts/rng.ts';
import type { TruthFault, TruthRecord } from '../../../contracts/truth.ts';
import type { EmissionScheduler, ScheduledTask } from '../../../server/transport/emission-scheduler.ts';
import { playResponse } from '../../../server/transport/response-executor.ts';
import { TruthStore } from '../../../server/truth/truth-store.ts';
import { applyWirePolicy } from '../../../server/wire/apply-wire-policy.ts';
import type { PayloadEvent } from '../../../server/wire/payload-event.ts';
import { parseWireSpec } from '../../../server/wire/wire-spec.ts';
import { pieceGapMs } from '../../../server/wire/writes.ts';

const content = (i: number, text: string, dueMs: number): PayloadEvent => ({
  kind: 'content',
  tokenStart: i,
  tokenCount: 1,
  data: `{"choices":[{"text":${JSON.stringify(text)}}]}`,
  dueMs,
});
const EVENTS: PayloadEvent[] = [content(0, ' the', 100), content(1, ' 你', 110), content(2, ' end', 120), { kind: 'done', tokenStart: 0, tokenCount: 0, data: '[DONE]', dueMs: 130 }];

function plannedRecord(spec: string, fault: TruthFault | null = null): TruthRecord {
  const applied = applyWirePolicy(EVENTS, { framing: 'sse', policy: parseWireSpec(spec), rng: new Rng(5) });
  return {
    id: 'r', dialect: 'vllm', endpoint: '/v1/completions', model: 'm', stream: true, arrivalEpochMs: 0, status: 200, headersMs: null,
    promptTokens: 1, finishReason: 'length', tokens: [], events: applied.events, writes: applied.writes, fault, body: applied.body, end: null,
  };
}

/** A response that records each send; every send moves the clock on by `costMs` (a syscall's time). */
function fakeResponse(clock: VirtualClock, costMs: number): { res: ServerResponse; sends: Buffer[]; ended: () => boolean; destroyed: () => boolean } {
  const sends: Buffer[] = [];
  let ended = false;
  let destroyed = false;
  const send = (chunk?: Buffer): void => {
    if (chunk !== undefined && chunk.length > 0) sends.push(Buffer.from(chunk));
    clock.advance(costMs);
  };
  const res = {
    socket: null,
    destroyed: false,
    headersSent: false,
    once: () => res,
    writeHead: () => {
      res.headersSent = true;
      return res;
    },
    flushHeaders: () => {},
    write: (chunk: Buffer) => {
      send(chunk);
      return true;
    },
    end: (chunk?: Buffer) => {
      send(chunk);
      ended = true;
    },
    destroy: () => {
      destroyed = true;
    },
  };
  return { res: res as unknown as ServerResponse, sends, ended: () => ended, destroyed: () => destroyed };
}

function player(record: TruthRecord, clock: VirtualClock, res: ServerResponse): ScheduledTask {
  let scheduled: ScheduledTask | null = null;
  const scheduler = { schedule: (task: ScheduledTask) => (scheduled = task), wake: () => {} } as unknown as EmissionScheduler;
  playResponse(res, { record, arrivalMono: 0, headers: {}, headersAtArrival: true }, { clock, scheduler, truth: new TruthStore({ capacity: 10 }) });
  if (scheduled === null) throw new Error('the player did not schedule itself');
  return scheduled;
}

describe('ResponsePlayer stamps', () => {
  it('stamps the headers before they are handed over, as every write: a reader never sees bytes before their truth time', () => {
    const record = plannedRecord('');
    const clock = new VirtualClock();
    const { res } = fakeResponse(clock, 0);
    let headersWrittenAt = Number.NaN;
    const raw = res as unknown as { writeHead: () => unknown; write: (chunk: Buffer) => boolean };
    const writeHead = raw.writeHead;
    raw.writeHead = () => {
      headersWrittenAt = clock.now();
      clock.advance(3); // the thread is held between stamping and sending
      return writeHead();
    };
    clock.set(1);
    player(record, clock, res);
    expect(record.headersMs).not.toBeNull();
    expect(record.headersMs as number).toBeLessThanOrEqual(headersWrittenAt);
  });
});

describe('ResponsePlayer after a stall', () => {
  it('stamps overdue whole events together, each still its own write, and holds every later piece of a cut event its gap after the piece before it left', () => {
    const record = plannedRecord('cut=utf8;gap=2ms');
    const pieces = record.writes.filter((w) => (w.afterMs ?? 0) > 0);
    expect(pieces).toHaveLength(1);
    const clock = new VirtualClock();
    const { res, sends } = fakeResponse(clock, 0.01);
    const task = player(record, clock, res);
    clock.set(5000);
    // The piece is long overdue, yet it waits 2 ms after the write before it really left.
    const held = task.run(clock.now());
    expect(held).not.toBeNull();
    expect(held as number).toBeGreaterThan(clock.now());
    clock.set(held as number);
    expect(task.run(clock.now())).toBeNull();
    expect(Buffer.concat(sends).equals(Buffer.from(record.body))).toBe(true);
    // Without a socket of its own (this fake) each write is its own res.write, so its own HTTP
    // chunk; on a real socket the chunks share one buffer (real-socket test below).
    expect(sends.map((s) => s.length)).toEqual(record.writes.filter((w) => w.length > 0).map((w) => w.length));
    // The whole events due by the stall share one stamp: they are handed over together...
    const pieceIndex = record.writes.indexOf(pieces[0] as (typeof record.writes)[number]);
    const together = record.writes.slice(0, pieceIndex).map((w) => w.actualMs);
    expect(new Set(together).size).toBe(1);
    // ...while the later piece of the cut event (inside 你) is a send of its own, its gap after
    // the write before it.
    const before = record.writes[pieceIndex - 1]?.actualMs as number;
    expect((pieces[0]?.actualMs as number) - before).toBeGreaterThanOrEqual(2);
  });

  it('byte-per-write pieces stay separate reads however late the stream runs: each keeps its gap after the one before it left', () => {
    const record = plannedRecord('writes=bytes');
    const clock = new VirtualClock();
    const { res, sends } = fakeResponse(clock, 0);
    const task = player(record, clock, res);
    clock.set(60_000);
    let runs = 0;
    let next = task.run(clock.now());
    while (next !== null && runs < 10_000) {
      runs++;
      clock.set(Math.max(clock.now(), next));
      next = task.run(clock.now());
    }
    expect(next).toBeNull();
    expect(runs).toBeGreaterThan(0);
    for (const [i, write] of record.writes.entries()) {
      const previous = record.writes[i - 1];
      if (previous === undefined || !((write.afterMs ?? 0) > 0)) continue;
      expect((write.actualMs as number) - (previous.actualMs as number)).toBeGreaterThanOrEqual(pieceGapMs(write, previous) - 1e-9);
    }
    // Only the first byte of each event may ride on the write before it.
    expect(sends.length).toBeGreaterThanOrEqual(record.body.length - EVENTS.length);
    expect(Buffer.concat(sends).equals(Buffer.from(record.body))).toBe(true);
  });
});

describe('ResponsePlayer: a disconnect fault', () => {
  it('is stamped at the moment it happens, never before the last write', () => {
    const record = plannedRecord('vllm', { kind: 'disconnect', params: { afterTokens: 2, atMs: 130 } });
    const clock = new VirtualClock();
    const { res, destroyed } = fakeResponse(clock, 0.25);
    const task = player(record, clock, res);
    clock.set(200);
    // One turn (its `now` is 200) sends every overdue write, each send costing 0.25 ms, then drops.
    expect(task.run(clock.now())).toBeNull();
    const lastActual = record.writes[record.writes.length - 1]?.actualMs ?? NaN;
    expect(record.end?.how).toBe('fault');
    expect(record.end?.atMs).toBeGreaterThanOrEqual(lastActual);
    expect(record.end?.atMs).toBe(clock.now());
    expect(destroyed()).toBe(true);
  });
});

describe('ResponsePlayer: a write that throws', () => {
  it('ends its response (destroyed) and finishes its truth as a fault, whether it throws at start or in a turn', () => {
    for (const when of ['start', 'turn'] as const) {
      const record = plannedRecord('vllm');
      const clock = new VirtualClock();
      const { res, destroyed } = fakeResponse(clock, 0);
      const broken = (): never => {
        throw Object.assign(new TypeError('Invalid character in header content'), { code: 'ERR_INVALID_CHAR' });
      };
      // Headers at arrival throw in start(); headers with the first write throw in a turn.
      (res as unknown as { writeHead: () => never }).writeHead = broken;
      const truth = new TruthStore({ capacity: 10 });
      let scheduled: ScheduledTask | null = null;
      const scheduler = { schedule: (task: ScheduledTask) => (scheduled = task), wake: () => {} } as unknown as EmissionScheduler;
      const task = playResponse(res, { record, arrivalMono: 0, headers: {}, headersAtArrival: when === 'start' }, { clock, scheduler, truth });
      if (when === 'turn') {
        expect(scheduled).toBe(task);
        clock.set(1000);
        // The scheduler catches the throw and hands it to the task.
        expect(() => task.run(clock.now())).toThrow(TypeError);
        task.fail?.(new Error('x'));
      }
      expect(destroyed(), when).toBe(true);
      expect(record.end?.how, when).toBe('fault');
      expect(truth.get('r')?.end?.how).toBe('fault');
    }
  });
});

describe('ResponsePlayer and the truth store while a response is in flight', () => {
  it('a record read before the response ends carries the stamps of the writes already sent, and null for the rest', () => {
    const record = plannedRecord('');
    const clock = new VirtualClock();
    const { res } = fakeResponse(clock, 0);
    let scheduled: ScheduledTask | null = null;
    const scheduler = { schedule: (task: ScheduledTask) => (scheduled = task), wake: () => {} } as unknown as EmissionScheduler;
    const truth = new TruthStore({ capacity: 10 });
    playResponse(res, { record, arrivalMono: 0, headers: {}, headersAtArrival: true }, { clock, scheduler, truth });
    const task = scheduled as ScheduledTask | null;
    if (task === null) throw new Error('the player did not schedule itself');
    clock.set(111);
    expect(task.run(clock.now())).not.toBeNull();
    const live = truth.get('r') as TruthRecord;
    const sent = live.writes.filter((w) => w.dueMs <= 111);
    expect(sent.length).toBeGreaterThan(0);
    expect(sent.every((w) => w.actualMs === 111)).toBe(true);
    expect(live.writes.filter((w) => w.dueMs > 111).every((w) => w.actualMs === null)).toBe(true);
    // The same list from all(): one way of reading a record in flight.
    expect([...truth.all()][0]?.writes.map((w) => w.actualMs)).toEqual(live.writes.map((w) => w.actualMs));
    clock.set(130);
    expect(task.run(clock.now())).toBeNull();
    const done = truth.get('r') as TruthRecord;
    expect(done.writes.every((w) => w.actualMs !== null)).toBe(true);
    expect(done.end?.how).toBe('completed');
  });
});
