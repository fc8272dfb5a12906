/**
 * A request that arrives on a kept-alive connection while the server is closing (audit 18-S3):
 * a 503 in the dialect's shape with its x-request-id and a truth record, then the connection
 * closes — never Fastify's bare 503 without either.
 */
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { buildServer } from '../../../server/app.ts';
import { endedRecord, rawCompletion } from '../../helpers/raw-completions.ts';

describe('a request arriving while the server closes', () => {
  it('gets a vLLM 503 with its id and a truth record', async () => {
    const server = buildServer({ seed: 5, ttftMs: 5, itlMs: 100 });
    const port = await server.listen(0);
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    // A stream of 8 tokens 100 ms apart keeps the connection busy while close() begins.
    socket.write(rawCompletion('ka-1', { max_tokens: 8, ignore_eos: true, stream: true }));
    for (let i = 0; i < 100 && !received.includes('data: '); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    const closed = server.close();
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.write(rawCompletion('ka-2', { max_tokens: 2, stream: false }));
    await closed;
    for (let i = 0; i < 100 && !socket.destroyed && !received.includes('ka-2'); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    socket.destroy();
    const second = received.slice(received.indexOf('HTTP/1.1', received.indexOf('[DONE]')));
    expect(second).toMatch(/^HTTP\/1\.1 503 /);
    expect(second.toLowerCase()).toContain('x-request-id: ka-2\r\n');
    expect(second.toLowerCase()).toContain('connection: close\r\n');
    expect(second).toContain('"type":"ServiceUnavailableError"');
    const record = await endedRecord(server, 'ka-2', 1_000);
    expect(record.status).toBe(503);
    expect((await endedRecord(server, 'ka-1', 1_000)).end?.how).toBe('completed');
  });
});

describe('the refusal while closing speaks the route’s dialect', () => {
  it('JetStream routes answer FastAPI’s {"detail": …} with the id', async () => {
    const server = buildServer({ seed: 5, ttftMs: 0, itlMs: 0, dialect: 'jetstream' });
    await server.app.ready();
    server.context.closing = true;
    try {
      const answer = await server.app.inject({ method: 'POST', url: '/generate', headers: { 'content-type': 'application/json', 'x-request-id': 'js-closing' }, payload: '{"prompt":"hi","max_tokens":2}' });
      expect(answer.statusCode).toBe(503);
      expect(answer.headers['x-request-id']).toBe('js-closing');
      expect(JSON.parse(answer.body)).toEqual({ detail: 'The server is shutting down; send the request again.' });
      // A supervisor still reads the server while it stops.
      for (const url of ['/metrics', '/v1/health', '/_truth/requests/js-closing']) expect((await server.app.inject({ method: 'GET', url })).statusCode, url).toBe(200);
    } finally {
      server.context.closing = false;
      await server.close();
    }
  });
});
