/**
 * Every refusal of a JetStream HTTP generation request has a truth record under the id its
 * answer carries, as vLLM's refusals and JetStream's gRPC refusals do (audit 7-W): a body the
 * model refuses, a bad wire header, a request too long for the context, and a body refused
 * before its route ran (JSON that does not decode, a media type FastAPI does not read as JSON).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';

let server: BenchtruthServer;

beforeAll(async () => {
  server = buildServer({ seed: 2, ttftMs: 0, itlMs: 0, maxModelLen: 64 });
  await server.app.ready();
});

afterAll(async () => {
  await server.close();
});

describe('JetStream HTTP refusals have truth', () => {
  it.each([
    ['/generate', { prompt: 'x', max_tokens: 'many' }, {}, 422],
    ['/v1/generate', { max_tokens: 2 }, {}, 422],
    ['/v1/generate', { max_tokens: 2, text_content: { text: 'x' } }, { 'x-benchtruth-wire': 'cut=banana' }, 400],
    ['/generate', { prompt: 'x', max_tokens: 1000 }, {}, 422],
  ])('%s %j %j → %d with a record', async (url, body, headers, status) => {
    const id = `refused-${url}-${status}-${JSON.stringify(body).length}`;
    const response = await server.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', 'x-request-id': id, ...headers }, payload: JSON.stringify(body) });
    expect(response.statusCode).toBe(status);
    expect(response.headers['x-request-id']).toBe(id);
    const truth = server.context.truth.get(id);
    expect(truth).toMatchObject({ id, dialect: 'jetstream', endpoint: url, status, tokens: [], fault: null, end: { how: 'completed' } });
    expect(Buffer.from(truth?.body ?? new Uint8Array()).toString()).toBe(response.body);
    expect(truth?.writes[0]?.actualMs).not.toBeNull();
  });
});

describe('a body refused before its route ran', () => {
  it.each([
    ['/v1/generate', 'application/json', '{"max_tokens": 2, "text_content": ', true],
    ['/generate', 'application/json', '{"prompt": "x",}', false],
    ['/v1/generate', 'text/plain', '{"max_tokens": 2, "text_content": {"text": "x"}}', true],
  ])('%s %s %j → 422 with its id, a record, and the connection kept', async (url, type, payload, stream) => {
    const id = `before-route-${url}-${type}-${payload.length}`;
    const response = await server.app.inject({ method: 'POST', url, headers: { 'content-type': type, 'x-request-id': id }, payload });
    expect(response.statusCode).toBe(422);
    expect(response.headers['x-request-id']).toBe(id);
    expect(response.headers.connection).not.toBe('close');
    const truth = server.context.truth.get(id);
    expect(truth).toMatchObject({ id, dialect: 'jetstream', endpoint: url, stream, status: 422, tokens: [], end: { how: 'completed' } });
    expect(Buffer.from(truth?.body ?? new Uint8Array()).toString()).toBe(response.body);
  });

  it('a health check refused for its method is not a generation: no record', async () => {
    const before = server.context.truth.size;
    const response = await server.app.inject({ method: 'POST', url: '/v1/health', headers: { 'content-type': 'application/json' }, payload: '{' });
    expect(response.statusCode).toBe(405);
    expect(server.context.truth.size).toBe(before);
  });
});
