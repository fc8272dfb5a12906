/**
 * The API-key guard on the path the router routes (percent-decoded, absolute-form targets
 * stripped), wrong methods — OPTIONS and TRACE included — answered 405 as FastAPI does, and a
 * CORS preflight answered 200 as vLLM's default CORSMiddleware does, which also marks every
 * other cross-origin answer (streams included) readable by a browser.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodedPath } from '../../../server/routes/vllm-auth.ts';
import { rawRequest } from '../../helpers/raw-http.ts';
import { startServer, type RunningServer } from '../../helpers/server.ts';

let locked: RunningServer;
let port: number;

beforeAll(async () => {
  locked = await startServer({ seed: 7, ttftMs: 0, itlMs: 0, model: 'fake-model', apiKey: 'sk-test' });
  port = Number(new URL(locked.url).port);
});

afterAll(async () => {
  await locked.close();
});

const BODY = '{"prompt":"hi","max_tokens":1}';
const postTarget = (target: string, auth = '') => rawRequest(port, `POST ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json${auth}`, BODY);

describe('--api-key on the routed path', () => {
  it.each(['/%761/completions', '/v%31/completions', '/%76%31/chat/completions', `http://127.0.0.1/v1/completions`, `HTTP://127.0.0.1:1/v%31/completions?x=1`])(
    '%s without the key is 401',
    async (target) => {
      const response = await postTarget(target);
      expect(response.status).toBe(401);
      expect(response.body).toBe('{"error":"Unauthorized"}');
    },
  );

  it('a 401 on a generation route has its truth record under the id it carried, as every refusal there (audit 11-T2)', async () => {
    const response = await fetch(`${locked.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'no-key' }, body: BODY });
    expect(response.status).toBe(401);
    expect(response.headers.get('x-request-id')).toBe('no-key');
    await response.text();
    const truth = await fetch(`${locked.url}/_truth/requests/no-key`);
    expect(truth.status).toBe(200);
    const record = (await truth.json()) as { status: number; endpoint: string; end: { how: string } | null; writes: Array<{ length: number }> };
    expect(record).toMatchObject({ status: 401, endpoint: '/v1/completions', end: { how: 'completed' } });
    expect(record.writes).toEqual([expect.objectContaining({ length: '{"error":"Unauthorized"}'.length })]);
  });

  it('the same targets with the key reach the route', async () => {
    expect((await postTarget('/%761/completions', '\r\nAuthorization: Bearer sk-test')).status).toBe(200);
    expect((await postTarget('http://127.0.0.1/v1/completions', '\r\nAuthorization: Bearer sk-test')).status).toBe(200);
  });

  it('an encoded slash is a slash, as uvicorn unquotes it: guarded and served (review 22: a 404)', async () => {
    for (const target of ['/v1%2Fcompletions', '/v1%2fcompletions?x=%2F', 'http://127.0.0.1/v1%2Fcompletions', 'HTTP://127.0.0.1:9/v1%2fcompletions?a=%2F']) {
      expect((await postTarget(target)).status).toBe(401);
      expect((await postTarget(target, '\r\nAuthorization: Bearer sk-test')).status).toBe(200);
    }
    // Under /_truth/ an encoded slash stays part of the id.
    const slashed = await rawRequest(port, `POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAuthorization: Bearer sk-test\r\nx-request-id: a/b`, BODY);
    expect(slashed.status).toBe(200);
    expect((await fetch(`${locked.url}/_truth/requests/a%2Fb`)).status).toBe(200);
  });

  it('an Expect other than 100-continue is served, as uvicorn serves it (review 22: Node’s bare 417)', async () => {
    const response = await postTarget('/v1/completions', '\r\nAuthorization: Bearer sk-test\r\nExpect: something-else\r\nx-request-id: odd-expect');
    expect(response.status).toBe(200);
    expect(response.header('x-request-id')?.toString()).toBe('odd-expect');
    expect((await fetch(`${locked.url}/_truth/requests/odd-expect`)).status).toBe(200);
  });

  it('decodes as Python’s unquote: UTF-8 runs, replacement for bad bytes, a stray % kept', () => {
    expect(decodedPath('/%76%31/x?y=%76')).toBe('/v1/x');
    expect(decodedPath('/caf%C3%A9')).toBe('/café');
    expect(decodedPath('/v1/%E9')).toBe('/v1/\ufffd');
    expect(decodedPath('/v1/100%')).toBe('/v1/100%');
    expect(decodedPath('https://host:8000/v1/models')).toBe('/v1/models');
  });
});

describe('wrong methods and CORS preflights', () => {
  it('OPTIONS (no preflight) and TRACE on a known route are 405 with allow, as FastAPI answers', async () => {
    // The key check skips OPTIONS only (vLLM's middleware): TRACE without the key is refused first.
    expect((await rawRequest(port, 'TRACE /v1/completions HTTP/1.1\r\nHost: x')).status).toBe(401);
    expect((await rawRequest(port, 'OPTIONS /v1/completions HTTP/1.1\r\nHost: x')).status).toBe(405);
    for (const [method, path, allow] of [
      ['OPTIONS', '/v1/completions', 'POST'],
      ['TRACE', '/v1/completions', 'POST'],
      ['OPTIONS', '/v1/models', 'GET'],
      ['TRACE', '/health', 'GET'],
    ] as const) {
      const response = await rawRequest(port, `${method} ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-test`);
      expect(response.status, `${method} ${path}`).toBe(405);
      expect(response.header('allow')?.toString()).toBe(allow);
      expect(response.body).toBe('{"detail":"Method Not Allowed"}');
    }
  });

  it('a wrong method is 405 before the body is read: a body that does not decode changes nothing', async () => {
    const auth = '\r\nAuthorization: Bearer sk-test\r\nContent-Type: application/json';
    for (const [method, path, body] of [
      ['PUT', '/v1/completions', '{"prompt": '],
      ['GET', '/v1/chat/completions', '{not json'],
      ['POST', '/v1/models', '{"a":'],
      ['PATCH', '/v1/completions', 'x'.repeat(64)],
    ] as const) {
      const response = await rawRequest(port, `${method} ${path} HTTP/1.1\r\nHost: x${auth}`, body);
      expect(response.status, `${method} ${path}`).toBe(405);
      expect(response.body).toBe('{"detail":"Method Not Allowed"}');
    }
  });

  it('a CORS preflight gets Starlette’s 200 OK on any path, before the key check', async () => {
    for (const path of ['/v1/completions', '/v1/chat/completions', '/nowhere']) {
      const response = await rawRequest(
        port,
        `OPTIONS ${path} HTTP/1.1\r\nHost: x\r\nOrigin: http://app.example\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type, authorization`,
      );
      expect(response.status).toBe(200);
      expect(response.body).toBe('OK');
      expect(response.header('access-control-allow-origin')?.toString()).toBe('*');
      expect(response.header('access-control-allow-methods')?.toString()).toBe('DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT');
      expect(response.header('access-control-allow-headers')?.toString()).toBe('content-type, authorization');
      expect(response.header('access-control-max-age')?.toString()).toBe('600');
    }
    const unknownMethod = await rawRequest(port, 'OPTIONS /v1/completions HTTP/1.1\r\nHost: x\r\nOrigin: http://a\r\nAccess-Control-Request-Method: FETCH');
    expect(unknownMethod.status).toBe(400);
    expect(unknownMethod.body).toBe('Disallowed CORS method');
  });
});

describe('simple cross-origin requests (vLLM’s CORSMiddleware)', () => {
  const auth = '\r\nAuthorization: Bearer sk-test';

  it('a streamed answer, a plain answer and a 404 carry access-control-allow-origin: * when Origin is sent', async () => {
    const streamed = await rawRequest(
      port,
      `POST /v1/completions HTTP/1.1\r\nHost: x\r\nOrigin: http://dash.example\r\nContent-Type: application/json${auth}`,
      '{"prompt":"hi","max_tokens":2,"stream":true}',
    );
    expect(streamed.status).toBe(200);
    expect(streamed.header('content-type')?.toString()).toBe('text/event-stream; charset=utf-8');
    expect(streamed.header('access-control-allow-origin')?.toString()).toBe('*');
    expect(streamed.body).toContain('data: [DONE]');
    for (const head of [`GET /v1/models HTTP/1.1\r\nHost: x\r\nOrigin: http://dash.example${auth}`, `GET /nowhere HTTP/1.1\r\nHost: x\r\nOrigin: http://dash.example`]) {
      expect((await rawRequest(port, head)).header('access-control-allow-origin')?.toString(), head).toBe('*');
    }
  });

  it('no Origin, no CORS header; a cookie gets the origin echoed with vary: Origin', async () => {
    expect((await rawRequest(port, `GET /v1/models HTTP/1.1\r\nHost: x${auth}`)).header('access-control-allow-origin')).toBeUndefined();
    const withCookie = await rawRequest(port, `GET /health HTTP/1.1\r\nHost: x\r\nOrigin: http://dash.example\r\nCookie: s=1`);
    expect(withCookie.header('access-control-allow-origin')?.toString()).toBe('http://dash.example');
    expect(withCookie.header('vary')?.toString()).toBe('Origin');
  });

  it('the key check sits outside CORS: its 401 carries no CORS header', async () => {
    const refused = await rawRequest(port, 'GET /v1/models HTTP/1.1\r\nHost: x\r\nOrigin: http://dash.example');
    expect(refused.status).toBe(401);
    expect(refused.header('access-control-allow-origin')).toBeUndefined();
  });

  it('JetStream’s paths install no CORS middleware', async () => {
    const response = await rawRequest(port, 'GET /healthcheck HTTP/1.1\r\nHost: x\r\nOrigin: http://dash.example');
    expect(response.status).toBe(200);
    expect(response.header('access-control-allow-origin')).toBeUndefined();
  });
});

describe('--api-key leaves JetStream’s own routes open (JetStream checks no key) (audit 17-J3)', () => {
  let jetstream: RunningServer;
  beforeAll(async () => {
    jetstream = await startServer({ seed: 7, ttftMs: 0, itlMs: 0, dialect: 'jetstream', apiKey: 'sk-test' });
  });
  afterAll(async () => {
    await jetstream.close();
  });

  it('/v1/generate and /v1/health answer without the key; the key still guards vLLM’s /v1 paths', async () => {
    const health = await fetch(`${jetstream.url}/v1/health`);
    expect(health.status).toBe(200);
    const generate = await fetch(`${jetstream.url}/v1/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"max_tokens":2,"text_content":{"text":"hi"}}' });
    expect(generate.status).toBe(200);
    await generate.text();
    expect((await fetch(`${jetstream.url}/v1/models`)).status).toBe(401);
  });
});
