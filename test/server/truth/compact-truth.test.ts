import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { truthToJson, type EventKind, type TruthRecord, type TruthWrite } from '../../../contracts/truth.ts';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';
import { compactBytes, compactTruth, expandTruth } from '../../../server/truth/compact-truth.ts';
import { TruthStore } from '../../../server/truth/truth-store.ts';
import { minimalTruthRecord } from '../../helpers/truth-records.ts';

const SEED = 20261130;
const KINDS: EventKind[] = ['role', 'content', 'reasoning', 'finish', 'usage', 'error', 'done', 'comment'];
const time = fc.oneof(fc.double({ min: 0, max: 1e7, noNaN: true }), fc.constant(Infinity), fc.constant(0));

const writeArb = fc.record({
  offset: fc.nat(),
  length: fc.nat(),
  dueMs: time,
  actualMs: fc.option(fc.double({ min: -5, max: 1e7, noNaN: true }), { nil: null }),
  anchorEvent: fc.option(fc.nat(), { nil: undefined }),
  afterMs: fc.option(fc.double({ min: 0, max: 100, noNaN: true }), { nil: undefined }),
});

const recordArb: fc.Arbitrary<TruthRecord> = fc
  .record({
    tokens: fc.array(fc.record({ id: fc.nat(), text: fc.string({ unit: 'binary' }), dueMs: time }), { maxLength: 20 }),
    events: fc.array(
      fc.record({ kind: fc.constantFrom(...KINDS), tokenStart: fc.nat(), tokenCount: fc.nat(), offset: fc.nat(), length: fc.nat(), completesAt: fc.nat(), dueMs: time }),
      { maxLength: 20 },
    ),
    writes: fc.array(writeArb, { maxLength: 20 }),
    body: fc.uint8Array({ maxLength: 64 }),
    end: fc.option(fc.record({ atMs: fc.double({ min: 0, max: 1e6, noNaN: true }), how: fc.constantFrom('completed' as const, 'client_aborted' as const, 'fault' as const) }), { nil: null }),
  })
  .map(({ tokens, events, writes, body, end }) => ({
    id: 'r',
    dialect: 'vllm' as const,
    endpoint: '/v1/completions',
    model: 'm',
    stream: true,
    arrivalEpochMs: 1_700_000_000_000,
    status: 200,
    headersMs: 0.5,
    promptTokens: 3,
    finishReason: 'length',
    // fast-check's records have no prototype; planned records are plain objects.
    tokens: tokens.map((t) => ({ ...t })),
    events: events.map((e) => ({ ...e })),
    // Optional members absent, not undefined, as the planners leave them.
    writes: writes.map((w) => ({ ...Object.fromEntries(Object.entries(w).filter(([, v]) => v !== undefined)) }) as unknown as TruthWrite),
    fault: null,
    body,
    end: end === null ? null : { ...end },
  }));

describe('packing a finished truth record', () => {
  it('unpacks to an equal record, keys in the same order (property)', () => {
    fc.assert(
      fc.property(recordArb, (record) => {
        const back = expandTruth(compactTruth(record));
        expect(back).toStrictEqual(record);
        expect(Object.keys(back)).toEqual(Object.keys(record));
        expect(back.writes.map((w) => Object.keys(w))).toEqual(record.writes.map((w) => Object.keys(w)));
      }),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('counts the body and the packed numbers in its size', () => {
    fc.assert(
      fc.property(recordArb, (record) => {
        const compact = compactTruth(record);
        expect(compactBytes(compact)).toBeGreaterThanOrEqual(record.body.byteLength + 8 * (3 * record.tokens.length + 6 * record.events.length + 6 * record.writes.length));
      }),
      { seed: SEED, numRuns: 50 },
    );
  });
});

describe('the server keeps finished records packed and serves them unchanged', () => {
  let server: BenchtruthServer;
  const live = new Map<string, TruthRecord>();

  beforeAll(async () => {
    server = buildServer({ seed: 9, ttftMs: 0, itlMs: 0, created: 1 });
    server.context.truth.subscribe((record) => live.set(record.id, record));
    await server.app.ready();
  });
  afterAll(async () => {
    await server.close();
  });

  const cases: Array<[string, string, Record<string, unknown>, string | undefined]> = [
    ['stream', '/v1/completions', { prompt: 'hello', max_tokens: 6, stream: true, stream_options: { include_usage: true, continuous_usage_stats: true } }, undefined],
    ['plain', '/v1/completions', { prompt: 'hello', max_tokens: 4 }, undefined],
    ['n2', '/v1/completions', { prompt: 'hello', max_tokens: 5, n: 2, stream: true }, undefined],
    ['chat', '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }], max_tokens: 5, stream: true }, undefined],
    ['cut', '/v1/completions', { prompt: 'hello', max_tokens: 5, stream: true }, 'vllm;cut=utf8;gap=1ms'],
    ['bytes', '/v1/completions', { prompt: 'hello', max_tokens: 3, stream: true }, 'writes=bytes'],
    ['fault', '/v1/completions', { prompt: 'hello', max_tokens: 5, stream: true }, 'vllm;fault=error:2:500'],
    ['jetstream', '/v1/generate', { max_tokens: 4, text_content: { text: 'Tell me' } }, undefined],
  ];

  it.each(cases)('%s', async (id, url, body, wire) => {
    const headers: Record<string, string> = { 'content-type': 'application/json', 'x-request-id': id };
    if (wire !== undefined) headers['x-benchtruth-wire'] = wire;
    await server.app.inject({ method: 'POST', url, headers, payload: JSON.stringify(url === '/v1/generate' ? body : { model: server.context.options.model, ...body }) });
    const original = live.get(id);
    expect(original?.end).not.toBeNull();
    const kept = server.context.truth.get(id);
    expect(kept).not.toBe(original);
    expect(kept).toStrictEqual(original);
    expect(JSON.stringify(truthToJson(kept as TruthRecord))).toBe(JSON.stringify(truthToJson(original as TruthRecord)));
  });
});

describe('the truth store’s bounds', () => {
  const record = (id: string, bodyBytes: number): TruthRecord => minimalTruthRecord(id, { bodyBytes, ended: false });

  it('drops the oldest records past the byte budget, and never the newest', () => {
    const store = new TruthStore({ capacity: 1000, maxBytes: 10_000 });
    for (let i = 0; i < 10; i++) {
      const r = record(`r${i}`, 2000);
      store.begin(r);
      r.end = { atMs: 2, how: 'completed' };
      store.finish(r);
    }
    expect(store.bytes).toBeLessThanOrEqual(10_000);
    expect(store.get('r9')).toBeDefined();
    expect(store.get('r0')).toBeUndefined();
    const huge = record('huge', 50_000);
    store.begin(huge);
    expect(store.size).toBe(1);
    expect(store.get('huge')).toBe(huge);
  });

  it('keeps a long stream in flight while shorter ones begun after it end, and keeps it once it ends (review 21-determinism)', () => {
    const store = new TruthStore({ capacity: 3 });
    const end = (r: TruthRecord, atMs: number): void => {
      r.end = { atMs, how: 'completed' };
      store.finish(r);
    };
    const long = record('long', 10);
    store.begin(long);
    for (let i = 0; i < 3; i++) {
      const short = record(`short${i}`, 10);
      store.begin(short);
      end(short, 1);
    }
    // Mid-stream it is still there, and the newest short record too; the oldest short one went.
    expect([store.get('long'), store.get('short2')].map((r) => r !== undefined)).toEqual([true, true]);
    expect(store.get('short0')).toBeUndefined();
    end(long, 5);
    // Just ended: the most recent record of all. One more request lets the oldest ended one go.
    expect([store.size, store.get('long') !== undefined]).toEqual([3, true]);
    const next = record('next', 10);
    store.begin(next);
    end(next, 1);
    expect(['short1', 'short2', 'long', 'next'].map((id) => store.get(id) !== undefined)).toEqual([false, true, true, true]);
  });

  it('an id whose stored record ended is taken by its next request, though that id runs on another endpoint (review 22)', () => {
    const store = new TruthStore({ capacity: 10 });
    const end = (r: TruthRecord): void => {
      r.end = { atMs: 1, how: 'completed' };
      store.finish(r);
    };
    const first = record('x', 10);
    store.begin(first);
    const chat = { ...record('x', 10), endpoint: '/v1/chat/completions' };
    store.begin(chat);
    end(first);
    // The chat, never stored, still runs; the next completion of that id replaces the ended one.
    const second = record('x', 20);
    store.begin(second);
    expect(store.get('x')).toBe(second);
    end(second);
    end(chat);
    expect(store.get('x')?.body.byteLength).toBe(20);
    // While the stored one is in flight, another endpoint's request of that id does not take it.
    const third = record('x', 30);
    store.begin(third);
    store.begin({ ...record('x', 40), endpoint: '/v1/chat/completions' });
    expect(store.get('x')).toBe(third);
  });

  it('with more streams in flight than its capacity, keeps them all and the one just ended, then shrinks as they end', () => {
    const store = new TruthStore({ capacity: 2 });
    const live = [0, 1, 2, 3].map((i) => record(`live${i}`, 10));
    for (const r of live) store.begin(r);
    expect(store.size).toBe(4);
    live[0]!.end = { atMs: 1, how: 'completed' };
    store.finish(live[0]!);
    expect(store.get('live0')).toBeDefined();
    for (const r of live.slice(1)) {
      r.end = { atMs: 2, how: 'completed' };
      store.finish(r);
    }
    expect(store.size).toBe(2);
    expect([store.get('live2'), store.get('live3')].every((r) => r !== undefined)).toBe(true);
  });

  it('one id on two endpoints: both in flight (a shutdown waits for both), the store keeps the first one\'s (audit 17-R7)', async () => {
    const store = new TruthStore({ capacity: 10 });
    const completion = { ...record('same', 10), endpoint: '/v1/completions' };
    const chat = { ...record('same', 20), endpoint: '/v1/chat/completions' };
    store.begin(completion);
    store.begin(chat);
    expect([store.isLiveOn('same', '/v1/completions'), store.isLiveOn('same', '/v1/chat/completions')]).toEqual([true, true]);
    expect(store.get('same')).toBe(completion);
    let idle = false;
    const waiting = store.whenIdle(10_000).then(() => void (idle = true));
    completion.end = { atMs: 1, how: 'completed' };
    store.finish(completion);
    await new Promise((resolve) => setImmediate(resolve));
    expect(idle).toBe(false);
    chat.end = { atMs: 2, how: 'completed' };
    store.finish(chat);
    await waiting;
    expect(store.isLive('same')).toBe(false);
  });

  it('keeps the running record of an id a newer request reuses; the newer one keeps none (audit 17-V2)', () => {
    const store = new TruthStore({ capacity: 10 });
    const older = record('same', 10);
    const newer = record('same', 20);
    store.begin(older);
    expect(store.isLive('same')).toBe(true);
    store.begin(newer);
    expect(store.get('same')).toBe(older);
    newer.end = { atMs: 1, how: 'completed' };
    store.finish(newer);
    expect(store.get('same')).toBe(older);
    older.end = { atMs: 2, how: 'client_aborted' };
    store.finish(older);
    expect(store.isLive('same')).toBe(false);
    expect(store.get('same')?.body.byteLength).toBe(10);
    expect(store.size).toBe(1);
    // Once ended, the id is free: a later request's record replaces it.
    const later = record('same', 30);
    store.begin(later);
    expect(store.get('same')).toBe(later);
  });
});
