/**
 * Every refusal of a JetStream HTTP generation request has a truth record under the id its
 * answer carries, as vLLM's refusals and JetStream's gRPC refusals do (audit 7-W): a body the
 * model refuses, a bad wire header, a request too long for the context.
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
