/**
 * vLLM 0.11 behaviours an audit found missing: SamplingParams' checks, the streamed error's
 * default, the API-key guard's prefix and scheme, chat's `request_id`, `suffix`, prompt ids out
 * of vocabulary, and /health's bare answer.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchtruthServer } from '../../../server/app.ts';
import { chunks, injectServer, postTo, sseData, type Json } from './vllm-inject.ts';

let server: BenchtruthServer;

beforeAll(async () => {
  server = await injectServer({ maxModelLen: 64, eosAfterTokens: 4 });
});

afterAll(async () => {
  await server.close();
});

const post = (url: string, body: unknown, headers: Record<string, string> = {}) => postTo(server, url, body, headers);
const errorOf = (body: string): Json => (JSON.parse(body) as { error: Json }).error;

const COMPLETION = { model: 'fake-model', prompt: 'hello there', max_tokens: 4 };
const CHAT = { model: 'fake-model', messages: [{ role: 'user', content: 'hello there' }], max_tokens: 4 };

describe('SamplingParams checks (400 BadRequestError, vLLM’s messages)', () => {
  const cases: Array<[Json, string]> = [
    [{ temperature: -1 }, 'temperature must be non-negative, got -1.0.'],
    [{ top_p: 2 }, 'top_p must be in (0, 1], got 2.0.'],
    [{ top_p: 0 }, 'top_p must be in (0, 1], got 0.0.'],
    [{ presence_penalty: 2.5 }, 'presence_penalty must be in [-2, 2], got 2.5.'],
    [{ frequency_penalty: -3 }, 'frequency_penalty must be in [-2, 2], got -3.0.'],
    [{ repetition_penalty: 0 }, 'repetition_penalty must be greater than zero, got 0.0.'],
    [{ min_p: 1.5 }, 'min_p must be in [0, 1], got 1.5.'],
    [{ top_k: -2 }, 'top_k must be 0 (disable), or at least 1, got -2.'],
    [{ min_tokens: -1 }, 'min_tokens must be greater than or equal to 0, got -1.'],
    [{ min_tokens: 5 }, 'min_tokens must be less than or equal to max_tokens=4, got 5.'],
    [{ temperature: 0, n: 2 }, 'n must be 1 when using greedy sampling, got 2.'],
  ];

  it.each(cases)('completions and chat refuse %j', async (extra, message) => {
    for (const [url, body] of [['/v1/completions', COMPLETION], ['/v1/chat/completions', CHAT]] as const) {
      const response = await post(url, { ...body, ...extra });
      expect(response.statusCode).toBe(400);
      expect(errorOf(response.body)).toEqual({ message, type: 'BadRequestError', param: null, code: 400 });
    }
  });

  it('accepts the edges vLLM accepts (top_k −1 and 0, top_p 1, penalties ±2, min_tokens = max_tokens, greedy n=1)', async () => {
    const fine = { top_k: -1, top_p: 1, presence_penalty: -2, frequency_penalty: 2, repetition_penalty: 1.2, min_p: 1, min_tokens: 4, temperature: 0, seed: 3 };
    expect((await post('/v1/completions', { ...COMPLETION, ...fine })).statusCode).toBe(200);
    expect((await post('/v1/chat/completions', { ...CHAT, ...fine, top_k: 0 })).statusCode).toBe(200);
  });

  it('compares min_tokens with the room left in the context when the request sets no limit', async () => {
    const chat = await post('/v1/chat/completions', { ...CHAT, max_tokens: undefined, min_tokens: 100 });
    expect(errorOf(chat.body).message).toBe('min_tokens must be less than or equal to max_tokens=62, got 100.');
  });

  it('wrong types are pydantic errors (type "Bad Request"), reported before the model and sampling checks', async () => {
    const response = await post('/v1/completions', { ...COMPLETION, model: 'no-such-model', temperature: 'hot', seed: 'abc', top_p: 5 });
    expect(response.statusCode).toBe(400);
    const error = errorOf(response.body);
    expect(error.type).toBe('Bad Request');
    expect(error.message).toContain("{'type': 'float_parsing', 'loc': ('body', 'temperature'), 'msg': 'Input should be a valid number, unable to parse string as a number', 'input': 'hot'}");
    expect(error.message).toContain("{'type': 'int_parsing', 'loc': ('body', 'seed'), 'msg': 'Input should be a valid integer, unable to parse string as an integer', 'input': 'abc'}");
    const chat = await post('/v1/chat/completions', { ...CHAT, top_p: [1] });
    expect(errorOf(chat.body).message).toContain("{'type': 'float_type', 'loc': ('body', 'top_p'), 'msg': 'Input should be a valid number', 'input': [1]}");
    // Lax coercion: a numeric string is a valid float.
    expect((await post('/v1/completions', { ...COMPLETION, temperature: '0.5' })).statusCode).toBe(200);
  });

  it('the model check comes before the sampling checks', async () => {
    const response = await post('/v1/completions', { ...COMPLETION, model: 'no-such-model', temperature: -1 });
    expect(response.statusCode).toBe(404);
  });
});

describe('error after the 200 (wire fault `error`)', () => {
  it('defaults to vLLM 0.11’s BadRequestError / 400; an explicit code still wins', async () => {
    const stream = { ...COMPLETION, stream: true };
    const byDefault = await post('/v1/completions', stream, { 'x-benchtruth-wire': 'fault=error:1' });
    expect(byDefault.statusCode).toBe(200);
    const data = sseData(byDefault.body);
    expect(data.at(-1)).toBe('[DONE]');
    expect(data.at(-2)).toMatch(/^\{"error": \{"message": ".*", "type": "BadRequestError", "param": null, "code": 400\}\}$/);
    const explicit = await post('/v1/completions', stream, { 'x-benchtruth-wire': 'fault=error:1:503' });
    expect(sseData(explicit.body).at(-2)).toContain('"code": 503}}');
  });
});

describe('API key (vLLM 0.11 AuthenticationMiddleware)', () => {
  let locked: BenchtruthServer;
  beforeAll(async () => {
    locked = await injectServer({ apiKey: 'sk-test' });
  });
  afterAll(async () => {
    await locked.close();
  });
  const getWith = (url: string, authorization?: string) =>
    locked.app.inject({ method: 'GET', url, headers: authorization === undefined ? {} : { authorization } });

  it('matches the scheme case-insensitively, the key exactly', async () => {
    expect((await getWith('/v1/models', 'Bearer sk-test')).statusCode).toBe(200);
    expect((await getWith('/v1/models', 'bearer sk-test')).statusCode).toBe(200);
    expect((await getWith('/v1/models', 'BEARER sk-test')).statusCode).toBe(200);
    expect((await getWith('/v1/models', 'Bearer SK-TEST')).statusCode).toBe(401);
    expect((await getWith('/v1/models', 'Basic sk-test')).statusCode).toBe(401);
    expect((await getWith('/v1/models', 'sk-test')).statusCode).toBe(401);
  });

  it('guards every path that starts with "/v1" as a string, nothing else', async () => {
    const refused = await getWith('/v1models');
    expect(refused.statusCode).toBe(401);
    expect(refused.body).toBe('{"error":"Unauthorized"}');
    expect((await getWith('/v1')).statusCode).toBe(401);
    expect((await getWith('/v1beta/x')).statusCode).toBe(401);
    expect((await getWith('/version')).statusCode).toBe(200);
  });
});

describe('chat `request_id`', () => {
  it('names the response chatcmpl-<request_id> without x-request-id, and its truth is found under that id', async () => {
    const response = await post('/v1/chat/completions', { ...CHAT, request_id: 'body-id-1' });
    expect(response.statusCode).toBe(200);
    expect((JSON.parse(response.body) as Json).id).toBe('chatcmpl-body-id-1');
    expect(response.headers['x-request-id']).toBe('body-id-1');
    const truth = await server.app.inject({ method: 'GET', url: '/_truth/requests/body-id-1' });
    expect(truth.statusCode).toBe(200);
  });

  it('the header wins over the body; streamed chunks carry the body id too', async () => {
    const both = await post('/v1/chat/completions', { ...CHAT, request_id: 'body-id-2' }, { 'x-request-id': 'header-id' });
    expect((JSON.parse(both.body) as Json).id).toBe('chatcmpl-header-id');
    const streamed = await post('/v1/chat/completions', { ...CHAT, stream: true, request_id: 'body-id-3' });
    expect(chunks(streamed.body).every((c) => c.id === 'chatcmpl-body-id-3')).toBe(true);
  });

  it('completions take the field too (serving_completion.py: _base_request_id(raw_request, request.request_id); review 23), and a non-string request_id is a type error', async () => {
    const completion = await post('/v1/completions', { ...COMPLETION, request_id: 'body-id-4' });
    expect((JSON.parse(completion.body) as Json).id).toBe('cmpl-body-id-4');
    expect(completion.headers['x-request-id']).toBe('body-id-4');
    const streamed = await post('/v1/completions', { ...COMPLETION, stream: true, request_id: 'body-id-5' });
    expect(chunks(streamed.body).every((c) => c.id === 'cmpl-body-id-5')).toBe(true);
    const both = await post('/v1/completions', { ...COMPLETION, request_id: 'body-id-6' }, { 'x-request-id': 'header-id-6' });
    expect((JSON.parse(both.body) as Json).id).toBe('cmpl-header-id-6');
    for (const route of ['/v1/chat/completions', '/v1/completions']) {
      const bad = await post(route, { ...(route === '/v1/completions' ? COMPLETION : CHAT), request_id: 5 });
      expect(bad.statusCode).toBe(400);
      expect(errorOf(bad.body).message).toContain("'loc': ('body', 'request_id')");
    }
  });
});

describe('`suffix` on /v1/completions', () => {
  it('is refused after the model check with vLLM’s message', async () => {
    const refused = await post('/v1/completions', { ...COMPLETION, suffix: 'tail' });
    expect(refused.statusCode).toBe(400);
    expect(errorOf(refused.body)).toEqual({ message: 'suffix is not currently supported', type: 'BadRequestError', param: null, code: 400 });
    expect((await post('/v1/completions', { ...COMPLETION, suffix: null })).statusCode).toBe(200);
    expect((await post('/v1/completions', { ...COMPLETION, model: 'other', suffix: 'tail' })).statusCode).toBe(404);
  });
});

describe('prompt token ids out of vocabulary', () => {
  it('non-streamed: 400 "Token id N is out of vocabulary" (the largest id)', async () => {
    const response = await post('/v1/completions', { model: 'fake-model', prompt: [5, 1000000000000, 7], max_tokens: 2 });
    expect(response.statusCode).toBe(400);
    expect(errorOf(response.body)).toEqual({ message: 'Token id 1000000000000 is out of vocabulary', type: 'BadRequestError', param: null, code: 400 });
    const batch = await post('/v1/completions', { model: 'fake-model', prompt: [[5], [99999999]], max_tokens: 2 });
    expect(errorOf(batch.body).message).toBe('Token id 99999999 is out of vocabulary');
  });

  it('streamed: the 200 is out, then one error event in Python spacing and [DONE]', async () => {
    const response = await post('/v1/completions', { model: 'fake-model', prompt: [1000000000000], max_tokens: 2, stream: true });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(response.body).toBe(
      'data: {"error": {"message": "Token id 1000000000000 is out of vocabulary", "type": "BadRequestError", "param": null, "code": 400}}\n\ndata: [DONE]\n\n',
    );
  });

  it('ids the tokenizer itself produces are accepted', async () => {
    const tokens = (JSON.parse((await post('/tokenize', { prompt: 'hello zyzzyva 🙂' })).body) as { tokens: number[] }).tokens;
    expect((await post('/v1/completions', { model: 'fake-model', prompt: tokens, max_tokens: 2 })).statusCode).toBe(200);
  });
});

describe('/health', () => {
  it('GET: 200 with content-length 0, no content-type, and uvicorn\'s server header', async () => {
    const response = await server.app.inject({ method: 'GET', url: '/health' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-length']).toBe('0');
    expect(response.headers['content-type']).toBeUndefined();
    expect(response.headers.server).toBe('uvicorn');
  });

  it('other methods, HEAD included, are 405 with allow: GET (FastAPI’s @get routes answer no HEAD)', async () => {
    for (const method of ['POST', 'PUT', 'HEAD'] as const) {
      const response = await server.app.inject({ method, url: '/health' });
      expect(response.statusCode).toBe(405);
      expect(response.headers.allow).toBe('GET');
      if (method !== 'HEAD') expect(response.body).toBe('{"detail":"Method Not Allowed"}');
    }
    for (const url of ['/v1/models', '/version']) expect((await server.app.inject({ method: 'HEAD', url })).statusCode).toBe(405);
  });
});
