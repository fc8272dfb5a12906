/**
 * Audit 6-A: inputs that used to give a 5xx, stall the server or lose a truth record. Deep
 * nesting, huge lists, a streamed out-of-vocabulary prompt, plans too costly to make, /tokenize
 * with messages, a planner or route failure, and requests whose client leaves before its answer.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { BenchtruthServer } from '../../../server/app.ts';
import type { TruthRecordJson } from '../../../contracts/truth.ts';
import { MAX_REPR_DEPTH, pythonRepr } from '../../../server/dialects/vllm/python-repr.ts';
import { MAX_PLANNED_WRITES, planTooLarge } from '../../../server/dialects/vllm/sampling-request.ts';
import { requestWirePolicy } from '../../../server/wire/request-wire.ts';
import { VLLM_WIRE_POLICY, type WirePolicy } from '../../../server/wire/wire-policy.ts';
import type { Engine } from '../../../server/engine/engine.ts';
import { injectServer, postTo, truthOf } from './vllm-inject.ts';

let server: BenchtruthServer | null = null;
afterEach(async () => {
  server?.app.server.closeAllConnections();
  await server?.close();
  server = null;
});

/** Polls until the record has ended (a real socket's events arrive on later turns); bounded. */
async function endedTruth(s: BenchtruthServer, id: string): Promise<TruthRecordJson> {
  for (let i = 0; i < 200; i++) {
    const response = await s.app.inject({ method: 'GET', url: `/_truth/requests/${id}` });
    if (response.statusCode === 200) {
      const record = response.json<TruthRecordJson>();
      if (record.end !== null) return record;
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`truth of ${id} never ended`);
}

const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);

function policy(spec: string): Readonly<WirePolicy> {
  const wire = requestWirePolicy({ wire: null, wireModels: {} }, 'm', spec);
  if (!wire.ok) throw new Error(wire.message);
  return wire.policy;
}

/** Raw HTTP/1.1 over one socket: everything `text` receives until the socket closes or `until` matches. */
async function rawExchange(port: number, send: string, until: (received: string) => boolean, after?: (socket: Socket) => void): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  let received = '';
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      socket.destroy();
      resolve();
    }, 5000);
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      if (until(received)) {
        clearTimeout(timer);
        socket.destroy();
        resolve();
      }
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve();
    });
    socket.write(send);
    after?.(socket);
  });
  return received;
}

const post = (path: string, body: string, id: string): string =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\nx-request-id: ${id}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

describe('deeply nested JSON (finding 2)', () => {
  it('pythonRepr prints containers past its depth as reprlib does, without recursing further', () => {
    expect(pythonRepr(JSON.parse(nested(3)))).toBe('[[[]]]');
    const deep = pythonRepr(JSON.parse(nested(20_000)));
    expect(deep).toBe(`${'['.repeat(MAX_REPR_DEPTH)}[...]${']'.repeat(MAX_REPR_DEPTH)}`);
    expect(pythonRepr({ a: JSON.parse(`{"b":${nested(MAX_REPR_DEPTH)}}`) })).toContain("{'b': [");
  });

  it('every POST route answers a 4xx in its shape, and a generation request keeps its truth', async () => {
    server = await injectServer();
    const body = `{"prompt":${nested(5000)}}`;
    for (const path of ['/v1/completions', '/v1/chat/completions', '/tokenize', '/detokenize', '/generate', '/v1/generate']) {
      const response = await postTo(server, path, body, { 'x-request-id': `deep${path.replaceAll('/', '_')}` });
      expect(response.statusCode, path).toBeGreaterThanOrEqual(400);
      expect(response.statusCode, path).toBeLessThan(500);
    }
    const chat = await postTo(server, '/v1/chat/completions', `{"messages":[{"role":"user","content":${nested(5000)}}]}`);
    expect(chat.statusCode).toBe(400);
    const record = await truthOf(server, 'deep_v1_completions');
    expect(record.status).toBe(400);
    expect(record.end?.how).toBe('completed');
  });

  it('a generation route that throws before recording truth answers 500 and still has a record', async () => {
    server = await injectServer();
    const engine = server.context.engine as Engine;
    engine.admit = () => {
      throw new Error('engine bug');
    };
    const response = await postTo(server, '/v1/completions', { prompt: 'hi', max_tokens: 2 }, { 'x-request-id': 'boom' });
    expect(response.statusCode).toBe(500);
    expect(response.json()).toMatchObject({ error: { type: 'InternalServerError' } });
    const record = await truthOf(server, 'boom');
    expect(record).toMatchObject({ status: 500, endpoint: '/v1/completions', end: { how: 'completed' } });
    expect(Buffer.from(record.bodyBase64, 'base64').toString()).toBe(response.body);
  });
});

describe('huge lists (finding 3)', () => {
  it('a batch of 150,000 prompts is refused by the plan guard (a 400), never a stack overflow', async () => {
    server = await injectServer();
    const prompt = Array.from({ length: 150_000 }, () => [5]);
    const response = await postTo(server, '/v1/completions', { prompt, max_tokens: 1 }, { 'x-request-id': 'batch' });
    expect(response.statusCode).toBe(400);
    expect(response.json().error.message).toContain('plans at most');
    expect((await truthOf(server, 'batch')).status).toBe(400);
  });

  it('200,000 stop strings are served', async () => {
    server = await injectServer();
    const stop = Array.from({ length: 200_000 }, () => 'zz');
    const response = await postTo(server, '/v1/completions', { prompt: 'hi', max_tokens: 3, stop }, { 'x-request-id': 'stops' });
    expect(response.statusCode).toBe(200);
    expect((await truthOf(server, 'stops')).status).toBe(200);
  });

  it('a planner failure answers vLLM’s 500 and finishes a truth record', async () => {
    server = await injectServer();
    const engine = server.context.engine as Engine;
    const admit = engine.admit.bind(engine);
    // Timing the planner cannot read: planning throws after the route has taken over the reply.
    engine.admit = (request) => {
      const admitted = admit(request);
      const unreadable = new Proxy({}, {
        get() {
          throw new Error('planner bug');
        },
      });
      return admitted.ok ? { ...admitted, timing: unreadable as never } : admitted;
    };
    const response = await postTo(server, '/v1/completions', { prompt: 'hi', max_tokens: 2 }, { 'x-request-id': 'planbug' });
    expect(response.statusCode).toBe(500);
    expect(response.json()).toMatchObject({ error: { type: 'InternalServerError', code: 500 } });
    expect(response.headers['x-request-id']).toBe('planbug');
    const record = await endedTruth(server, 'planbug');
    expect(record).toMatchObject({ status: 500, tokens: [], end: { how: 'completed' } });
    expect(Buffer.from(record.bodyBase64, 'base64').toString()).toBe(response.body);
  });
});

describe('a streamed out-of-vocabulary prompt (finding 5)', () => {
  it('streams the error event and [DONE] chunked, with a truth record of both', async () => {
    server = await injectServer();
    const response = await postTo(server, '/v1/completions', { prompt: [999_999_999], max_tokens: 3, stream: true }, { 'x-request-id': 'oov-s' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-length']).toBeUndefined();
    expect(response.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(response.headers['x-request-id']).toBe('oov-s');
    expect(response.body).toBe(
      'data: {"error": {"message": "Token id 999999999 is out of vocabulary", "type": "BadRequestError", "param": null, "code": 400}}\n\ndata: [DONE]\n\n',
    );
    const record = await endedTruth(server, 'oov-s');
    expect(record).toMatchObject({ status: 200, stream: true, tokens: [], end: { how: 'completed' } });
    expect(record.events.map((e) => e.kind)).toEqual(['error', 'done']);
    expect(record.writes).toHaveLength(2);
    expect(Buffer.from(record.bodyBase64, 'base64').toString()).toBe(response.body);
  });
});

describe('the plan-size guard counts planned writes (finding 8)', () => {
  const size = (choices: number, maxTokens: number, wire: Readonly<WirePolicy> = VLLM_WIRE_POLICY, stream = true, stopStrings = 0) =>
    planTooLarge({ choices, maxTokens, stream, wire, stopStrings });

  it('admits a full-context answer on vLLM’s wire and refuses what would stall the server', () => {
    expect(size(1, 32_767)).toBeNull();
    expect(size(2, 32_000)).toBeNull();
    expect(size(1, 131_072)).toBeNull();
    expect(size(5, 32_000)).not.toBeNull();
    expect(size(8, 32_000)?.message).toBe(`benchtruth plans at most ${MAX_PLANNED_WRITES} writes per request; this one would plan about 256000 (8 choices × 32000 tokens).`);
    expect(size(8, 32_000)).toMatchObject({ status: 400, type: 'BadRequestError', param: 'max_tokens' });
  });

  it('multiplies by the wire policy’s pieces per token', () => {
    expect(size(1, 150, policy('writes=bytes'))).toBeNull();
    expect(size(1, 2000, policy('writes=bytes'))?.message).toContain('× 256 writes per token under its wire policy');
    // The wire policy is what to change when the answer fits with one write per token (audit 13-Z3-3).
    expect(size(1, 2000, policy('writes=bytes'))?.param).toBe('x-benchtruth-wire');
    expect(size(8, 32_000, policy('cut=2'))?.param).toBe('max_tokens');
    expect(size(1, 13_000, policy('cut=2'))).toBeNull();
    expect(size(1, 70_000, policy('cut=2'))).not.toBeNull();
    // Grouped tokens still cost their planning: never less than one unit per token.
    expect(size(8, 32_000, policy('tokens=8'))).not.toBeNull();
  });

  it('bounds stop-string checks (every token looks for every stop string)', () => {
    expect(size(1, 3, VLLM_WIRE_POLICY, true, 200_000)).toBeNull();
    expect(size(1, 30_000, VLLM_WIRE_POLICY, true, 1000)).toMatchObject({ status: 400, param: 'stop' });
  });

  it('the routes refuse in vLLM’s 400 shape, with a truth record', async () => {
    server = await injectServer();
    const bytes = await postTo(server, '/v1/completions', { prompt: 'hi', max_tokens: 8000, stream: true }, { 'x-request-id': 'bytes', 'x-benchtruth-wire': 'writes=bytes' });
    expect(bytes.statusCode).toBe(400);
    expect(bytes.json()).toMatchObject({ error: { type: 'BadRequestError', param: 'x-benchtruth-wire', code: 400 } });
    expect((await truthOf(server, 'bytes')).status).toBe(400);
    const chat = await postTo(server, '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }], max_tokens: 32_000, n: 8, stream: true });
    expect(chat.statusCode).toBe(400);
    expect(chat.json().error.message).toContain('plans at most');
  });
});

describe('the plan-size guard counts what a request adds to each event (review 23: logprobs planned 6 × the cap)', () => {
  it('logprobs, a running usage and framing lines make events, and so one-byte writes, larger', async () => {
    server = await injectServer();
    const ask = (url: string, body: Record<string, unknown>, wire = 'writes=bytes;gap=0ms') => postTo(server as BenchtruthServer, url, { max_tokens: 500, stream: true, ...body }, { 'x-benchtruth-wire': wire });
    const chat = { messages: [{ role: 'user', content: 'hi' }] };
    expect((await ask('/v1/completions', { prompt: 'hi' })).statusCode).toBe(200);
    for (const [url, body, wire] of [
      ['/v1/chat/completions', { ...chat, logprobs: true, top_logprobs: 20 }, undefined],
      ['/v1/completions', { prompt: 'hi', logprobs: 5 }, undefined],
      ['/v1/completions', { prompt: 'hi', stream_options: { include_usage: true, continuous_usage_stats: true } }, undefined],
      ['/v1/completions', { prompt: 'hi' }, `writes=bytes;gap=0ms;event=${'x'.repeat(200)}`],
      ['/v1/completions', { prompt: 'hi', max_tokens: 12_000 }, 'multiline;eol=crlf;cut=crlf;gap=0ms'],
      // A beam search's one event holds its whole text: sized under the wire asked for (diff review 23).
      ['/v1/chat/completions', { ...chat, use_beam_search: true, n: 4, max_tokens: 30_000, ignore_eos: true }, undefined],
    ] as const) {
      const refused = await ask(url, body, wire);
      expect(refused.statusCode, JSON.stringify([body, wire])).toBe(400);
      expect(refused.json().error.message).toContain('plans at most');
    }
  });

  it('a streamed chat beam search is sized as the body its one event per choice holds, as completions’ is (diff review 23)', async () => {
    server = await injectServer();
    const beam = { messages: [{ role: 'user', content: 'hi' }], use_beam_search: true, max_tokens: 600, stream: true };
    const answer = await postTo(server, '/v1/chat/completions', beam, { 'x-benchtruth-wire': 'writes=bytes;gap=0ms' });
    expect(answer.statusCode).toBe(200);
  });

  it('only a crlf cut is counted per line of multi-line JSON: other places cut an event once (diff review 23)', () => {
    for (const spec of ['multiline;cut=usage', 'multiline;cut=text', 'multiline;cut=data']) expect(planTooLarge({ choices: 1, maxTokens: 12_000, stream: true, wire: policy(spec), stopStrings: 0 }), spec).toBeNull();
    expect(planTooLarge({ choices: 1, maxTokens: 12_000, stream: true, wire: policy('multiline;eol=crlf;cut=crlf'), stopStrings: 0 })).not.toBeNull();
  });
});

describe('/tokenize with messages counts as chat does (finding 12)', () => {
  it('gives the prompt_tokens chat reports', async () => {
    server = await injectServer();
    for (const contents of [['hello world', 'foo'], ['a', 'b'], ['x']]) {
      const messages = contents.map((content) => ({ role: 'user', content }));
      const tokenized = await postTo(server, '/tokenize', { messages });
      const chat = await postTo(server, '/v1/chat/completions', { messages, max_tokens: 1 });
      expect(tokenized.json().count).toBe(chat.json().usage.prompt_tokens);
      expect(tokenized.json().tokens).toHaveLength(tokenized.json().count);
    }
  });
});

describe('requests whose client leaves or pipelines (findings 7 and 13)', () => {
  it('a client that aborts mid-body has a client_aborted record, not a completed 400', async () => {
    server = await injectServer();
    const port = await server.listen(0);
    const head = 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nx-request-id: midbody\r\nContent-Length: 100\r\n\r\n{"prompt":';
    await rawExchange(port, head, () => false, (socket) => setTimeout(() => socket.destroy(), 50));
    const record = await endedTruth(server, 'midbody');
    expect(record.end?.how).toBe('client_aborted');
    expect(record.writes[0]?.actualMs).toBeNull();
  });

  it('an HTTP/1.0 connection is closed after its response even when it asks for keep-alive, as uvicorn does (review 23)', async () => {
    server = await injectServer();
    const port = await server.listen(0);
    const ask = 'GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n';
    const received = await rawExchange(port, ask + ask, () => false);
    expect(received.match(/HTTP\/1\.1 200/g)).toHaveLength(1);
    expect(received.toLowerCase()).toContain('connection: close');
  });

  it('a client that half-closes mid-body gets nothing, as uvicorn sends nothing at its eof; its truth says so (review 23: an unrecorded 400)', async () => {
    server = await injectServer();
    const port = await server.listen(0);
    const head = 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nx-request-id: halfclose\r\nContent-Length: 100\r\n\r\n{"prompt":';
    const received = await rawExchange(port, head, () => false, (socket) => socket.end());
    expect(received).toBe('');
    const record = await endedTruth(server, 'halfclose');
    expect(record.end?.how).toBe('client_aborted');
    expect(record.writes.every((w) => w.actualMs === null)).toBe(true);
  });

  it('a half-close with a request cut short behind a stream ends the stream there: no 400 inside its chunked body (review 23)', async () => {
    server = await injectServer({ ttftMs: 5, itlMs: 5 });
    const port = await server.listen(0);
    const json = JSON.stringify({ prompt: 'hi', max_tokens: 300, stream: true, ignore_eos: true });
    const stream = `POST /v1/completions HTTP/1.1\r\nHost: x\r\nx-request-id: hc-stream\r\nContent-Type: application/json\r\nContent-Length: ${json.length}\r\n\r\n${json}`;
    const cut = 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"pro';
    const received = await rawExchange(port, stream + cut, () => false, (socket) => socket.end());
    expect(received).not.toContain('Invalid HTTP request received');
    const record = await endedTruth(server, 'hc-stream');
    expect(record.end?.how).toBe('client_aborted');
    // What arrived is exactly the stamped writes (a prefix of the body), nothing more.
    const body = received.slice(received.indexOf('\r\n\r\n') + 4);
    expect(body).not.toContain('HTTP/1.1');
  });

  it('a body the HTTP parser refuses mid-way records the plain-text 400 that left, not a client abort (review 22)', async () => {
    server = await injectServer();
    const port = await server.listen(0);
    const head = 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nx-request-id: badchunk\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"pro\r\nZZ\r\n';
    const received = await rawExchange(port, head, () => false);
    expect(received).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n[\s\S]*\r\n\r\nInvalid HTTP request received\.$/);
    const record = await endedTruth(server, 'badchunk');
    expect(record.status).toBe(400);
    expect(record.end?.how).toBe('completed');
    expect(Buffer.from(record.bodyBase64, 'base64').toString()).toBe('Invalid HTTP request received.');
    expect(record.writes[0]?.actualMs).not.toBeNull();
  });

  it('after a JSON decode error the keep-alive connection answers the requests pipelined behind it', async () => {
    server = await injectServer();
    const port = await server.listen(0);
    const send = post('/v1/completions', '{"prompt":', 'bad') + post('/v1/completions', '{"prompt":"hi","max_tokens":2}', 'next');
    const received = await rawExchange(port, send, (text) => (text.match(/HTTP\/1\.1 /g) ?? []).length >= 2 && text.includes('"finish_reason"'));
    const statuses = [...received.matchAll(/HTTP\/1\.1 (\d+)/g)].map((m) => m[1]);
    expect(statuses).toEqual(['400', '200']);
    expect(received.split('\r\n\r\n')[0]?.toLowerCase()).not.toContain('connection: close');
    expect((await endedTruth(server, 'bad')).end?.how).toBe('completed');
  });

  it('a refusal queued behind a stream whose socket closes finishes as client_aborted', async () => {
    server = await injectServer({ itlMs: 50 });
    const port = await server.listen(0);
    const send = post('/v1/completions', '{"prompt":"hi","max_tokens":40,"stream":true}', 'long') + post('/v1/completions', '{"prompt":"hi","max_tokens":-1}', 'queued');
    // Leave once the stream has started: the refusal behind it was never sent.
    await rawExchange(port, send, (text) => text.includes('data: '));
    const record = await endedTruth(server, 'queued');
    // Its turn never came, so it was never validated (uvicorn never starts it): 499, nobody's answer.
    expect(record.status).toBe(499);
    expect(record.end?.how).toBe('client_aborted');
    expect(record.writes[0]?.actualMs).toBeNull();
  });
});
