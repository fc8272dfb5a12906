/**
 * JetStream's `fault=malformed[:K]`: after K tokens the server sends the first half of a real
 * object and goes on with whole ones (server/wire/stream-faults.ts). The half object must not
 * swallow the rest of the stream: the client names the failure `malformed` (docs/scenarios.md),
 * not `truncated`, whatever the read cuts, and the decoder still finds every later object.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_ADAPTERS } from '../../../client/apis/index.ts';
import { JsonObjectDecoder, type JsonObjectText } from '../../../client/decode/json-object-decoder.ts';
import { ResponseMeasurer } from '../../../client/measure/response-measurer.ts';
import type { TruthRecord } from '../../../contracts/truth.ts';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';

const enc = new TextEncoder();
let server: BenchtruthServer;

beforeAll(async () => {
  server = buildServer({ dialect: 'jetstream', seed: 17, ttftMs: 0, itlMs: 0, multibyteRate: 0.3 });
  await server.app.ready();
});

afterAll(async () => {
  await server.close();
});

const SURFACES = [
  { name: 'native /v1/generate (pretty, cut inside a string)', api: 'jetstream-http', url: '/v1/generate', body: { max_tokens: 5, text_content: { text: 'x' } } },
  { name: 'proxy /generate stream (indent 4, cut after a comma)', api: 'jetstream-proxy', url: '/generate', body: { prompt: 'x', max_tokens: 5, stream: true } },
] as const;

async function faulted(url: string, body: object, id: string, k: number): Promise<TruthRecord> {
  const response = await server.app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/json', 'x-request-id': id, 'x-benchtruth-wire': `fault=malformed:${k}` },
    payload: JSON.stringify(body),
  });
  expect(response.statusCode).toBe(200);
  const record = server.context.truth.get(id);
  expect(record?.fault?.kind).toBe('malformed');
  return record as TruthRecord;
}

/** The body's events that are whole objects (everything but the half one). */
function wholeObjects(record: TruthRecord): string[] {
  const text = Buffer.from(record.body).toString('utf8');
  return record.events.filter((e) => e.kind !== 'error').map((e) => text.slice(e.offset, e.offset + e.length).trim());
}

describe.each(SURFACES)('fault=malformed on JetStream, $name', ({ api, url, body }) => {
  it.each([0, 2, 4])('after %i tokens: every later object is still found, the broken one counts as stray', async (k) => {
    const record = await faulted(url, body, `${api}-d-${k}`, k);
    const bytes = record.body;
    for (const step of [bytes.length, 7, 1]) {
      const objects: JsonObjectText[] = [];
      const decoder = new JsonObjectDecoder({ onObject: (o) => objects.push(o) });
      for (let at = 0; at < bytes.length; at += step) decoder.feed(bytes.subarray(at, at + step), at);
      const end = decoder.end();
      expect(objects.map((o) => o.text.trim())).toEqual(wholeObjects(record));
      expect(end.pendingBytes).toBe(0);
      expect(end.strayBytes).toBeGreaterThan(0);
    }
  });

  it.each([0, 3])('after %i tokens the client reports malformed, not truncated', async (k) => {
    const record = await faulted(url, body, `${api}-m-${k}`, k);
    for (const step of [record.body.length, 5, 1]) {
      const measurer = new ResponseMeasurer(
        { index: 0, requestId: record.id, stage: 0, warmup: false, scheduledMs: 0, startMs: 0, promptTokens: record.promptTokens },
        { api: API_ADAPTERS[api], stream: true, tokenizerFallback: true },
      );
      measurer.response(200);
      for (let at = 0; at < record.body.length; at += step) measurer.data(record.body.subarray(at, at + step), at);
      const result = measurer.end(record.body.length);
      expect(result.failure?.kind).toBe('malformed');
    }
  });
});

describe('JsonObjectDecoder resynchronises after a broken object', () => {
  it('a raw newline inside a string: resumes at the brace the string swallowed', () => {
    const objects: string[] = [];
    const decoder = new JsonObjectDecoder({ onObject: (o) => objects.push(o.text) });
    const body = '{"a": 1}{\n  "text": " ha{\n  "text": "b"\n}{"c": [1, {"d": 2}]}';
    // Cut so the swallowed brace sits in the carried bytes of an earlier read.
    const bytes = enc.encode(body);
    decoder.feed(bytes.subarray(0, 24), 0);
    decoder.feed(bytes.subarray(24), 1);
    expect(objects).toEqual(['{"a": 1}', '{\n  "text": "b"\n}', '{"c": [1, {"d": 2}]}']);
    expect(decoder.end()).toEqual({ pendingBytes: 0, strayBytes: '{\n  "text": " ha'.length });
  });

  it('an object opening where a key or a comma is due starts the next object', () => {
    for (const broken of ['{', '{"a": 1,', '{"a": 12', '{"a": "x"', '{"a": [1]', '{"a": [1 ']) {
      const objects: string[] = [];
      const decoder = new JsonObjectDecoder({ onObject: (o) => objects.push(o.text) });
      decoder.feed(enc.encode(`${broken}{"b": 2}`), 0);
      expect(objects).toEqual(['{"b": 2}']);
      expect(decoder.end()).toEqual({ pendingBytes: 0, strayBytes: broken.length });
    }
  });
});
