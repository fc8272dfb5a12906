/**
 * JetStream's HTTP surfaces through inject(): the ai-on-gke proxy's `/generate` (one body, or
 * pretty-printed objects back to back), JetStream's `/v1/generate` (protobuf-JSON steps plus
 * EOS, FastAPI's 422 for a body it forbids), the health routes and the jetstream_* metrics.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonObjectsOf, postJson } from '../helpers/json-bodies.ts';
import { buildServer, type BenchtruthServer } from '../../server/app.ts';
import { JETSTREAM_BUCKETS } from '../../server/dialects/jetstream/jetstream-metrics.ts';

let server: BenchtruthServer;

beforeAll(async () => {
  server = buildServer({ seed: 11, ttftMs: 0, itlMs: 0, multibyteRate: 0.3 });
  await server.app.ready();
});

afterAll(async () => {
  await server.close();
});

const post = (url: string, body: unknown, headers: Record<string, string> = {}) => postJson(server.app, url, body, headers);

const objects = jsonObjectsOf;

describe('ai-on-gke proxy POST /generate', () => {
  it('answers a non-streamed request with {"response": text}', async () => {
    const response = await post('/generate', { prompt: 'Hello there', max_tokens: 6 }, { 'x-request-id': 'p-1' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/json');
    const body = JSON.parse(response.body) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(['response']);
    const truth = server.context.truth.get('p-1');
    expect(body.response).toBe(truth?.tokens.map((t) => t.text).join(''));
  });

  it('streams one {id, time_created, text} (indent 4) per step plus the empty EOS step, back to back, a new id each', async () => {
    const response = await post('/generate', { prompt: 'Hello there', max_tokens: 7, stream: true }, { 'x-request-id': 'p-2' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/json');
    const chunks = objects(response.body);
    expect(chunks).toHaveLength(8);
    expect(response.body.includes('}{')).toBe(true);
    const ids = new Set<string>();
    const truth = server.context.truth.get('p-2');
    chunks.forEach((text, i) => {
      expect(text).toMatch(/^\{\n {4}"id": "generate-[0-9a-f]{32}",\n {4}"time_created": \d+\.\d+,\n {4}"text": ".*"\n\}$/s);
      const chunk = JSON.parse(text) as { id: string; time_created: number; text: string };
      expect(Object.keys(chunk)).toEqual(['id', 'time_created', 'text']);
      expect(chunk.text).toBe(truth?.tokens[i]?.text ?? '');
      expect(Math.abs(chunk.time_created * 1000 - Date.now())).toBeLessThan(60_000);
      ids.add(chunk.id);
    });
    expect(ids.size).toBe(8);
  });

  it('with a fixed created, streams the same bytes on every run: time_created is that epoch plus the planned offset (audit 12-Y6-3)', async () => {
    const bodies: string[] = [];
    for (let run = 0; run < 2; run++) {
      const fixed = buildServer({ seed: 11, ttftMs: 20, itlMs: 5, created: 1_700_000_000 });
      await fixed.app.ready();
      try {
        const response = await postJson(fixed.app, '/generate', { prompt: 'Hello there', max_tokens: 4, stream: true }, { 'x-request-id': 'fixed-1' });
        bodies.push(response.body);
        const stamps = objects(response.body).map((text) => (JSON.parse(text) as { time_created: number }).time_created);
        expect(stamps[0]).toBeCloseTo(1_700_000_000.02, 5);
        for (const stamp of stamps) expect(stamp).toBeLessThan(1_700_000_001);
      } finally {
        await fixed.close();
      }
    }
    expect(bodies[1]).toBe(bodies[0]);
  });

  it('answers a body that is not an object in FastAPI’s 422 shape', async () => {
    const response = await post('/generate', [1]);
    expect(response.statusCode).toBe(422);
    expect((JSON.parse(response.body) as { detail: Array<{ type: string }> }).detail[0]?.type).toBe('model_attributes_type');
  });

  it('GET /healthcheck → {"response": {"is_live": true}}', async () => {
    const response = await server.app.inject({ method: 'GET', url: '/healthcheck' });
    expect(response.statusCode).toBe(200);
    expect(JSON.parse(response.body)).toEqual({ response: { is_live: true } });
  });
});

describe('JetStream POST /v1/generate', () => {
  it('streams protobuf-JSON steps (camelCase, indent 2) and one EOS step', async () => {
    const response = await post('/v1/generate', { max_tokens: 5, text_content: { text: 'Tell me a story' } }, { 'x-request-id': 'n-1' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(response.body.startsWith('data:')).toBe(false);
    const chunks = objects(response.body);
    expect(chunks).toHaveLength(6);
    const truth = server.context.truth.get('n-1');
    chunks.slice(0, 5).forEach((text, i) => {
      const token = truth?.tokens[i];
      // MessageToJson keeps ensure_ascii: non-ASCII text travels as \uXXXX escapes.
      const ascii = JSON.stringify({ streamContent: { samples: [{ text: token?.text, tokenIds: [token?.id] }] } }, null, 2).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
      expect(text).toBe(ascii);
    });
    expect(chunks[5]).toBe('{\n  "streamContent": {\n    "samples": [\n      {}\n    ]\n  }\n}');
  });

  it('answers token-id requests with token ids only (empty text omitted)', async () => {
    const response = await post('/v1/generate', { max_tokens: 3, token_content: { token_ids: [1, 2, 3] } }, { 'x-request-id': 'n-2' });
    const chunks = objects(response.body).map((t) => JSON.parse(t) as { streamContent: { samples: Array<Record<string, unknown>> } });
    const truth = server.context.truth.get('n-2');
    expect(truth?.promptTokens).toBe(3);
    expect(chunks.slice(0, 3).map((c) => c.streamContent.samples[0])).toEqual(truth?.tokens.map((t) => ({ tokenIds: [t.id] })));
  });

  it.each([
    ['an unknown field', { max_tokens: 3, text_content: { text: 'x' }, prompt: 'x' }, [{ type: 'extra_forbidden', loc: ['body', 'prompt'], msg: 'Extra inputs are not permitted', input: 'x' }]],
    ['a missing max_tokens', { text_content: { text: 'x' } }, [{ type: 'missing', loc: ['body', 'max_tokens'], msg: 'Field required', input: { text_content: { text: 'x' } } }]],
    ['a non-integer max_tokens', { max_tokens: 'lots', text_content: { text: 'x' } }, [{ type: 'int_parsing', loc: ['body', 'max_tokens'], msg: 'Input should be a valid integer, unable to parse string as an integer', input: 'lots' }]],
    // pydantic lists extra keys after every field's errors (review 21-jetstream).
    [
      'an unknown field beside a metadata without start_time',
      { max_tokens: 2, text_content: { text: 'x' }, zzz: 1, metadata: {} },
      [
        { type: 'missing', loc: ['body', 'metadata', 'start_time'], msg: 'Field required', input: {} },
        { type: 'extra_forbidden', loc: ['body', 'zzz'], msg: 'Extra inputs are not permitted', input: 1 },
      ],
    ],
  ])('answers %s with 422 in FastAPI’s shape', async (_name, body, detail) => {
    const response = await post('/v1/generate', body);
    expect(response.statusCode).toBe(422);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(response.body)).toEqual({ detail });
  });

  it("lists the proxy's errors in its model's field order, server before stream (review 21-jetstream)", async () => {
    const response = await post('/generate', { prompt: 'x', stream: 'maybe', server: 1 });
    expect(response.statusCode).toBe(422);
    expect((JSON.parse(response.body) as { detail: Array<{ loc: string[] }> }).detail.map((d) => d.loc.join('.'))).toEqual(['body.server', 'body.stream']);
  });

  it('ignores unknown keys inside text_content, token_content and metadata (plain pydantic models), as JetStream does', async () => {
    for (const [i, body] of [
      { max_tokens: 2, text_content: { text: 'x', lang: 'en' } },
      { max_tokens: 2, token_content: { token_ids: [1, 2], x: null } },
      { max_tokens: 2, text_content: { text: 'x' }, metadata: { start_time: 1.5, y: 'z' } },
    ].entries()) {
      const response = await post('/v1/generate', body, { 'x-request-id': `nested-extra-${i}` });
      expect(response.statusCode).toBe(200);
      expect(server.context.truth.get(`nested-extra-${i}`)?.tokens).toHaveLength(2);
    }
  });

  it('keeps the prompt text as sent: the whitespace stripping of DecodeRequest does not reach TextContent', async () => {
    await post('/v1/generate', { max_tokens: 1, text_content: { text: 'a b' } }, { 'x-request-id': 'strip-0' });
    await post('/v1/generate', { max_tokens: 1, text_content: { text: '   a b   ' } }, { 'x-request-id': 'strip-1' });
    const plain = server.context.truth.get('strip-0')?.promptTokens ?? 0;
    expect(server.context.truth.get('strip-1')?.promptTokens).toBeGreaterThan(plain);
  });

  it('answers a body that is not JSON with 422 json_invalid, never a 500', async () => {
    const response = await post('/v1/generate', '{"max_tokens": ');
    expect(response.statusCode).toBe(422);
    const detail = (JSON.parse(response.body) as { detail: Array<{ type: string }> }).detail;
    expect(detail[0]?.type).toBe('json_invalid');
  });

  it('GET /v1/health → {"is_live": "True"}', async () => {
    const response = await server.app.inject({ method: 'GET', url: '/v1/health' });
    expect(response.statusCode).toBe(200);
    expect(JSON.parse(response.body)).toEqual({ is_live: 'True' });
  });
});

describe('jetstream_* metrics', () => {
  it('exposes DESIGN §7’s names, types, labels and buckets, fed by finished requests', async () => {
    const text = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
    const types = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1], m[2]]));
    expect(Object.fromEntries(types)).toMatchObject({
      jetstream_prefill_backlog_size: 'gauge',
      jetstream_transfer_backlog_size: 'gauge',
      jetstream_generate_backlog_size: 'gauge',
      jetstream_slots_used_percentage: 'gauge',
      jetstream_server_startup_latency: 'gauge',
      jetstream_model_load_time: 'gauge',
      jetstream_request_success_count_total: 'counter',
      jetstream_queue_duration: 'histogram',
      jetstream_time_to_first_token: 'histogram',
      jetstream_time_per_output_token: 'histogram',
      jetstream_time_per_prefill_token: 'histogram',
      jetstream_time_per_request: 'histogram',
      jetstream_wait_time_per_request: 'histogram',
      jetstream_request_input_length: 'histogram',
      jetstream_request_output_length: 'histogram',
    });
    expect(text).toMatch(/^jetstream_slots_used_percentage\{id="[^"]+",idx="0"\} 0$/m);
    expect(text).toMatch(/^jetstream_prefill_backlog_size\{id="[^"]+"\} 0$/m);
    const les = (name: string) => [...text.matchAll(new RegExp(`^${name}_bucket\\{le="([^"]+)",id="[^"]+"\\}`, 'gm'))].map((m) => m[1]);
    expect(les('jetstream_time_to_first_token')).toEqual([...JETSTREAM_BUCKETS.timeToFirstToken.map(String), '+Inf']);
    expect(les('jetstream_time_per_output_token')).toEqual([...JETSTREAM_BUCKETS.timePerOutputToken.map(String), '+Inf']);
    expect(les('jetstream_time_per_request')).toEqual([...JETSTREAM_BUCKETS.timePerRequest.map(String), '+Inf']);
    const success = /^jetstream_request_success_count_total\{id="[^"]+"\} (\d+)$/m.exec(text);
    expect(Number(success?.[1])).toBeGreaterThanOrEqual(4);
  });
});

describe('vllm:* on the JetStream dialect', () => {
  it('counts a JetStream request in every per-request family, its n 1 and its engine limit (audit 16-J finding 7)', async () => {
    const small = buildServer({ seed: 2, ttftMs: 0, itlMs: 0, dialect: 'jetstream' });
    await small.app.ready();
    try {
      for (let i = 0; i < 2; i++) await small.app.inject({ method: 'POST', url: '/v1/generate', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ max_tokens: 3, text_content: { text: 'x' } }) });
      const text = (await small.app.inject({ method: 'GET', url: '/metrics' })).body;
      const count = (name: string): number => Number(new RegExp(`^${name}_count\\{[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1]);
      for (const name of ['vllm:e2e_request_latency_seconds', 'vllm:request_params_n', 'vllm:request_params_max_tokens', 'vllm:request_max_num_generation_tokens']) expect(count(name), name).toBe(2);
      // The request's own max_tokens, not the engine's limit with JetStream's EOS step.
      expect(Number(/^vllm:request_params_max_tokens_sum\{[^}]*\} (\S+)$/m.exec(text)?.[1])).toBe(2 * 3);
    } finally {
      await small.close();
    }
  });
});

describe('a full prefill queue', () => {
  it('refuses HTTP requests beyond the queue limit with 503 in FastAPI’s shape, never a 500', async () => {
    const small = buildServer({ seed: 1, ttftMs: 200, itlMs: 0, jetstreamSlots: 1, jetstreamQueueLimit: 1 });
    await small.app.ready();
    try {
      const body = JSON.stringify({ max_tokens: 2, text_content: { text: 'x' } });
      // One request being prefilled and one waiting in the backlog fill a queue of 1 (JetStream's
      // prefill thread takes the request it prefills off the backlog).
      const first = small.app.inject({ method: 'POST', url: '/v1/generate', headers: { 'content-type': 'application/json' }, payload: body });
      const waiting = small.app.inject({ method: 'POST', url: '/v1/generate', headers: { 'content-type': 'application/json' }, payload: body });
      await new Promise((resolve) => setTimeout(resolve, 50));
      const refused = await small.app.inject({ method: 'POST', url: '/generate', headers: { 'content-type': 'application/json', 'x-request-id': 'full-1' }, payload: JSON.stringify({ prompt: 'x', max_tokens: 2 }) });
      expect(refused.statusCode).toBe(503);
      expect(JSON.parse(refused.body)).toEqual({ detail: 'The prefill queue is full (1 requests waiting for prefill); retry later.' });
      // The refusal has its truth, as the gRPC one and vLLM's have (audit 7-W).
      const truth = small.context.truth.get('full-1');
      expect(truth).toMatchObject({ dialect: 'jetstream', endpoint: '/generate', status: 503, tokens: [], end: { how: 'completed' } });
      expect(Buffer.from(truth?.body ?? new Uint8Array()).toString()).toBe(refused.body);
      expect((await first).statusCode).toBe(200);
      expect((await waiting).statusCode).toBe(200);
    } finally {
      await small.close();
    }
  });
});

describe('slots and backlog as JetStream’s orchestrator counts them (audit 15-S6)', () => {
  it.each(['isolated', 'batching'] as const)('a request in prefill is in the prefill backlog; it takes a decode slot with its first token (--scheduler %s)', async (scheduler) => {
    // Prefill lasts 1 s and decoding 1 s more: each state is awaited, never guessed by a sleep,
    // and lasts about a second, so a slow machine still sees it.
    const server = buildServer({ seed: 1, scheduler, ttftMs: 1000, itlMs: 10, jetstreamSlots: 2, jetstreamQueueLimit: 8 });
    await server.app.ready();
    const gauges = async (): Promise<string> => {
      const text = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
      const value = (name: string): string => new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 'absent';
      return `prefill ${value('jetstream_prefill_backlog_size')}, slots ${value('jetstream_slots_used_percentage')}, generate ${value('jetstream_generate_backlog_size')}`;
    };
    const reaches = async (expected: string): Promise<string> => {
      let seen = await gauges();
      for (let i = 0; i < 300 && seen !== expected; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        seen = await gauges();
      }
      return seen;
    };
    try {
      const body = JSON.stringify({ max_tokens: 100, text_content: { text: 'x' } });
      const calls = [0, 1, 2].map(() => server.app.inject({ method: 'POST', url: '/v1/generate', headers: { 'content-type': 'application/json' }, payload: body }));
      // All three in prefill: one being prefilled, two in the backlog (review 21-jetstream: JetStream's
      // prefill thread takes its request off the backlog); none holds a slot yet, nor will for a while.
      expect(await reaches('prefill 2, slots 0, generate 0')).toBe('prefill 2, slots 0, generate 0');
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await gauges()).toBe('prefill 2, slots 0, generate 0');
      // Past prefill: two slots full, the third waits for one; the generate backlog reads 0, as
      // JetStream's always does (review 22: its gauge is the queue's size read once, at creation).
      expect(await reaches('prefill 0, slots 1, generate 0')).toBe('prefill 0, slots 1, generate 0');
      for (const call of calls) expect((await call).statusCode).toBe(200);
      expect(await gauges()).toBe('prefill 0, slots 0, generate 0');
      // Nothing is left in the scheduler: under batching a task at the deferred plan's
      // placeholder first-token time held every record for days (audit 16-J finding 2).
      expect(JSON.parse((await server.app.inject({ method: 'GET', url: '/_engine/state' })).body)).toMatchObject({ pendingTasks: 0 });
    } finally {
      await server.close();
    }
  });

  it.each(['isolated', 'batching'] as const)('a full queue is a full prefill backlog: requests past prefill leave room (--scheduler %s)', async (scheduler) => {
    const server = buildServer({ seed: 1, scheduler, ttftMs: 0, itlMs: 100, jetstreamSlots: 1, jetstreamQueueLimit: 1 });
    await server.app.ready();
    try {
      const body = JSON.stringify({ max_tokens: 20, text_content: { text: 'x' } });
      const send = () => server.app.inject({ method: 'POST', url: '/v1/generate', headers: { 'content-type': 'application/json' }, payload: body });
      const first = send();
      const gauges = async (): Promise<string> => {
        const text = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
        const value = (name: string): string => new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 'absent';
        return `prefill ${value('jetstream_prefill_backlog_size')}, slots ${value('jetstream_slots_used_percentage')}`;
      };
      let seen = await gauges();
      for (let i = 0; i < 300 && seen !== 'prefill 0, slots 1'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        seen = await gauges();
      }
      expect(seen).toBe('prefill 0, slots 1');
      // The first decodes for about 2 s more; the queue it left is empty, so the next is admitted.
      const second = await send();
      expect(second.statusCode).toBe(200);
      expect((await first).statusCode).toBe(200);
    } finally {
      await server.close();
    }
  });
});

describe('wire faults on JetStream’s surfaces', () => {
  it('answers an HTTP fault before the stream in FastAPI’s shape, with Retry-After', async () => {
    const response = await post('/v1/generate', { max_tokens: 3, text_content: { text: 'x' } }, { 'x-benchtruth-wire': 'fault=http:429:3' });
    expect(response.statusCode).toBe(429);
    expect(response.headers['retry-after']).toBe('3');
    expect(JSON.parse(response.body)).toEqual({ detail: 'Too Many Requests: the prefill queue is full, retry later (benchtruth wire fault)' });
  });

  it('drops the EOS step under nodone, so a reader can tell the stream was cut short', async () => {
    const response = await post('/v1/generate', { max_tokens: 3, text_content: { text: 'x' } }, { 'x-benchtruth-wire': 'fault=nodone', 'x-request-id': 'f-1' });
    expect(objects(response.body)).toHaveLength(3);
    expect(server.context.truth.get('f-1')?.fault?.kind).toBe('nodone');
  });

  it('records in the truth only the wire options the JSON-object surfaces apply (audit 13-Z3-2)', async () => {
    const spec = 'eol=crlf;bom;keepalive;event=x;id;multiline;space=no;role=early;tokens=2;cut=2';
    for (const [url, body, id] of [['/v1/generate', { max_tokens: 3, text_content: { text: 'x' } }, 'w-decode'], ['/generate', { prompt: 'x', max_tokens: 3, stream: true }, 'w-proxy']] as const) {
      const response = await post(url, body, { 'x-benchtruth-wire': spec, 'x-request-id': id });
      expect(response.statusCode).toBe(200);
      expect(server.context.truth.get(id)?.wire, url).toBe('cut=2;tokens=2');
    }
  });

  it('answers a wire spec it cannot read with 400 in FastAPI’s shape', async () => {
    const response = await post('/generate', { prompt: 'x', max_tokens: 3 }, { 'x-benchtruth-wire': 'cut=banana' });
    expect(response.statusCode).toBe(400);
    expect((JSON.parse(response.body) as { detail: string }).detail).toMatch(/^x-benchtruth-wire: /);
  });
});

describe('JetStream behind the batching engine', () => {
  it('reports queue wait apart: TTFT metric + queue duration = the truth’s first-token time', async () => {
    const batching = buildServer({ seed: 4, ttftMs: 20, itlMs: 5, scheduler: 'batching', maxNumSeqs: 1 });
    await batching.app.ready();
    try {
      const ids = ['b-1', 'b-2', 'b-3'];
      const responses = await Promise.all(
        ids.map((id) =>
          batching.app.inject({ method: 'POST', url: '/v1/generate', headers: { 'content-type': 'application/json', 'x-request-id': id }, payload: JSON.stringify({ max_tokens: 4, text_content: { text: 'queue me' } }) }),
        ),
      );
      expect(responses.map((r) => r.statusCode)).toEqual([200, 200, 200]);
      const text = (await batching.app.inject({ method: 'GET', url: '/metrics' })).body;
      const value = (name: string): number => Number(new RegExp(`^${name}\\{id="[^"]+"\\} (\\S+)$`, 'm').exec(text)?.[1]);
      const firstTokenSec = ids.reduce((sum, id) => {
        const record = batching.context.truth.get(id);
        const first = record?.events.find((e) => e.tokenCount > 0);
        const write = record?.writes.find((w) => first !== undefined && first.completesAt < w.offset + w.length);
        return sum + (write?.actualMs ?? Number.NaN) / 1000;
      }, 0);
      expect(value('jetstream_queue_duration_count')).toBe(3);
      // One decode slot: the later requests waited for the earlier ones.
      expect(value('jetstream_queue_duration_sum')).toBeGreaterThan(0);
      expect(value('jetstream_time_to_first_token_sum') + value('jetstream_queue_duration_sum')).toBeCloseTo(firstTokenSec, 6);
    } finally {
      await batching.close();
    }
  });
});

describe('FastAPI’s answers to bodies and methods it refuses', () => {
  const raw = (url: string, payload: string, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
    server.app.inject({ method: 'POST', url, headers, payload });

  it('an empty body is no body: 422 missing ["body"], on both generate routes, with or without a content type', async () => {
    for (const url of ['/generate', '/v1/generate']) {
      for (const headers of [{ 'content-type': 'application/json' }, {}] as Array<Record<string, string>>) {
        const response = await raw(url, '', headers);
        expect(response.statusCode).toBe(422);
        expect(JSON.parse(response.body)).toEqual({ detail: [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }] });
      }
    }
  });

  it('malformed JSON carries Python json’s message and position', async () => {
    for (const [body, error, position] of [
      ['{"max_tokens": ', 'Expecting value', 15],
      ['{max_tokens: 1}', 'Expecting property name enclosed in double quotes', 1],
      ['{"max_tokens": 1,}', 'Expecting property name enclosed in double quotes', 17],
      ['{"prompt": "日本" "x"}', "Expecting ',' delimiter", 16],
    ] as const) {
      const response = await raw('/v1/generate', body);
      expect(response.statusCode).toBe(422);
      expect(JSON.parse(response.body)).toEqual({ detail: [{ type: 'json_invalid', loc: ['body', position], msg: 'JSON decode error', input: {}, ctx: { error } }] });
    }
  });

  it('a wrong method on a JetStream route is 405 {"detail":"Method Not Allowed"} with allow, HEAD on GET routes included', async () => {
    for (const [method, url, allow] of [
      ['GET', '/generate', 'POST'],
      ['PUT', '/v1/generate', 'POST'],
      ['HEAD', '/v1/generate', 'POST'],
      ['OPTIONS', '/generate', 'POST'],
      ['POST', '/healthcheck', 'GET'],
      ['HEAD', '/healthcheck', 'GET'],
      ['DELETE', '/v1/health', 'GET'],
    ] as const) {
      const response = await server.app.inject({ method, url });
      expect(response.statusCode, `${method} ${url}`).toBe(405);
      expect(response.headers.allow).toBe(allow);
      if (method !== 'HEAD') expect(response.body).toBe('{"detail":"Method Not Allowed"}');
    }
  });

  it('JetStream’s apps have no CORS middleware: a preflight to /generate is a 405 like any OPTIONS', async () => {
    const response = await server.app.inject({ method: 'OPTIONS', url: '/generate', headers: { origin: 'http://a', 'access-control-request-method': 'POST' } });
    expect(response.statusCode).toBe(405);
  });
});

describe('JetStream requests that share an x-request-id (review 23)', () => {
  it('each takes its own decode slot once past prefill, under the batching engine', async () => {
    const batching = buildServer({ seed: 4, ttftMs: 20, itlMs: 5, scheduler: 'batching', maxNumSeqs: 64, jetstreamSlots: 64, jetstreamQueueLimit: 3 });
    await batching.app.ready();
    try {
      const send = (id: string) => batching.app.inject({ method: 'POST', url: '/v1/generate', headers: { 'content-type': 'application/json', 'x-request-id': id }, payload: JSON.stringify({ max_tokens: 400, text_content: { text: 'same id' } }) });
      const running = [send('dup'), send('dup'), send('dup'), send('dup')];
      // Each 2 s stream is past its 20 ms prefill soon: read the gauges until all four are (at most 1.5 s).
      const slotsLine = /^jetstream_slots_used_percentage\{id="[^"]+",idx="0"\} (\S+)$/m;
      let text = '';
      for (let i = 0; i < 150; i++) {
        text = (await batching.app.inject({ method: 'GET', url: '/metrics' })).body;
        if (slotsLine.exec(text)?.[1] === '0.0625') break;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(text).toMatch(slotsLine);
      expect(slotsLine.exec(text)?.[1]).toBe('0.0625');
      expect(text).toMatch(/^jetstream_prefill_backlog_size\{id="[^"]+"\} 0$/m);
      // The backlog is empty (it read 2 of 3 when three of the four stayed "in prefill"): two more are taken in, not refused.
      const more = await Promise.all([send('more-1'), send('more-2')]);
      expect(more.map((r) => r.statusCode)).toEqual([200, 200]);
      expect((await Promise.all(running)).map((r) => r.statusCode)).toEqual([200, 200, 200, 200]);
    } finally {
      await batching.close();
    }
  });
});
