/**
 * The sender hands the measurer what the response's head says (Location, Content-Type,
 * Content-Encoding) and words undici's bare "bad response" for an unsolicited 100 Continue.
 * A raw node:net server on 127.0.0.1 writes each answer byte for byte; every test sends one request.
 * Every request asks for JSON and no content coding (audit 10 Z1-5); a header the user gave wins.
 */
import { createServer as createHttpServer } from 'node:http';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realClock } from '../../../contracts/clock.ts';
import { completionsApi } from '../../../client/apis/completions.ts';
import { sendAndMeasure } from '../../../client/send/http-sender.ts';
import { basePath, defaultMetricsUrl, withDefaultHeaders } from '../../../client/run/http-request-sender.ts';
import type { RequestRecord } from '../../../client/record/request-record.ts';

const SSE = 'data: {"id":"c","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" a","logprobs":null,"finish_reason":"length","stop_reason":null}]}\n\ndata: [DONE]\n\n';

/** Raw answers by request path. */
const ANSWERS: Record<string, string> = {
  '/redirect': 'HTTP/1.1 307 Temporary Redirect\r\nlocation: http://127.0.0.1:1/v1/completions\r\ncontent-length: 0\r\n\r\n',
  '/continue': `HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: ${Buffer.byteLength(SSE)}\r\n\r\n${SSE}`,
  '/gzip': 'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: gzip\r\ncontent-length: 4\r\n\r\n\x1f\x8b\x08\x00',
  '/bad-chunk': 'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\nzz\r\ndata: x\r\n',
  '/both-lengths': `HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n${Buffer.byteLength(SSE).toString(16)}\r\n${SSE}\r\n0\r\n\r\n`,
  '/json-error': (() => {
    const body = '{"error":{"message":"rate limit exceeded","type":"RateLimitError","param":null,"code":429}}';
    return `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
  })(),
};

let server: Server;
let origin: string;
const agent = new Agent({ connections: 4 });

beforeAll(async () => {
  server = createServer((socket: Socket) => {
    let head = '';
    socket.on('data', (bytes) => {
      head += bytes.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      const path = /^POST (\S+)/.exec(head)?.[1] ?? '';
      const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
      if (head.length - end - 4 < length) return;
      head = '';
      socket.end(ANSWERS[path] ?? 'HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n', 'latin1');
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  origin = `http://127.0.0.1:${address.port}`;
});

afterAll(async () => {
  await agent.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function send(path: string, to = origin): Promise<RequestRecord> {
  return sendAndMeasure(
    agent,
    realClock,
    { origin: to, path, body: completionsApi.body({ model: 'm', prompt: 'p', maxTokens: 1, stream: true, usage: 'none' }), headers: { 'content-type': 'application/json' } },
    { index: 0, requestId: 'r', stage: 0, warmup: false, scheduledMs: 0, promptTokens: 1 },
    { api: completionsApi, stream: true, tokenizerFallback: false, timeoutMs: 10_000 },
  );
}

describe('the sender passes the response head on', () => {
  it('a redirect names its Location', async () => {
    expect((await send('/redirect')).failure).toEqual({ kind: 'http_307', message: '(Location: http://127.0.0.1:1/v1/completions)' });
  });

  it('a content-encoding the client never asked for is malformed', async () => {
    expect((await send('/gzip')).failure).toEqual({ kind: 'malformed', message: 'response has content-encoding "gzip", which the client cannot read (it asks for identity and decodes no content coding)' });
  });

  it('a 200 application/json error body to a stream request is a stream_error', async () => {
    expect((await send('/json-error')).failure).toEqual({ kind: 'stream_error', message: 'rate limit exceeded' });
  });

  it.each(['/bad-chunk', '/both-lengths'])('%s: bytes that are no HTTP/1.1 response are malformed, not a reset (audit 17-H2)', async (path) => {
    expect((await send(path)).failure?.kind).toBe('malformed');
  });

  it('an unsolicited 100 Continue (which undici cannot read) is said so', async () => {
    const record = await send('/continue');
    expect(record.failure?.kind).toBe('disconnected');
    expect(record.failure?.message).toBe('bad response: the server sent an unexpected interim response (100 Continue), which undici cannot read');
  });
});

describe('a connection that never reached a server (audit 16-C finding 2)', () => {
  it('https to a plain-HTTP server fails its TLS handshake: connect_error, in one line', async () => {
    // node:http answers the TLS ClientHello with a 400, which OpenSSL reads as a wrong version.
    const plain = createHttpServer((_req, res) => res.end());
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
    try {
      const record = await send('/v1/completions', `https://127.0.0.1:${(plain.address() as AddressInfo).port}`);
      expect(record.failure?.kind).toBe('connect_error');
      expect(record.failure?.message).toMatch(/ssl|tls|version/i);
      expect(record.failure?.message).not.toMatch(/\n/);
    } finally {
      plain.closeAllConnections();
      await new Promise<void>((resolve) => plain.close(() => resolve()));
    }
  });
});

describe('withDefaultHeaders', () => {
  it('asks for JSON bodies and identity coding', () => {
    expect(withDefaultHeaders({})).toEqual({ 'content-type': 'application/json', 'accept-encoding': 'identity' });
  });

  it("keeps the user's headers, in any letter case, instead of the defaults", () => {
    expect(withDefaultHeaders({ 'Accept-Encoding': 'gzip', Authorization: 'Bearer k' })).toEqual({ 'content-type': 'application/json', 'Accept-Encoding': 'gzip', Authorization: 'Bearer k' });
    expect(withDefaultHeaders({ 'Content-Type': 'application/json; charset=utf-8' })).toEqual({ 'accept-encoding': 'identity', 'Content-Type': 'application/json; charset=utf-8' });
  });
});

describe('basePath (audit 17-D6)', () => {
  it('keeps a gateway prefix, and reads an OpenAI-style base ending in /v1 without it', () => {
    expect(basePath(new URL('http://h:8000'), '/v1/completions')).toBe('');
    expect(basePath(new URL('http://h:8000/'), '/v1/completions')).toBe('');
    expect(basePath(new URL('http://h/gateway/llama/'), '/v1/chat/completions')).toBe('/gateway/llama');
    expect(basePath(new URL('http://h:8000/v1'), '/v1/completions')).toBe('');
    expect(basePath(new URL('http://h/gw/v1/'), '/v1/completions')).toBe('/gw');
    // JetStream's proxy path is /generate: a /v1 there is a prefix like any other.
    expect(basePath(new URL('http://h/v1'), '/generate')).toBe('/v1');
  });
});

describe('the default /metrics URL (review 21-scrape)', () => {
  it('keeps a gateway prefix the URL gives, and never goes under an OpenAI-style /v1', () => {
    expect(defaultMetricsUrl(new URL('http://127.0.0.1:8000'))).toBe('http://127.0.0.1:8000/metrics');
    expect(defaultMetricsUrl(new URL('http://127.0.0.1:8000/'))).toBe('http://127.0.0.1:8000/metrics');
    expect(defaultMetricsUrl(new URL('http://127.0.0.1:8000/prefix'))).toBe('http://127.0.0.1:8000/prefix/metrics');
    expect(defaultMetricsUrl(new URL('http://127.0.0.1:8000/prefix/'))).toBe('http://127.0.0.1:8000/prefix/metrics');
    expect(defaultMetricsUrl(new URL('http://127.0.0.1:8000/v1'))).toBe('http://127.0.0.1:8000/metrics');
    expect(defaultMetricsUrl(new URL('http://127.0.0.1:8000/gw/v1'))).toBe('http://127.0.0.1:8000/gw/metrics');
    // A path that starts with `//` stays a path on the same host (review 24: it became host "metrics").
    expect(defaultMetricsUrl(new URL('http://127.0.0.1:8000//'))).toBe('http://127.0.0.1:8000//metrics');
    expect(defaultMetricsUrl(new URL('http://127.0.0.1:8000//v1'))).toBe('http://127.0.0.1:8000//metrics');
  });
});
