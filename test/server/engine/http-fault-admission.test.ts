/**
 * An HTTP-error fault is answered before any stream and never reaches the engine (README, the
 * wire layer): so a full waiting queue or prefill queue must not refuse it first. The route
 * draws the fault before admission (drawsHttpFault), from the same child stream planning uses.
 */
import { describe, expect, it } from 'vitest';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';
import { drawsHttpFault } from '../../../server/wire/stream-faults.ts';
import { parseWireSpec } from '../../../server/wire/wire-spec.ts';

const JSON_HEADERS = { 'content-type': 'application/json' };
/** How long the request holding the only slot stays in its prefill: far longer than the checks made meanwhile, however slow the machine. */
const BUSY_MS = 8000;

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  if (!condition()) throw new Error(`never: ${what}`);
}

describe('drawsHttpFault', () => {
  it('agrees with the fault planning draws, for every key, streamed or not, over a mixed fault list', async () => {
    // A nousage first: on a stream without a usage chunk it has nothing to act on and the next
    // fault is tried (review 24), so the draw must know which streams have one.
    const spec = 'fault=nousage@0.5,http:500@0.3,error:1@0.3,http:429:2@0.2,nodone@0.2';
    const faults = parseWireSpec(spec).faults;
    const server = buildServer({ seed: 23, ttftMs: 0, itlMs: 0 });
    await server.app.ready();
    try {
      for (let i = 0; i < 120; i++) {
        const stream = i % 2 === 0;
        const id = `draw-${i}`;
        const chat = i % 3 === 0;
        const usage = stream && i % 4 === 0;
        const options = usage ? { stream_options: { include_usage: true } } : {};
        const body = chat ? { messages: [{ role: 'user', content: 'x' }], max_tokens: 2, stream, ...options } : { prompt: 'x', max_tokens: 2, stream, ...options };
        await server.app.inject({ method: 'POST', url: chat ? '/v1/chat/completions' : '/v1/completions', headers: { ...JSON_HEADERS, 'x-request-id': id, 'x-benchtruth-wire': spec }, payload: JSON.stringify(body) });
        const truth = server.context.truth.get(id);
        expect(drawsHttpFault(faults, 23, id, stream, (kind) => kind !== 'nousage' || usage), `${id} (seed 23)`).toBe(truth?.fault?.kind === 'http');
      }
    } finally {
      await server.close();
    }
  });
});

describe('a full queue does not refuse an answer its HTTP fault gives', () => {
  it('vLLM, --scheduler batching: the fault’s status and truth, where a fault-free request gets the 429', async () => {
    const server: BenchtruthServer = buildServer({ seed: 5, scheduler: 'batching', maxNumSeqs: 1, maxWaitingQueueLength: 0, ttftMs: BUSY_MS, itlMs: 10 });
    await server.app.ready();
    try {
      const busy = server.app.inject({ method: 'POST', url: '/v1/completions', headers: JSON_HEADERS, payload: JSON.stringify({ prompt: 'x', max_tokens: 2 }) });
      await until(() => server.context.engine.state().running === 1, 'the slot taken');
      const post = (id: string, wire?: string) =>
        server.app.inject({ method: 'POST', url: '/v1/completions', headers: { ...JSON_HEADERS, 'x-request-id': id, ...(wire === undefined ? {} : { 'x-benchtruth-wire': wire }) }, payload: JSON.stringify({ prompt: 'x', max_tokens: 2, stream: true }) });
      const faulted = await post('q-fault', 'fault=http:503');
      expect(faulted.statusCode).toBe(503);
      expect(server.context.truth.get('q-fault')?.fault?.kind).toBe('http');
      expect((await post('q-plain')).statusCode).toBe(429);
      // Drawn with a probability: each answer is the fault's when the draw fires, else the queue's.
      for (let i = 0; i < 12; i++) {
        const response = await post(`q-draw-${i}`, 'fault=http:503@0.5');
        const fired = server.context.truth.get(`q-draw-${i}`)?.fault?.kind === 'http';
        expect(response.statusCode, `q-draw-${i}`).toBe(fired ? 503 : 429);
      }
      expect(server.context.engine.state().waiting).toBe(0);
      // The busy request is cut off by the close (recorded server_shutdown), not waited for.
      void busy.catch(() => undefined);
    } finally {
      await server.close();
    }
  });

  it('vLLM: a nousage with nothing to act on passes to the http fault after it, which the full queue leaves alone', async () => {
    const server: BenchtruthServer = buildServer({ seed: 5, scheduler: 'batching', maxNumSeqs: 1, maxWaitingQueueLength: 0, ttftMs: BUSY_MS, itlMs: 10 });
    await server.app.ready();
    try {
      const busy = server.app.inject({ method: 'POST', url: '/v1/completions', headers: JSON_HEADERS, payload: JSON.stringify({ prompt: 'x', max_tokens: 2 }) });
      await until(() => server.context.engine.state().running === 1, 'the slot taken');
      const post = (id: string, usage: boolean) =>
        server.app.inject({
          method: 'POST',
          url: '/v1/completions',
          headers: { ...JSON_HEADERS, 'x-request-id': id, 'x-benchtruth-wire': 'fault=nousage,http:503' },
          payload: JSON.stringify({ prompt: 'x', max_tokens: 2, stream: true, ...(usage ? { stream_options: { include_usage: true } } : {}) }),
        });
      const passed = await post('nu-none', false);
      expect(passed.statusCode).toBe(503);
      expect(server.context.truth.get('nu-none')?.fault?.kind).toBe('http');
      // With a usage chunk the nousage acts: the request is a stream, and the full queue refuses it.
      expect((await post('nu-usage', true)).statusCode).toBe(429);
      void busy.catch(() => undefined);
    } finally {
      await server.close();
    }
  });

  it('JetStream: a full prefill queue leaves an HTTP-fault answer to its fault', async () => {
    const server = buildServer({ seed: 1, ttftMs: BUSY_MS, itlMs: 0, jetstreamSlots: 1, jetstreamQueueLimit: 1 });
    await server.app.ready();
    try {
      const body = JSON.stringify({ max_tokens: 2, text_content: { text: 'x' } });
      // One request being prefilled and one in the backlog fill a queue of 1.
      const busy = [0, 1].map(() => server.app.inject({ method: 'POST', url: '/v1/generate', headers: JSON_HEADERS, payload: body }));
      await until(() => server.context.engine.state().running === 2, 'the requests admitted');
      const faulted = await server.app.inject({ method: 'POST', url: '/v1/generate', headers: { ...JSON_HEADERS, 'x-request-id': 'js-fault', 'x-benchtruth-wire': 'fault=http:429:4' }, payload: body });
      expect(faulted.statusCode).toBe(429);
      expect(faulted.headers['retry-after']).toBe('4');
      expect((await server.app.inject({ method: 'POST', url: '/v1/generate', headers: JSON_HEADERS, payload: body })).statusCode).toBe(503);
      // The busy requests are cut off by the close (recorded server_shutdown), not waited for.
      for (const call of busy) void call.catch(() => undefined);
    } finally {
      await server.close();
    }
  });
});
