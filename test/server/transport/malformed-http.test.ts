/**
 * Requests the HTTP parser refuses get uvicorn's answer (audit 10 Z2-6): a plain-text 400
 * "Invalid HTTP request received." and a closed connection, as vLLM's and JetStream's uvicorn
 * send it, never Fastify's JSON. A long head is served, as httptools sets no 16 KiB limit.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';

let server: BenchtruthServer;
let port: number;

beforeAll(async () => {
  server = buildServer({ seed: 1, ttftMs: 0, itlMs: 0 });
  await server.app.listen({ port: 0, host: '127.0.0.1' });
  port = (server.app.server.address() as { port: number }).port;
});

afterAll(async () => {
  await server.close();
});

/** Everything the server writes back before it closes (or 5 s pass). */
function exchange(raw: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(raw));
    let out = '';
    socket.on('data', (chunk: Buffer) => (out += chunk.toString('latin1')));
    const timer = setTimeout(() => socket.destroy(), 5_000);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(out);
    });
    socket.on('error', () => undefined);
  });
}

describe('a request the parser refuses', () => {
  it.each([
    ['an unknown method', 'FOO /health HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['a bad chunk size', 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n'],
    ['two different Content-Lengths', 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n{}'],
  ])('%s: 400 text/plain, connection closed', async (_name, raw) => {
    const answer = await exchange(raw);
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\ndate: [^\r]+\r\nserver: uvicorn\r\ncontent-type: text\/plain; charset=utf-8\r\ncontent-length: 30\r\nconnection: close\r\n\r\nInvalid HTTP request received\.$/);
  });

  it('a 20 KB header is served, not 431', async () => {
    const answer = await exchange(`GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Long: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
  });
});
