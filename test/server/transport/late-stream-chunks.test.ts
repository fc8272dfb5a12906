/**
 * A stream that runs late hands its overdue writes to the socket in one send, but each planned
 * write stays its own HTTP/1.1 chunk: readers that take one chunk as one message (the latency
 * profile generator, for vLLM and JetStream's proxy alike) still see every event apart.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TruthRecordJson } from '../../../contracts/truth.ts';
import { startServer, type RunningServer } from '../../helpers/server.ts';

let running: RunningServer;
let port: number;

beforeAll(async () => {
  running = await startServer({ seed: 3, ttftMs: 20, itlMs: 1, model: 'fake-model' });
  port = Number(new URL(running.url).port);
});

afterAll(async () => {
  await running.close();
});

/** This test and the server share one thread: holding it makes every planned write overdue. */
function holdThread(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy on purpose
  }
}

/** Sends the request, holds the thread once the headers are in, returns the raw chunked body. */
function lateStream(path: string, id: string, body: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let held = false;
    socket.setTimeout(10_000, () => socket.destroy(new Error('no end within 10 s')));
    socket.on('error', reject);
    socket.on('data', (chunk) => {
      chunks.push(chunk);
      if (!held && Buffer.concat(chunks).includes('\r\n\r\n')) {
        held = true;
        holdThread(80);
      }
    });
    socket.on('end', () => {
      const bytes = Buffer.concat(chunks);
      resolve(bytes.subarray(bytes.indexOf('\r\n\r\n') + 4));
    });
    socket.write(
      `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nx-request-id: ${id}\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  });
}

/** The data of each chunk of an HTTP/1.1 chunked body, up to the last (empty) chunk. */
function chunkData(body: Buffer): Buffer[] {
  const chunks: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = body.indexOf('\r\n', at);
    const size = Number.parseInt(body.toString('latin1', at, lineEnd), 16);
    if (!(size >= 0)) throw new Error(`bad chunk size at ${at}`);
    if (size === 0) return chunks;
    chunks.push(body.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}

async function truthOf(id: string): Promise<TruthRecordJson> {
  const response = await running.server.app.inject({ method: 'GET', url: `/_truth/requests/${id}` });
  return JSON.parse(response.body) as TruthRecordJson;
}

describe('a late stream', () => {
  it.each([
    ['/v1/completions', '{"prompt":"hi","max_tokens":8,"stream":true}'],
    ['/generate', '{"prompt":"hi","max_tokens":8,"stream":true}'],
  ])('%s: every planned write is its own HTTP chunk, even when several leave in one send', async (path, body) => {
    const id = `late${path.replace(/\//g, '-')}`;
    const chunks = chunkData(await lateStream(path, id, body));
    const truth = await truthOf(id);
    const written = truth.writes.filter((w) => w.length > 0);
    expect(chunks.map((c) => c.toString('base64'))).toEqual(written.map((w) => w.base64));
    // The hold made them overdue together: some writes were handed over at one stamp.
    const stamps = written.map((w) => w.actualMs);
    expect(new Set(stamps).size).toBeLessThan(stamps.length);
  });
});
