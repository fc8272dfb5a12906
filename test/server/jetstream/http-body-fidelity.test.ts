/**
 * JetStream's HTTP surfaces read bodies as a stock FastAPI app does (audit 7-E): only a missing
 * or JSON media type is decoded, a JSON null is no body, 422 entries keep pydantic's key order
 * (compared as bytes), benchtruth's own refusals never show an input pydantic could not, and an
 * in-stream error ends the stream (no EOS step after it) while the client still calls it a
 * stream error.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jetstreamHttpApi, jetstreamProxyApi } from '../../../client/apis/jetstream-adapters.ts';
import { ResponseMeasurer } from '../../../client/measure/response-measurer.ts';
import type { ApiAdapter } from '../../../client/apis/api-adapter.ts';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';
import { fastapiReadsJson } from '../../../server/dialects/jetstream/fastapi-body.ts';
import { jsonObjectsOf, postJson } from '../../helpers/json-bodies.ts';

let server: BenchtruthServer;

beforeAll(async () => {
  server = buildServer({ seed: 7, ttftMs: 0, itlMs: 0, dialect: 'jetstream' });
  await server.app.ready();
});

afterAll(async () => {
  await server.close();
});

const send = (url: string, payload: string, headers: Record<string, string>) => server.app.inject({ method: 'POST', url, headers, payload });

const NATIVE = '{"max_tokens":2,"text_content":{"text":"hi"}}';
const PROXY = '{"prompt":"hi","max_tokens":2}';

describe('the media type (FastAPI decodes only JSON media types)', () => {
  it.each([
    ['/generate', PROXY, 'application/x-www-form-urlencoded'],
    ['/generate', PROXY, 'text/plain'],
    ['/v1/generate', NATIVE, 'text/plain; charset=utf-8'],
    ['/v1/generate', '{"max_tokens": ', 'text/plain'],
    // No valid media type at all: Python's email.message reads it as text/plain (FastAPI has no 415).
    ['/generate', PROXY, 'banana'],
    // Media types Fastify cannot parse (it would answer 415) are read as FastAPI reads them (audit 18-H4).
    ['/generate', PROXY, ';'],
    ['/v1/generate', NATIVE, 'application/'],
    ['/generate', PROXY, 'application/json, text/plain'],
  ])('%s with %s… as %s: 422, the model refusing the text itself', async (url, payload, contentType) => {
    const response = await send(url, payload, { 'content-type': contentType });
    expect(response.statusCode).toBe(422);
    expect(response.body).toBe(`{"detail":[{"type":"model_attributes_type","loc":["body"],"msg":"Input should be a valid dictionary or object to extract fields from","input":${JSON.stringify(payload)}}]}`);
  });

  it.each(['application/json', 'application/json; charset=utf-8', 'Application/JSON', 'application/vnd.api+json'])('decodes %s', async (contentType) => {
    expect((await send('/v1/generate', NATIVE, { 'content-type': contentType })).statusCode).toBe(200);
    expect((await send('/generate', PROXY, { 'content-type': contentType })).statusCode).toBe(200);
  });

  it('decodes a body sent without any content type', async () => {
    expect((await send('/generate', PROXY, {})).statusCode).toBe(200);
  });

  it('answers an empty body of any media type as no body', async () => {
    const response = await send('/generate', '', { 'content-type': 'text/plain' });
    expect(response.statusCode).toBe(422);
    expect(response.body).toBe('{"detail":[{"type":"missing","loc":["body"],"msg":"Field required","input":null}]}');
  });

  it('reads the header as Python’s email.message does', () => {
    expect(fastapiReadsJson(undefined)).toBe(true);
    expect(fastapiReadsJson('')).toBe(true);
    expect(fastapiReadsJson(' application/problem+json ;q=1')).toBe(true);
    expect(fastapiReadsJson('application/jsonp')).toBe(false);
    expect(fastapiReadsJson('text/json')).toBe(false);
    expect(fastapiReadsJson('application/json/x')).toBe(false);
  });

  it('keeps the vLLM routes lenient (documented): text/plain is read as JSON there', async () => {
    const vllm = buildServer({ seed: 7, ttftMs: 0, itlMs: 0 });
    await vllm.app.ready();
    try {
      for (const contentType of ['text/plain', '', ' ']) {
        // An empty header is no media type Fastify can match: it must not become a 415 (audit 10 Z2-2).
        const response = await vllm.app.inject({ method: 'POST', url: '/v1/completions', headers: { 'content-type': contentType }, payload: '{"prompt":"hi","max_tokens":2}' });
        expect(response.statusCode, JSON.stringify(contentType)).toBe(200);
      }
    } finally {
      await vllm.close();
    }
  });
});

describe('a JSON null body is no body ("Field required"), as FastAPI answers it', () => {
  it.each(['/generate', '/v1/generate'])('%s', async (url) => {
    const response = await send(url, 'null', { 'content-type': 'application/json' });
    expect(response.statusCode).toBe(422);
    expect(response.body).toBe('{"detail":[{"type":"missing","loc":["body"],"msg":"Field required","input":null}]}');
  });
});

describe('422 entries in pydantic’s key order (type, loc, msg, input), byte for byte', () => {
  it.each([
    ['/generate', { prompt: 'hi', max_tokens: 'x' }, '{"detail":[{"type":"int_parsing","loc":["body","max_tokens"],"msg":"Input should be a valid integer, unable to parse string as an integer","input":"x"}]}'],
    ['/generate', { prompt: 'hi', max_tokens: 2.5 }, '{"detail":[{"type":"int_from_float","loc":["body","max_tokens"],"msg":"Input should be a valid integer, got a number with a fractional part","input":2.5}]}'],
    ['/generate', { prompt: 'hi', stream: 'maybe' }, '{"detail":[{"type":"bool_parsing","loc":["body","stream"],"msg":"Input should be a valid boolean, unable to interpret input","input":"maybe"}]}'],
    ['/generate', { priority: [] }, '{"detail":[{"type":"int_type","loc":["body","priority"],"msg":"Input should be a valid integer","input":[]}]}'],
    ['/v1/generate', { max_tokens: 2, token_content: { token_ids: [1, 'a'] } }, '{"detail":[{"type":"int_parsing","loc":["body","token_content","token_ids",1],"msg":"Input should be a valid integer, unable to parse string as an integer","input":"a"}]}'],
    ['/v1/generate', { max_tokens: 2, text_content: { text: 'hi' }, metadata: { start_time: 'soon' } }, '{"detail":[{"type":"float_parsing","loc":["body","metadata","start_time"],"msg":"Input should be a valid number, unable to parse string as a number","input":"soon"}]}'],
  ])('%s %j', async (url, body, expected) => {
    const response = await postJson(server.app, url, body);
    expect(response.statusCode).toBe(422);
    expect(response.body).toBe(expected);
  });
});

describe('benchtruth’s own refusals of a step budget below 1 (documented)', () => {
  it('answers the proxy’s null max_tokens (0 to JetStream) with a value_error, never a bound check on null', async () => {
    const response = await postJson(server.app, '/generate', { prompt: 'hi', max_tokens: null });
    expect(response.statusCode).toBe(422);
    expect(response.body).toBe('{"detail":[{"type":"value_error","loc":["body","max_tokens"],"msg":"Value error, max_tokens must be at least 1 (null is 0 to JetStream)","input":null}]}');
  });

  it('answers an integer below 1 with the ge issue', async () => {
    const response = await postJson(server.app, '/v1/generate', { max_tokens: 0, text_content: { text: 'hi' } });
    expect(response.body).toBe('{"detail":[{"type":"greater_than_equal","loc":["body","max_tokens"],"msg":"Input should be greater than or equal to 1","input":0,"ctx":{"ge":1}}]}');
  });
});

function measured(api: ApiAdapter, body: string) {
  const measurer = new ResponseMeasurer({ index: 0, requestId: 'r', stage: 0, warmup: false, scheduledMs: 0, startMs: 0, promptTokens: 1 }, { api, stream: true, tokenizerFallback: false });
  measurer.response(200);
  measurer.data(new TextEncoder().encode(body), 10);
  return measurer.end(20);
}

describe('an injected in-stream error ends the stream: no EOS step follows it', () => {
  it.each([
    ['/v1/generate', NATIVE, 'e3-native', '{\n  "detail": "Bad Request (benchtruth wire fault)"\n}', jetstreamHttpApi],
    ['/generate', '{"prompt":"hi","max_tokens":3,"stream":true}', 'e3-proxy', '{\n    "detail": "Bad Request (benchtruth wire fault)"\n}', jetstreamProxyApi],
  ])('%s', async (url, payload, id, errorObject, api) => {
    const response = await send(url, payload, { 'content-type': 'application/json', 'x-request-id': id, 'x-benchtruth-wire': 'fault=error:1' });
    expect(response.statusCode).toBe(200);
    const objects = jsonObjectsOf(response.body);
    expect(objects).toHaveLength(2);
    expect(objects[1]).toBe(errorObject);
    expect(response.body.endsWith(errorObject)).toBe(true);

    const truth = server.context.truth.get(id);
    expect(truth?.events.map((e) => e.kind)).toEqual(['content', 'error']);
    expect(truth?.end?.how).toBe('fault');
    // Events and writes cover the body exactly, in order.
    const last = truth?.events.at(-1);
    expect((last?.offset ?? 0) + (last?.length ?? 0)).toBe(Buffer.byteLength(response.body));
    expect(truth?.writes.reduce((sum, w) => sum + w.length, 0)).toBe(Buffer.byteLength(response.body));

    const record = measured(api, response.body);
    expect(record.failure?.kind).toBe('stream_error');
  });
});
