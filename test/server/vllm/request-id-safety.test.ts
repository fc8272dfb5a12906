/**
 * Request ids as bytes on a real socket: a chat `request_id` that cannot be a header value never
 * reaches the header (percent-encoded instead) and never kills the server; a non-ASCII
 * x-request-id comes back byte for byte and its truth is found with the id the client sent;
 * long ids are looked up; the truth feed's `id:` line never carries a line break; HEAD on the
 * feed ends.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest } from '../../helpers/raw-http.ts';
import { startServer, type RunningServer } from '../../helpers/server.ts';

let running: RunningServer;
let port: number;

beforeAll(async () => {
  running = await startServer({ seed: 7, ttftMs: 0, itlMs: 0, model: 'fake-model' });
  port = Number(new URL(running.url).port);
});

afterAll(async () => {
  await running.close();
});

const chat = (extra: Record<string, unknown>) => JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 2, ...extra });
const post = (path: string, body: string, headers = '') => rawRequest(port, `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json${headers}`, body);
const truthOf = (pathSegment: string) => fetch(`${running.url}/_truth/requests/${pathSegment}`);

describe('a chat request_id that cannot be a header value', () => {
  it.each([
    ['a CJK character', '日'],
    ['a line feed', 'zz\nevent: fake'],
    ['a carriage return', 'a\rb'],
    ['a lone surrogate', '\ud800x'],
    ['leading space', ' padded'],
  ])('(%s) is percent-encoded in x-request-id, kept in the chatcmpl id, and its truth is found with the header', async (_name, id) => {
    for (const stream of [false, true]) {
      const response = await post('/v1/chat/completions', chat({ request_id: id, stream }));
      expect(response.status).toBe(200);
      const header = response.header('x-request-id')?.toString('latin1') ?? '';
      const kept = id.replace(/[\ud800-\udfff]/g, '\ufffd');
      expect(header).toBe(encodeURIComponent(kept));
      expect(response.body).toContain(JSON.stringify(`chatcmpl-${kept}`).slice(1, -1));
      const truth = await truthOf(header);
      expect(truth.status).toBe(200);
      expect(((await truth.json()) as { id: string }).id).toBe(kept);
    }
    // Still serving.
    expect((await fetch(`${running.url}/health`)).status).toBe(200);
  });

  it('a refused request with such an id gets its 400 in vLLM’s shape, not a 500', async () => {
    const response = await post('/v1/chat/completions', chat({ request_id: '日\n', max_tokens: -1 }));
    expect(response.status).toBe(400);
    expect(response.header('x-request-id')?.toString('latin1')).toBe('%E6%97%A5%0A');
    expect((JSON.parse(response.body) as { error: { type: string } }).error.type).toBe('BadRequestError');
  });

  it('and a sent x-request-id spelling its encoding are two ids: the echoes are alike, each record is found by its own id (README, audit 11-T-7)', async () => {
    const body = await post('/v1/chat/completions', chat({ request_id: '月' }));
    const sent = await post('/v1/chat/completions', chat({ max_tokens: 3 }), '\r\nx-request-id: %E6%9C%88');
    // No echo can tell them apart: a sent header id comes back byte for byte, as vLLM echoes it.
    expect(body.header('x-request-id')?.toString('latin1')).toBe('%E6%9C%88');
    expect(sent.header('x-request-id')?.toString('latin1')).toBe('%E6%9C%88');
    const pasted = (await (await truthOf('%E6%9C%88')).json()) as { id: string; tokens: unknown[] };
    expect([pasted.id, pasted.tokens.length]).toEqual(['月', 2]);
    const own = (await (await truthOf(encodeURIComponent('%E6%9C%88'))).json()) as { id: string; tokens: unknown[] };
    expect([own.id, own.tokens.length]).toEqual(['%E6%9C%88', 3]);
  });
});

describe('a non-ASCII x-request-id', () => {
  const utf8 = Buffer.from('utf-café', 'utf8');
  const latin1 = Buffer.from('lat-café', 'latin1');
  const withId = (id: Buffer) => Buffer.concat([Buffer.from('\r\nx-request-id: ', 'latin1'), id]);

  it('comes back byte for byte on a streamed, a non-streamed and a refused response, and on /health', async () => {
    for (const id of [utf8, latin1]) {
      for (const [path, body] of [
        ['/v1/completions', '{"prompt":"hi","max_tokens":2}'],
        ['/v1/completions', '{"prompt":"hi","max_tokens":2,"stream":true}'],
        ['/v1/completions', '{"prompt":"hi","max_tokens":-1}'],
      ] as const) {
        const head = Buffer.concat([Buffer.from(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json`, 'latin1'), withId(id)]);
        const response = await rawRequest(port, head, body);
        expect(response.header('x-request-id')?.equals(id), `${path} ${body}`).toBe(true);
      }
      const health = await rawRequest(port, Buffer.concat([Buffer.from('GET /health HTTP/1.1\r\nHost: x', 'latin1'), withId(id)]));
      expect(health.header('x-request-id')?.equals(id)).toBe(true);
    }
  });

  it('keeps vLLM’s cmpl- id (the header read as Latin-1, written as UTF-8) and finds its truth by the UTF-8 text the client sent', async () => {
    const head = Buffer.concat([Buffer.from('POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json', 'latin1'), withId(Buffer.from('ids-café', 'utf8'))]);
    const response = await rawRequest(port, head, '{"prompt":"hi","max_tokens":2}');
    expect((JSON.parse(response.body) as { id: string }).id).toBe('cmpl-ids-cafÃ©');
    expect((await truthOf(encodeURIComponent('ids-café'))).status).toBe(200);
    expect((await truthOf(encodeURIComponent('ids-cafÃ©'))).status).toBe(200);
    // A Latin-1 byte: the id is that character, percent-encoded as UTF-8.
    const latinHead = Buffer.concat([Buffer.from('POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json', 'latin1'), withId(Buffer.from('ids-é', 'latin1'))]);
    await rawRequest(port, latinHead, '{"prompt":"hi","max_tokens":2}');
    expect((await truthOf(encodeURIComponent('ids-é'))).status).toBe(200);
  });
});

describe('long ids', () => {
  it('an id as long as a header can carry has a truth record /_truth/requests/:id finds', async () => {
    for (const length of [101, 15_000]) {
      const id = `L${'x'.repeat(length - 1)}`;
      const response = await post('/v1/completions', '{"prompt":"hi","max_tokens":1}', `\r\nx-request-id: ${id}`);
      expect(response.status).toBe(200);
      const truth = await truthOf(id);
      expect(truth.status).toBe(200);
      expect(((await truth.json()) as { id: string }).id).toBe(id);
    }
  });
});

describe('/_truth/stream', () => {
  it('never writes a line break from an id into its id: line', async () => {
    const controller = new AbortController();
    const feed = await fetch(`${running.url}/_truth/stream`, { signal: controller.signal });
    const reader = (feed.body as ReadableStream<Uint8Array>).getReader();
    await reader.read(); // the opening comment: subscribed
    await post('/v1/chat/completions', chat({ request_id: 'feed\nevent: fake\ndata: injected', max_tokens: -1 }));
    let text = '';
    for (let reads = 0; reads < 50 && !text.includes('\n\n', text.indexOf('event: truth')); reads++) {
      const { value, done } = await reader.read();
      if (done) break;
      text += Buffer.from(value).toString('utf8');
    }
    controller.abort();
    expect(text).toContain('id: feed%0Aevent%3A%20fake%0Adata%3A%20injected\nevent: truth\n');
    expect(text).not.toMatch(/^event: fake$/m);
    expect(text).not.toMatch(/^data: injected$/m);
  });

  it('HEAD answers the headers and ends, so the connection serves the next request', async () => {
    const answered = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let received = '';
      socket.setTimeout(5000, () => socket.destroy(new Error('the HEAD held the connection')));
      socket.on('error', reject);
      socket.on('data', (chunk) => {
        received += chunk.toString('latin1');
        if ((received.match(/HTTP\/1\.1 /g) ?? []).length === 2 && received.endsWith('\r\n\r\n')) {
          socket.destroy();
          resolve(received);
        }
      });
      socket.write('HEAD /_truth/stream HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n');
    });
    const [head, health] = answered.split(/(?=HTTP\/1\.1 )/);
    expect(head).toMatch(/^HTTP\/1\.1 200 /);
    expect(head).toMatch(/content-type: text\/event-stream/i);
    expect(health).toMatch(/^HTTP\/1\.1 200 /);
  });
});

describe('a repeated x-request-id header (audit 13-Z4-6)', () => {
  it('is its first value, as Starlette reads it: for the id, the echoed header and the truth, and on a route that plans nothing', async () => {
    const twice = '\r\nx-request-id: first-id\r\nX-Request-Id: second-id';
    const response = await post('/v1/completions', JSON.stringify({ prompt: 'hi', max_tokens: 1 }), twice);
    expect(response.status).toBe(200);
    expect(response.header('x-request-id')?.toString('latin1')).toBe('first-id');
    expect(response.body).toContain('"cmpl-first-id"');
    expect((await truthOf('first-id')).status).toBe(200);
    const health = await rawRequest(port, `GET /health HTTP/1.1\r\nHost: x${twice}`, '');
    expect(health.header('x-request-id')?.toString('latin1')).toBe('first-id');
  });
});

describe('an HTTP/1.1 request without Host (audit 13-Z4-9)', () => {
  it('is served, as uvicorn with httptools serves it, not refused with a bare 400', async () => {
    const response = await rawRequest(port, 'POST /v1/completions HTTP/1.1\r\nContent-Type: application/json\r\nConnection: close', JSON.stringify({ prompt: 'hi', max_tokens: 1 }));
    expect(response.status).toBe(200);
    expect((JSON.parse(response.body) as { object: string }).object).toBe('text_completion');
    const slash = await rawRequest(port, 'GET /health/ HTTP/1.1\r\nConnection: close', '');
    expect(slash.status).toBe(307);
    expect(slash.header('location')?.toString('latin1')).toBe(`http://127.0.0.1:${port}/health`);
    // An absolute-form target (a proxy's) redirects by its path (audit 13-R20-4).
    const absolute = await rawRequest(port, `GET http://proxied.test/v1/models/ HTTP/1.1\r\nHost: proxied.test\r\nConnection: close`, '');
    expect(absolute.status).toBe(307);
    expect(absolute.header('location')?.toString('latin1')).toBe('http://proxied.test/v1/models');
  });
});
