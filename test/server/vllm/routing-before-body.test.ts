/**
 * Starlette routes before FastAPI reads a body, and reads it only for an endpoint that declares
 * one (audit 15-S1): a body that does not decode is no 400 on an unknown path, on /metrics, on
 * a trailing-slash redirect or on a known path asked with the wrong method.
 */
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { buildServer } from '../../../server/app.ts';

describe('a body is read only by the routes that take one', () => {
  const server = buildServer({ seed: 1 });
  afterAll(() => server.close());
  const post = (url: string, payload: string, method: 'POST' | 'PUT' = 'POST') =>
    server.app.inject({ method, url, headers: { 'content-type': 'application/json' }, payload });

  it.each([
    ['/nothing', '{bad', 404],
    ['/nothing', '', 404],
    ['/v1/completions/', '{bad', 307],
    ['/v1/completions/', '', 307],
    ['/metrics', '{bad', 200],
    ['/metrics/anything', '', 200],
    ['/v1/models', '{bad', 405],
    ['/health', '{bad', 405],
  ])('POST %s with body %j answers %i', async (url, payload, status) => {
    const response = await post(url, payload);
    expect(response.statusCode).toBe(status);
    if (status === 404) expect(JSON.parse(response.body)).toEqual({ detail: 'Not Found' });
  });

  it('a route that takes a body still refuses one that does not decode, or a missing one', async () => {
    expect((await post('/v1/completions', '{bad')).statusCode).toBe(400);
    const missing = await post('/v1/completions', '');
    expect(missing.statusCode).toBe(400);
    expect(missing.body).toContain('Field required');
    expect((await post('/tokenize', '{bad')).statusCode).toBe(400);
    expect((await post('/v1/load_lora_adapter', '{bad')).statusCode).toBe(400);
  });

  it('a chunked body that does not decode is json_invalid, as with a content-length; an empty one is missing (audit 15-R5)', async () => {
    const address = await server.listen(0);
    const { request } = await import('undici');
    for (const [chunks, expected] of [[['{b', 'ad'], 'json_invalid'], [[], 'missing']] as const) {
      const response = await request(`http://127.0.0.1:${address}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        // A stream body goes out chunked (no content-length).
        body: Readable.from((function* () {
          for (const chunk of chunks) yield Buffer.from(chunk);
        })()),
      });
      expect(response.statusCode).toBe(400);
      expect(await response.body.text()).toContain(`'type': '${expected}'`);
    }
  });

  it('POST /ping ignores its body, as vLLM’s ping takes none', async () => {
    expect((await post('/ping', '{bad')).statusCode).toBe(200);
  });
});
