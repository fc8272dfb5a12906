/**
 * HTTP edges uvicorn and Starlette answer their own way (audit 18-H2…H5): a path with a bad
 * percent-escape is a 404 (uvicorn decodes leniently), not Fastify's 400; a request with more
 * than 1,000 headers keeps them all (httptools sets no count); a malformed Content-Type is read
 * as JSON under benchtruth's lenient reading, never Fastify's 415; a method Fastify does not know
 * by default gets the 405 of a known path.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest } from '../../helpers/raw-http.ts';
import { startServer, type RunningServer } from '../../helpers/server.ts';

let running: RunningServer;
let port: number;

beforeAll(async () => {
  running = await startServer({ seed: 4, ttftMs: 0, itlMs: 0 });
  port = Number(new URL(running.url).port);
});

afterAll(async () => {
  await running.close();
});

const completion = JSON.stringify({ prompt: 'hi', max_tokens: 1 });

describe('HTTP edges', () => {
  it.each(['/v1/completions%ZZ', '/%', '/v1/completions%', '/v1/models%2', '/_truth/requests/%ZZ'])('a bad percent-escape in %s is a 404 with the id echoed', async (path) => {
    const answer = await rawRequest(port, `POST ${path} HTTP/1.1\r\nHost: x\r\nx-request-id: esc-1`, '{}');
    expect(answer.status).toBe(404);
    expect(answer.body).toBe('{"detail":"Not Found"}');
    expect(answer.header('x-request-id')?.toString()).toBe('esc-1');
    expect(answer.header('server')?.toString()).toBe('uvicorn');
  });

  it('keeps headers past the 1,000th: the body and the id are read', async () => {
    let junk = '';
    for (let i = 0; i < 1_200; i++) junk += `x-junk-${i}: 1\r\n`;
    const answer = await rawRequest(port, `POST /v1/completions HTTP/1.1\r\nHost: x\r\n${junk}x-request-id: many-headers\r\nContent-Type: application/json`, completion);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body).id).toBe('cmpl-many-headers');
  });

  it.each([';', ';;;', '/', 'application/', 'application/json, text/plain', 'ÿ/ÿ', `a/${'b'.repeat(5_000)} x`])('reads a body under the malformed Content-Type %j as JSON', async (type) => {
    const answer = await rawRequest(port, Buffer.from(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}`, 'latin1'), completion);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body).object).toBe('text_completion');
  });

  it.each([
    ['PROPFIND', '/v1/completions', 'POST'],
    ['QUERY', '/v1/chat/completions', 'POST'],
    ['MKCOL', '/health', 'GET'],
    ['PURGE', '/v1/models', 'GET'],
  ])('%s on %s is a 405 naming %s', async (method, path, allowed) => {
    const answer = await rawRequest(port, `${method} ${path} HTTP/1.1\r\nHost: x`);
    expect(answer.status).toBe(405);
    expect(answer.header('allow')?.toString()).toBe(allowed);
    expect(answer.body).toBe('{"detail":"Method Not Allowed"}');
  });

  it('QUERY without a content type is routed as any method: /metrics, an unknown path, a known one', async () => {
    expect((await rawRequest(port, 'QUERY /metrics HTTP/1.1\r\nHost: x')).status).toBe(200);
    expect((await rawRequest(port, 'QUERY /nothing-here HTTP/1.1\r\nHost: x')).status).toBe(404);
    expect((await rawRequest(port, 'QUERY /v1/completions HTTP/1.1\r\nHost: x')).status).toBe(405);
  });

  it('a bad percent-escape still passes the CORS middleware, as every vLLM answer does', async () => {
    const simple = await rawRequest(port, 'GET /v1/%zz HTTP/1.1\r\nHost: x\r\nOrigin: http://a.example');
    expect(simple.status).toBe(404);
    expect(simple.header('access-control-allow-origin')?.toString()).toBe('*');
    const preflight = await rawRequest(port, 'OPTIONS /v1/%zz HTTP/1.1\r\nHost: x\r\nOrigin: http://a.example\r\nAccess-Control-Request-Method: POST');
    expect(preflight.status).toBe(200);
    expect(preflight.body).toBe('OK');
  });

  it('reads up to 20,000 headers; past that Node drops the rest', async () => {
    let junk = '';
    for (let i = 0; i < 19_990; i++) junk += `x-${i}: 1\r\n`;
    const answer = await rawRequest(port, `POST /v1/completions HTTP/1.1\r\nHost: x\r\n${junk}x-request-id: near-cap\r\nContent-Type: application/json`, completion);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body).id).toBe('cmpl-near-cap');
  });

  it('any method reads /metrics, as vLLM mounts it', async () => {
    const answer = await rawRequest(port, 'PROPFIND /metrics HTTP/1.1\r\nHost: x');
    expect(answer.status).toBe(200);
    expect(answer.body).toContain('vllm:');
  });
});
