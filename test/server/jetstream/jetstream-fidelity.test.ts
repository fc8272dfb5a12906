/**
 * JetStream's surfaces held to the real projects' bytes and rules (ai-on-gke's http_server.py,
 * JetStream's api_server.py and protocol.py): a max_tokens no context can hold is refused on
 * every surface before anything is planned; the proxy's indent-4 JSON (its EOS chunk included)
 * and uuid4 chunk ids; ensure_ascii text; pydantic's defaults and lax values; the gRPC surface
 * under the wire policies.
 */
import { Metadata, status, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonObjectsOf, postJson } from '../../helpers/json-bodies.ts';
import { interpretDecodePayload, interpretProxyPayload } from '../../../client/apis/jetstream-payload.ts';
import { orchestratorClient } from '../../../client/send/grpc-sender.ts';
import { countTokens } from '../../../contracts/tokenizer.ts';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';
import { ensureAscii, pythonJsonDumps, pythonJsonString } from '../../../server/dialects/python-json-dumps.ts';

let server: BenchtruthServer;

beforeAll(async () => {
  server = buildServer({ seed: 31, ttftMs: 0, itlMs: 0, multibyteRate: 0.6, grpcPort: 0, dialect: 'jetstream' });
  await server.listen(0);
});

afterAll(async () => {
  await server.close();
});

const post = (url: string, body: unknown, headers: Record<string, string> = {}) => postJson(server.app, url, body, headers);

const objects = jsonObjectsOf;

const truthText = (id: string): string => server.context.truth.get(id)?.tokens.map((t) => t.text).join('') ?? '';
const isAscii = (bytes: Buffer): boolean => bytes.every((b) => b < 0x80);

interface DecodeOutcome {
  messages: Array<{ streamContent?: { samples: Array<{ text: string; tokenIds: number[] }> } }>;
  error: ServiceError | null;
}

function decode(request: object, metadata: Record<string, string> = {}): Promise<DecodeOutcome> {
  const client = orchestratorClient(`127.0.0.1:${server.jetstream.grpcPort}`);
  const meta = new Metadata();
  for (const [key, value] of Object.entries(metadata)) meta.set(key, value);
  return new Promise((resolve) => {
    const messages: DecodeOutcome['messages'] = [];
    const call = client.Decode(request, meta) as ClientReadableStream<DecodeOutcome['messages'][number]>;
    call.on('data', (m: DecodeOutcome['messages'][number]) => messages.push(m));
    call.on('error', (error: ServiceError) => (client.close(), resolve({ messages, error })));
    call.on('end', () => (client.close(), resolve({ messages, error: null })));
  });
}

describe('a max_tokens no context can hold', () => {
  // The refusal itself shows nothing was planned (planning 2^31 tokens would run the heap out or
  // hit the test timeout); no wall-clock bound, so a loaded machine cannot fail these.

  it.each([
    ['proxy, 1e12 (beyond int32)', '/generate', { prompt: 'hi', max_tokens: 1e12 }, 'less_than_equal'],
    ['proxy, 2^31 as a string', '/generate', { prompt: 'hi', max_tokens: String(2 ** 31) }, 'less_than_equal'],
    ['proxy, int32 max', '/generate', { prompt: 'hi', max_tokens: 2 ** 31 - 1, stream: true }, 'value_error'],
    ['native, 2^31', '/v1/generate', { max_tokens: 2 ** 31, text_content: { text: 'hi' } }, 'less_than_equal'],
    ['native, int32 max', '/v1/generate', { max_tokens: 2 ** 31 - 1, text_content: { text: 'hi' } }, 'value_error'],
    ['native, a token id beyond int32', '/v1/generate', { max_tokens: 2, token_content: { token_ids: [1, 2 ** 40] } }, 'less_than_equal'],
  ])('%s → 422 in FastAPI’s shape, at once', async (_name, url, body, type) => {
    const response = await post(url, body);
    expect(response.statusCode).toBe(422);
    expect(response.headers['content-type']).toBe('application/json');
    const detail = (JSON.parse(response.body) as { detail: Array<{ type: string; loc: unknown[] }> }).detail;
    expect(detail[0]?.type).toBe(type);
    expect(detail[0]?.loc.slice(0, 2)).toEqual(['body', url === '/v1/generate' && type === 'less_than_equal' && 'token_content' in body ? 'token_content' : 'max_tokens']);
  });

  it('says how far over the context the request is, on both HTTP surfaces alike', async () => {
    const response = await post('/generate', { prompt: 'hi', max_tokens: 40_000 });
    const limit = server.context.options.maxModelLen;
    expect(JSON.parse(response.body)).toEqual({
      detail: [{ type: 'value_error', loc: ['body', 'max_tokens'], msg: `Value error, prompt (${countTokens('hi')} tokens) + max_tokens (40000) exceeds the maximum length ${limit}`, input: 40000 }],
    });
  });

  it('gRPC: INVALID_ARGUMENT at once, and the server keeps serving every surface', async () => {
    const refused = await decode({ maxTokens: 2 ** 31 - 1, textContent: { text: 'hi' } });
    expect(refused.error?.code).toBe(status.INVALID_ARGUMENT);
    expect(refused.error?.details).toMatch(/exceeds the maximum length/);
    expect(refused.messages).toEqual([]);
    const served = await decode({ maxTokens: 3, textContent: { text: 'hi' } });
    expect(served.error).toBeNull();
    expect(served.messages).toHaveLength(4);
    expect((await post('/generate', { prompt: 'hi', max_tokens: 3 })).statusCode).toBe(200);
    expect((await post('/v1/generate', { max_tokens: 3, text_content: { text: 'hi' } })).statusCode).toBe(200);
  });
});

describe('the proxy’s bytes', () => {
  it('answers one body as json.dumps(..., indent=4), ASCII only', async () => {
    const response = await post('/generate', { prompt: 'Hello', max_tokens: 12 }, { 'x-request-id': 'fb-1' });
    expect(response.headers['content-type']).toBe('application/json');
    expect(response.body).toBe(`{\n    "response": ${pythonJsonString(truthText('fb-1'))}\n}`);
    expect(isAscii(response.rawPayload)).toBe(true);
    expect(interpretProxyPayload(response.body)?.text).toBe(truthText('fb-1'));
  });

  it('streams chunk ids shaped as uuid4().hex, ASCII text, and the EOS chunk last with empty text', async () => {
    const response = await post('/generate', { prompt: 'Hello', max_tokens: 16, stream: true }, { 'x-request-id': 'fs-1' });
    expect(isAscii(response.rawPayload)).toBe(true);
    const chunks = objects(response.body).map((t) => JSON.parse(t) as { id: string; text: string });
    expect(chunks).toHaveLength(17);
    for (const { id } of chunks) {
      const hex = id.slice('generate-'.length);
      expect(hex).toMatch(/^[0-9a-f]{32}$/);
      expect(hex[12]).toBe('4');
      expect('89ab').toContain(hex[16]);
    }
    expect(chunks.map((c) => c.text).join('')).toBe(truthText('fs-1'));
    expect(chunks[16]?.text).toBe('');
    expect(objects(response.body).map((t) => interpretProxyPayload(t)?.text).join('')).toBe(truthText('fs-1'));
  });

  it('GET /healthcheck and GET / → indent-4 JSON, application/json', async () => {
    const health = await server.app.inject({ method: 'GET', url: '/healthcheck' });
    expect(health.headers['content-type']).toBe('application/json');
    expect(health.body).toBe('{\n    "response": {\n        "is_live": true\n    }\n}');
    const root = await server.app.inject({ method: 'GET', url: '/' });
    expect(root.statusCode).toBe(200);
    expect(root.headers['content-type']).toBe('application/json');
    expect(root.body).toBe('{\n    "message": "HTTP Server for JetStream"\n}');
  });

  it('leaves GET / alone under --dialect vllm (vLLM has no root route)', async () => {
    const vllm = buildServer({ seed: 1 });
    await vllm.app.ready();
    try {
      expect((await vllm.app.inject({ method: 'GET', url: '/' })).statusCode).toBe(404);
    } finally {
      await vllm.close();
    }
  });
});

describe('ensure_ascii, as Python’s json.dumps and MessageToJson write text', () => {
  it('escapes everything beyond printable ASCII with lowercase hex, astral characters as surrogate pairs', () => {
    // What Python 3 prints for json.dumps('é😀\x7f\x01\n"\\').
    expect(pythonJsonString('é😀\u007f\u0001\n"\\')).toBe('"\\u00e9\\ud83d\\ude00\\u007f\\u0001\\n\\"\\\\"');
    expect(pythonJsonDumps({ a: '好', b: [] }, 4)).toBe('{\n    "a": "\\u597d",\n    "b": []\n}');
    expect(ensureAscii('{"plain": "text"}')).toBe('{"plain": "text"}');
  });

  it('native steps are ASCII and the client reads the same text back', async () => {
    const response = await post('/v1/generate', { max_tokens: 16, text_content: { text: 'Hello' } }, { 'x-request-id': 'fn-1' });
    expect(isAscii(response.rawPayload)).toBe(true);
    expect(response.body).toMatch(/\\u[0-9a-f]{4}/);
    expect(objects(response.body).map((t) => interpretDecodePayload(t)?.text).join('')).toBe(truthText('fn-1'));
  });

  it('cut=utf8 finds no multi-byte character in JetStream’s bytes and leaves the objects whole', async () => {
    const response = await post('/v1/generate', { max_tokens: 6, text_content: { text: 'Hello' } }, { 'x-request-id': 'fn-2', 'x-benchtruth-wire': 'cut=utf8' });
    expect(response.statusCode).toBe(200);
    const truth = server.context.truth.get('fn-2');
    expect(truth?.writes).toHaveLength(7);
    expect(objects(response.body).map((t) => interpretDecodePayload(t)?.text).join('')).toBe(truthText('fn-2'));
  });
});

describe('the proxy reads its body as pydantic does', () => {
  it('takes the defaults: prompt "This is an example prompt", max_tokens 100, stream false', async () => {
    const response = await post('/generate', {}, { 'x-request-id': 'pd-1' });
    expect(response.statusCode).toBe(200);
    const truth = server.context.truth.get('pd-1');
    expect(truth?.promptTokens).toBe(countTokens('This is an example prompt'));
    expect(truth?.tokens).toHaveLength(100);
    expect(truth?.stream).toBe(false);
  });

  it('reads a null prompt as the empty text (an unset proto field)', async () => {
    const response = await post('/generate', { prompt: null, max_tokens: 2 }, { 'x-request-id': 'pd-2' });
    expect(response.statusCode).toBe(200);
    expect(server.context.truth.get('pd-2')?.promptTokens).toBe(countTokens(''));
  });

  it.each([
    ['"true"', 'true', true],
    ['1', 1, true],
    ['"off"', 'off', false],
  ])('reads stream %s as a lax bool', async (_name, stream, streamed) => {
    const id = `pb-${String(stream)}`;
    const response = await post('/generate', { prompt: 'x', max_tokens: '3', stream }, { 'x-request-id': id });
    expect(response.statusCode).toBe(200);
    expect(server.context.truth.get(id)?.stream).toBe(streamed);
    expect(server.context.truth.get(id)?.tokens).toHaveLength(3);
  });

  it.each([
    ['stream "maybe"', { stream: 'maybe' }, { type: 'bool_parsing', loc: ['body', 'stream'], msg: 'Input should be a valid boolean, unable to interpret input', input: 'maybe' }],
    ['stream []', { stream: [] }, { type: 'bool_type', loc: ['body', 'stream'], msg: 'Input should be a valid boolean', input: [] }],
    ['prompt 7', { prompt: 7 }, { type: 'string_type', loc: ['body', 'prompt'], msg: 'Input should be a valid string', input: 7 }],
    ['max_tokens 2.5', { max_tokens: 2.5 }, { type: 'int_from_float', loc: ['body', 'max_tokens'], msg: 'Input should be a valid integer, got a number with a fractional part', input: 2.5 }],
    ['max_tokens null (proto 0)', { max_tokens: null }, { type: 'value_error', loc: ['body', 'max_tokens'], msg: 'Value error, max_tokens must be at least 1 (null is 0 to JetStream)', input: null }],
  ])('answers %s with 422 in FastAPI’s shape', async (_name, body, issue) => {
    const response = await post('/generate', body);
    expect(response.statusCode).toBe(422);
    expect(JSON.parse(response.body)).toEqual({ detail: [issue] });
  });
});

describe('native metadata', () => {
  it('answers metadata: {} with 422 missing start_time', async () => {
    const response = await post('/v1/generate', { max_tokens: 2, text_content: { text: 'x' }, metadata: {} });
    expect(response.statusCode).toBe(422);
    expect(JSON.parse(response.body)).toEqual({ detail: [{ type: 'missing', loc: ['body', 'metadata', 'start_time'], msg: 'Field required', input: {} }] });
  });

  it('reads a numeric string start_time as a lax float, and refuses one that is not a number', async () => {
    expect((await post('/v1/generate', { max_tokens: 2, text_content: { text: 'x' }, metadata: { start_time: '1.5' } })).statusCode).toBe(200);
    const refused = await post('/v1/generate', { max_tokens: 2, text_content: { text: 'x' }, metadata: { start_time: 'soon' } });
    expect(refused.statusCode).toBe(422);
    expect(JSON.parse(refused.body)).toEqual({
      detail: [{ type: 'float_parsing', loc: ['body', 'metadata', 'start_time'], msg: 'Input should be a valid number, unable to parse string as a number', input: 'soon' }],
    });
  });
});

describe('gRPC under the wire policies', () => {
  const grouped = (outcome: DecodeOutcome): number[] => outcome.messages.map((m) => m.streamContent?.samples[0]?.tokenIds.length ?? 0);

  it('takes the token grouping from the call’s x-benchtruth-wire metadata, and names it in the truth', async () => {
    const plain = await decode({ maxTokens: 24, textContent: { text: 'hi' } }, { 'x-request-id': 'g-1' });
    expect(grouped(plain).slice(0, -1).every((n) => n === 1)).toBe(true);
    const burst = await decode({ maxTokens: 24, textContent: { text: 'hi' } }, { 'x-request-id': 'g-2', 'x-benchtruth-wire': 'tokens=burst:3' });
    expect(burst.error).toBeNull();
    expect(Math.max(...grouped(burst))).toBeGreaterThan(1);
    expect(grouped(burst).reduce((a, b) => a + b, 0)).toBe(24);
    expect(server.context.truth.get('g-2')?.wire).toContain('tokens=burst:3');
  });

  it('records only what it applied: the grouping and the faults, never framing or cuts', async () => {
    const outcome = await decode({ maxTokens: 4, textContent: { text: 'hi' } }, { 'x-request-id': 'g-3', 'x-benchtruth-wire': 'tokens=2;fault=nodone;cut=utf8;eol=crlf' });
    expect(outcome.error).toBeNull();
    // Two steps of two tokens, and no EOS step (nodone).
    expect(grouped(outcome)).toEqual([2, 2]);
    const truth = server.context.truth.get('g-3');
    expect(truth?.wire).toBe('tokens=2;fault=nodone');
    expect(truth?.fault?.kind).toBe('nodone');
  });

  it('takes the server-wide policy (serve --wire)', async () => {
    const wired = buildServer({ seed: 5, ttftMs: 0, itlMs: 0, grpcPort: 0, wire: 'tokens=3' });
    await wired.listen(0);
    const client = orchestratorClient(`127.0.0.1:${wired.jetstream.grpcPort}`);
    try {
      const counts = await new Promise<number[]>((resolve, reject) => {
        const out: number[] = [];
        const call = client.Decode({ maxTokens: 9, textContent: { text: 'hi' } }, new Metadata()) as ClientReadableStream<DecodeOutcome['messages'][number]>;
        call.on('data', (m: DecodeOutcome['messages'][number]) => out.push(m.streamContent?.samples[0]?.tokenIds.length ?? 0));
        call.on('error', reject);
        call.on('end', () => resolve(out));
      });
      expect(counts).toEqual([3, 3, 3, 0]);
    } finally {
      client.close();
      await wired.close();
    }
  });

  it('answers a wire spec it cannot read with INVALID_ARGUMENT', async () => {
    const outcome = await decode({ maxTokens: 2, textContent: { text: 'hi' } }, { 'x-benchtruth-wire': 'cut=banana' });
    expect(outcome.error?.code).toBe(status.INVALID_ARGUMENT);
    expect(outcome.error?.details).toMatch(/^x-benchtruth-wire: /);
  });
});
