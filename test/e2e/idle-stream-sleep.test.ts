/**
 * Over real sockets: a response whose first token is more than a second away drops its rendered
 * plan while it waits and renders it again before its first write (PlannedResponse.replan).
 * For every route that plays through the engine and every shape of request that changes what
 * is planned, the record read while it sleeps is the record it ends with, the client gets
 * exactly its body, and the plan rendered again is the first one (no "differs" warning).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { request } from 'undici';
import type { TruthRecord } from '../../contracts/truth.ts';
import { buildServer, type BenchtruthServer } from '../../server/app.ts';
import { endedRecord } from '../helpers/raw-completions.ts';

const TTFT_MS = 1300;
let vllm: BenchtruthServer;
let jetstream: BenchtruthServer;
const urls = { vllm: '', jetstream: '' };
/** Each record as begun (the live object its player plays), and the ids whose plan was dropped at some point. */
const begun = new Map<string, TruthRecord>();
const slept = new Set<string>();

/**
 * Watches every record a server begins: a player that sleeps empties its record's writes, which
 * a setter sees the moment it happens (no timing, no read that would render it again).
 */
function watchBegins(server: BenchtruthServer): void {
  const truth = server.context.truth;
  const begin = truth.begin.bind(truth);
  truth.begin = (record, settle) => {
    begun.set(record.id, record);
    let writes = record.writes;
    Object.defineProperty(record, 'writes', {
      enumerable: true,
      configurable: true,
      get: () => writes,
      set: (value: TruthRecord['writes']) => {
        if (value.length === 0 && writes.length > 0) slept.add(record.id);
        writes = value;
      },
    });
    begin(record, settle);
  };
}

beforeAll(async () => {
  vllm = buildServer({ seed: 7, ttftMs: TTFT_MS, itlMs: 4, multibyteRate: 0.3 });
  jetstream = buildServer({ seed: 7, ttftMs: TTFT_MS, itlMs: 4, multibyteRate: 0.3, dialect: 'jetstream' });
  urls.vllm = `http://127.0.0.1:${await vllm.listen(0)}`;
  urls.jetstream = `http://127.0.0.1:${await jetstream.listen(0)}`;
  watchBegins(vllm);
  watchBegins(jetstream);
});

afterAll(async () => {
  vi.restoreAllMocks();
  await vllm.close();
  await jetstream.close();
});

const completion = { model: '', prompt: 'Hello there, how are you', max_tokens: 12 };
const chat = { model: '', messages: [{ role: 'user', content: 'Hello there' }], max_tokens: 10 };

/** [name, server, path, body, headers] */
const SHAPES: Array<[string, 'vllm' | 'jetstream', string, Record<string, unknown>, Record<string, string>]> = [
  ['completion, streamed', 'vllm', '/v1/completions', { ...completion, stream: true }, {}],
  ['completion, n = 2, logprobs, a stop string, continuous usage', 'vllm', '/v1/completions', { ...completion, stream: true, n: 2, logprobs: 2, stop: [' the'], stream_options: { include_usage: true, continuous_usage_stats: true } }, {}],
  ['completion, echo and token ids of a token prompt', 'vllm', '/v1/completions', { ...completion, prompt: [11, 12, 13], stream: true, echo: true, return_token_ids: true }, {}],
  ['completion, one body', 'vllm', '/v1/completions', completion, {}],
  ['completion, events cut inside characters', 'vllm', '/v1/completions', { ...completion, stream: true }, { 'x-benchtruth-wire': 'cut=utf8;gap=1ms' }],
  ['chat, streamed, n = 2, token ids', 'vllm', '/v1/chat/completions', { ...chat, stream: true, n: 2, return_token_ids: true }, {}],
  ['chat, one body', 'vllm', '/v1/chat/completions', chat, {}],
  ['JetStream proxy, streamed', 'jetstream', '/generate', { prompt: 'Hello there', max_tokens: 8, stream: true }, {}],
  ['JetStream native', 'jetstream', '/v1/generate', { text_content: { text: 'Hello there' }, max_tokens: 8 }, {}],
];

describe('a response idle before its first token sleeps without its plan, and nothing of it shows', () => {
  it.each(SHAPES.map((shape, i) => [i, ...shape] as const))('%i: %s', async (i, _name, which, path, body, headers) => {
    const warnings = vi.spyOn(process, 'emitWarning');
    const server = which === 'vllm' ? vllm : jetstream;
    const id = `sleep-${i}`;
    const response = request(`${urls[which]}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': id, ...headers }, body: JSON.stringify(body) });
    // Planned in the scheduler's next gaps; it sleeps at once (its first token is 1.3 s away).
    for (let polls = 0; !begun.has(id) && polls < 200; polls++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(slept.has(id)).toBe(true);
    // A read renders it (if its own wake-up has not yet): the whole plan.
    const live = server.context.truth.get(id) as TruthRecord;
    expect(live.writes.length).toBeGreaterThan(0);
    const liveBody = Buffer.from(live.body);
    const liveTokens = structuredClone(live.tokens);
    const liveEvents = structuredClone(live.events);
    const liveWrites = live.writes.map(({ offset, length, dueMs }) => ({ offset, length, dueMs }));

    const answer = await response;
    const received = Buffer.from(await answer.body.arrayBuffer());
    const ended = await endedRecord(server, id, 10_000);
    expect(ended.end?.how).toBe('completed');
    expect(Buffer.from(ended.body).equals(liveBody)).toBe(true);
    expect(received.equals(liveBody)).toBe(true);
    expect(ended.tokens).toEqual(liveTokens);
    expect(ended.events).toEqual(liveEvents);
    expect(ended.writes.map(({ offset, length, dueMs }) => ({ offset, length, dueMs }))).toEqual(liveWrites);
    expect(ended.writes.every((w) => w.actualMs !== null && w.actualMs >= w.dueMs)).toBe(true);
    expect(warnings.mock.calls.map((call) => String(call[0]))).toEqual([]);
    warnings.mockRestore();
  });

  it('one that sleeps through to its first token renders the plan it began with (checked when it wakes)', async () => {
    const warnings = vi.spyOn(process, 'emitWarning');
    const id = 'sleep-through';
    const answer = await request(`${urls.vllm}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': id }, body: JSON.stringify({ ...completion, stream: true, n: 3, stop: ['e'] }) });
    const received = Buffer.from(await answer.body.arrayBuffer());
    const ended = await endedRecord(vllm, id, 10_000);
    // The record the store began with is the one that slept and woke: it holds its plan again.
    expect(slept.has(id)).toBe(true);
    const asBegun = begun.get(id) as TruthRecord;
    expect(Buffer.from(asBegun.body).equals(received)).toBe(true);
    expect(received.equals(Buffer.from(ended.body))).toBe(true);
    expect(ended.tokens.length).toBeGreaterThan(0);
    expect(warnings.mock.calls.map((call) => String(call[0]))).toEqual([]);
    warnings.mockRestore();
  });

  it('the engine counts each slept request once: nothing is left running and the KV cache is empty after them', async () => {
    const metrics = await (await request(`${urls.vllm}/metrics`)).body.text();
    expect(metrics).toMatch(/^vllm:num_requests_running\{[^}]*\} 0$/m);
    expect(metrics).toMatch(/^vllm:kv_cache_usage_perc\{[^}]*\} 0$/m);
  });
});

describe('under --scheduler batching: a request still waiting in the queue a second after it arrived sleeps until the engine schedules it', () => {
  it('sleeps while queued, and its tokens, writes and bytes are those its engine timed (one slot, three requests of ~0.9 s each)', async () => {
    const warnings = vi.spyOn(process, 'emitWarning');
    const batching = buildServer({ scheduler: 'batching', seed: 5, ttftMs: 10, itlMs: 30, maxNumSeqs: 1 });
    const url = `http://127.0.0.1:${await batching.listen(0)}`;
    watchBegins(batching);
    try {
      const ids = ['queued-0', 'queued-1', 'queued-2'];
      const answers = ids.map((id, i) =>
        request(`${url}/v1/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-request-id': id },
          body: JSON.stringify({ model: '', prompt: 'Hello there', max_tokens: 30, stream: true, ...(i === 2 ? { n: 2, stop: [' the'] } : {}) }),
        }).then(async (r) => Buffer.from(await r.body.arrayBuffer())),
      );
      const received = await Promise.all(answers);
      // The third waited for the first two (~1.8 s): its one-shot task at 1 s came before the
      // core scheduled it (both due times in the one scheduler), so it slept; the first two never waited.
      expect(slept.has('queued-2')).toBe(true);
      expect(slept.has('queued-0')).toBe(false);
      for (const [i, id] of ids.entries()) {
        const ended = await endedRecord(batching, id, 10_000);
        expect(ended.end?.how, id).toBe('completed');
        expect(received[i]?.equals(Buffer.from(ended.body)), id).toBe(true);
        // Every token timed by the engine, every write sent at or after its due.
        expect(ended.tokens.every((t) => Number.isFinite(t.dueMs)), id).toBe(true);
        expect(ended.writes.every((w) => w.actualMs !== null && w.actualMs >= w.dueMs), id).toBe(true);
      }
      // One slot: the third's first token after the second's last.
      const second = await endedRecord(batching, 'queued-1', 1000);
      const third = await endedRecord(batching, 'queued-2', 1000);
      const lastOfSecond = second.arrivalEpochMs + Math.max(...second.tokens.map((t) => t.dueMs));
      const firstOfThird = third.arrivalEpochMs + Math.min(...third.tokens.map((t) => t.dueMs));
      expect(firstOfThird).toBeGreaterThan(lastOfSecond);
      expect(warnings.mock.calls.map((call) => String(call[0]))).toEqual([]);
      const metrics = await (await request(`${url}/metrics`)).body.text();
      expect(metrics).toMatch(/^vllm:num_requests_waiting\{[^}]*\} 0$/m);
      expect(metrics).toMatch(/^vllm:num_requests_running\{[^}]*\} 0$/m);
    } finally {
      warnings.mockRestore();
      await batching.close();
    }
  });
});
