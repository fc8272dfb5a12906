/**
 * The wire policy through the server: per request by header, server-wide, per model; the truth
 * record holds the exact bytes, writes and fault; bad headers get vLLM's 400. Uses inject().
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { truthFromJson, type TruthRecordJson } from '../../../contracts/truth.ts';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';
import { formatWireSpec, parseWireSpec } from '../../../server/wire/wire-spec.ts';

let server: BenchtruthServer;

beforeAll(async () => {
  server = buildServer({ seed: 3, ttftMs: 0, itlMs: 0, created: 1, wire: 'keepalive=2', wireModels: { 'crlf-model': 'eol=crlf' }, model: 'crlf-model' });
  await server.app.ready();
});

afterAll(async () => {
  await server.close();
});

let listening: Promise<number> | null = null;
/** The shared server on a real socket, for what inject() cannot send (repeated or raw-byte headers). */
const portOf = (): Promise<number> => (listening ??= server.listen(0));

async function post(id: string, wire: string | undefined, body: Record<string, unknown> = {}) {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-request-id': id };
  if (wire !== undefined) headers['x-benchtruth-wire'] = wire;
  const response = await server.app.inject({
    method: 'POST',
    url: '/v1/completions',
    headers,
    payload: JSON.stringify({ prompt: 'hello there', max_tokens: 5, stream: true, ...body }),
  });
  const truth = await server.app.inject({ method: 'GET', url: `/_truth/requests/${encodeURIComponent(id)}` });
  return { response, truth: truth.statusCode === 200 ? truthFromJson(JSON.parse(truth.body) as TruthRecordJson) : null };
}

describe('policies by layer', () => {
  it('server-wide (keepalive) and per-model (CRLF) specs apply to a request without the header', async () => {
    const { response, truth } = await post('layers', undefined);
    expect(response.body.startsWith(': keep-alive\r\n\r\n')).toBe(true);
    expect(truth?.wire).toBe('eol=crlf;keepalive=2');
  });

  it('the header layers on top and the truth record holds the exact bytes and every write', async () => {
    const { response, truth } = await post('cut', 'vllm;cut=usage,done;gap=1ms', { stream_options: { include_usage: true } });
    expect(truth).not.toBeNull();
    if (truth === null) return;
    expect(Buffer.from(truth.body).toString('utf8')).toBe(response.body);
    expect(truth.writes.length).toBe(truth.events.length + 2);
    expect(truth.writes.every((w) => w.actualMs !== null)).toBe(true);
    expect(truth.wire).toBe('cut=usage,done;gap=1ms');
  });

  it.each([
    ['http:429:4', 429, 'http'],
    ['http:503', 503, 'http'],
    ['http:500', 500, 'http'],
    ['http:400', 400, 'http'],
  ])('fault=%s answers %i in vLLM’s error shape before any stream', async (fault, status, kind) => {
    const { response, truth } = await post(`http-${fault}`, `fault=${fault}`);
    expect(response.statusCode).toBe(status);
    expect(response.headers['content-type']).toBe('application/json');
    const body = JSON.parse(response.body) as { error: Record<string, unknown> };
    expect(Object.keys(body.error)).toEqual(['message', 'type', 'param', 'code']);
    expect(body.error.code).toBe(status);
    if (status === 429) expect(response.headers['retry-after']).toBe('4');
    expect(truth?.status).toBe(status);
    expect(truth?.fault?.kind).toBe(kind);
    expect(truth?.end?.how).toBe('fault');
  });

  it('an error event after the 200 is in the stream and the truth', async () => {
    const { response, truth } = await post('err', 'vllm;fault=error:2:500');
    expect(response.statusCode).toBe(200);
    expect(response.body).toContain('data: {"error": {"message": "Internal server error (benchtruth wire fault).", "type": "InternalServerError", "param": null, "code": 500}}\n\ndata: [DONE]\n\n');
    expect(truth?.events.map((e) => e.kind)).toEqual(['content', 'content', 'error', 'done']);
    expect(truth?.fault).toEqual({ kind: 'error', params: { afterTokens: 2, status: 500, probability: 1 } });
    expect(truth?.end?.how).toBe('fault');
  });

  it('slow headers are planned in the truth record', async () => {
    const { truth } = await post('slow', 'vllm;fault=slowheaders:30ms');
    expect(truth?.headersDueMs).toBe(30);
    expect(truth?.headersMs).toBeGreaterThanOrEqual(29);
    expect(truth?.writes.every((w) => w.dueMs >= 30)).toBe(true);
    expect(truth?.end?.how).toBe('completed');
  });

  it('a fault that does not fire leaves no trace; the same request id always decides the same way', async () => {
    const a = await post('maybe-1', 'vllm;fault=nodone@0.5');
    const again = await post('maybe-1', 'vllm;fault=nodone@0.5');
    expect(again.truth?.fault).toEqual(a.truth?.fault);
    expect(again.response.body).toBe(a.response.body);
  });

  it('non-streamed responses can be cut too (content-length is the whole body)', async () => {
    const { response, truth } = await post('plain', 'vllm;cut=4', { stream: false });
    expect(response.statusCode).toBe(200);
    expect(Number(response.headers['content-length'])).toBe(Buffer.byteLength(response.body));
    expect(truth?.writes).toHaveLength(4);
    expect(JSON.parse(response.body)).toMatchObject({ object: 'text_completion' });
  });
});

describe('bad x-benchtruth-wire headers are the client’s mistake: 400 in vLLM’s shape', () => {
  it.each(['eol=sideways', 'fault=explode', 'cut=0', 'writes=', 'tokens=burst:x'])('%s', async (spec) => {
    const { response } = await post(`bad-${spec}`, spec);
    expect(response.statusCode).toBe(400);
    const body = JSON.parse(response.body) as { error: Record<string, unknown> };
    expect(body.error.type).toBe('BadRequestError');
    expect(body.error.param).toBe('x-benchtruth-wire');
    expect(String(body.error.message)).toContain(JSON.stringify(spec));
  });
});

describe('every policy and fault, asked for by header, is byte-exact in the truth record', () => {
  // A disconnect cannot be injected (the fake socket rejects); test/e2e/wire-faults.test.ts covers it on a real one.
  const SPECS = [
    'eol=lf', 'eol=crlf', 'eol=cr', 'eol=mixed', 'space=no', 'bom', 'keepalive', 'keepalive=2', 'event=completion', 'id', 'multiline',
    'writes=3', 'writes=bytes', 'cut=3', 'cut=data', 'cut=done', 'eol=crlf;cut=crlf', 'cut=utf8', 'cut=usage', 'cut=blank', 'cut=text', 'gap=1ms;cut=2',
    'tokens=2', 'tokens=burst:3', 'first=3', 'role=early',
    'fault=http:429:2', 'fault=http:500', 'fault=http:503', 'fault=http:400', 'fault=error:2', 'fault=stall:1:20ms',
    'fault=nodone', 'fault=nousage', 'fault=dupdone', 'fault=malformed:1', 'fault=slowheaders:20ms', 'fault=disconnect:2@0.5,nodone@0.5',
  ];

  it.each(SPECS)('%s', async (spec) => {
    const id = `exact-${spec}`;
    const { response, truth } = await post(id, `vllm;${spec}`, { max_tokens: 6, prompt: 'multi byte 你好 text', stream_options: { include_usage: true } });
    expect(truth).not.toBeNull();
    if (truth === null) return;
    const body = Buffer.from(truth.body);
    expect(Buffer.from(response.rawPayload).equals(body)).toBe(true);
    const json = JSON.parse((await server.app.inject({ method: 'GET', url: `/_truth/requests/${encodeURIComponent(id)}` })).body) as TruthRecordJson;
    expect(Buffer.concat(json.writes.map((w) => Buffer.from(w.base64, 'base64'))).equals(body)).toBe(true);
    expect(json.writes.every((w) => w.actualMs !== null && w.actualEpochMs !== null && w.lateMs !== null)).toBe(true);
    expect(truth.wire).toBe(spec === 'eol=lf' ? 'vllm' : formatWireSpec(parseWireSpec(spec)));
    if (spec.startsWith('fault=') && !spec.includes('@')) expect(truth.fault?.kind).toBe(spec.slice(6).split(/[:@,]/)[0]);
  });
});

describe('the truth’s wire of an answer sent as one body (audit 15-S5)', () => {
  it('names only what a whole body can feel: cuts, their gap and the whole-body faults', async () => {
    const spec = 'eol=crlf;bom;keepalive;multiline;event=x;id;space=no;tokens=3;writes=3;role=early;cut=2;gap=1ms;fault=malformed,stall:1:5ms';
    const oneBody = await post('one-body', spec, { stream: false });
    expect(oneBody.response.statusCode).toBe(200);
    expect(oneBody.truth?.wire).toBe(formatWireSpec(parseWireSpec('cut=2;gap=1ms;fault=stall:1:5ms')));
    // A stream feels all of it, and says so.
    const streamed = await post('streamed-body', spec);
    expect(streamed.truth?.wire).toBe(formatWireSpec(parseWireSpec(spec)));
    // Nothing a body can feel: vLLM's own wire.
    expect((await post('plain-body', 'eol=crlf;tokens=2', { stream: false })).truth?.wire).toBe('vllm');
  });
});

describe('names and headers the wire lookup must not misread (audit 16-W findings 1, 5)', () => {
  it('a served or adapter name that is a property of every object (constructor, toString, __proto__) is served, never a 500', async () => {
    const odd = buildServer({ seed: 3, ttftMs: 0, itlMs: 0, model: 'constructor', servedModelAliases: ['toString'], loraModules: [{ name: '__proto__', path: '/x', baseModelName: null }, { name: 'hasOwnProperty', path: '/y', baseModelName: null }] });
    await odd.app.ready();
    try {
      for (const model of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
        const response = await odd.app.inject({ method: 'POST', url: '/v1/completions', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ model, prompt: 'hi', max_tokens: 2, stream: true }) });
        expect(response.statusCode, model).toBe(200);
      }
    } finally {
      await odd.close();
    }
  });

  it('the header sent twice is two specs, layered in order (node would join them with ", ")', async () => {
    const port = await portOf();
    const { request } = await import('undici');
    const response = await request(`http://127.0.0.1:${port}/v1/completions`, {
      method: 'POST',
      headers: ['content-type', 'application/json', 'x-request-id', 'twice', 'x-benchtruth-wire', 'cut=2', 'x-benchtruth-wire', 'eol=crlf'],
      body: JSON.stringify({ prompt: 'hello there', max_tokens: 3, stream: true }),
    });
    await response.body.text();
    expect(response.statusCode).toBe(200);
    const truth = truthFromJson(JSON.parse((await server.app.inject({ method: 'GET', url: '/_truth/requests/twice' })).body) as TruthRecordJson);
    expect(parseWireSpec(truth.wire ?? '')).toMatchObject(parseWireSpec('eol=crlf;keepalive=2;cut=2'));
  });
});

describe('what the truth says of a wire spec (audit 16-W findings 6–9)', () => {
  it('a header sent as UTF-8 is read as UTF-8: gap=1µs is a duration', async () => {
    const port = await portOf();
    const { request } = await import('undici');
    // undici sends header bytes as given (Latin-1 per char): the UTF-8 bytes of "µ".
    const response = await request(`http://127.0.0.1:${port}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'micro', 'x-benchtruth-wire': Buffer.from('cut=2;gap=1µs', 'utf8').toString('latin1') },
      body: JSON.stringify({ prompt: 'hello there', max_tokens: 2, stream: true }),
    });
    await response.body.text();
    expect(response.statusCode).toBe(200);
  });

  it('an HTTP-error answer keeps only what a body feels in its wire, streamed or not; no Retry-After in the truth of a 500', async () => {
    const spec = 'fault=http:500;eol=crlf;tokens=3;multiline';
    const streamed = await post('err-stream', spec, { stream: true });
    const body = await post('err-body', spec, { stream: false });
    expect(streamed.response.statusCode).toBe(500);
    expect(streamed.truth?.wire).toBe(body.truth?.wire);
    expect(streamed.truth?.fault?.params).not.toHaveProperty('retryAfterS');
    expect((await post('err-429', 'fault=http:429:4')).truth?.fault?.params).toMatchObject({ retryAfterS: 4 });
  });

  it('keepalive=x names both of its forms', async () => {
    const { response } = await post('ka-x', 'keepalive=x');
    expect(response.statusCode).toBe(400);
    expect(JSON.parse(response.body).error.message).toMatch(/expected a whole number \(a comment before every Nth event\) or on\/off/);
  });
});
