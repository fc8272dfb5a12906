/**
 * A server that never ends a line, an event or a body costs the client bounded memory: past
 * MAX_EVENT_BYTES (streamed) or MAX_BODY_BYTES (not) the request fails as malformed and its
 * connection is cut off, rather than growing until V8 throws — which left the transport reading
 * a settled request forever and the run never ending (review 24). A node:http server on
 * 127.0.0.1 writes 1 MiB pieces, each after the last one drained, and stops when the client
 * goes or after a bounded total.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realClock } from '../../../contracts/clock.ts';
import { completionsApi } from '../../../client/apis/completions.ts';
import { MAX_BODY_BYTES, MAX_EVENT_BYTES } from '../../../client/measure/response-measurer.ts';
import { sendAndMeasure } from '../../../client/send/http-sender.ts';

const PIECE = 1024 * 1024;

/** Bytes each path writes before giving up on the client (well past the bound it tests). */
const LIMITS: Record<string, number> = {
  '/endless-line': MAX_EVENT_BYTES + 16 * PIECE,
  '/endless-data-lines': MAX_EVENT_BYTES + 16 * PIECE,
  '/endless-body': MAX_BODY_BYTES + 16 * PIECE,
};

let server: Server;
let origin: string;
/** Per path: whether the client closed the connection before the server stopped writing. */
const cutOff = new Map<string, boolean>();
const agent = new Agent({ connections: 2 });

function writeForever(res: ServerResponse, path: string, piece: Buffer): void {
  let written = 0;
  let closed = false;
  res.on('close', () => {
    closed = true;
    cutOff.set(path, written < (LIMITS[path] ?? 0));
  });
  const next = (): void => {
    if (closed) return;
    if (written >= (LIMITS[path] ?? 0)) {
      res.end();
      return;
    }
    written += piece.length;
    if (res.write(piece)) setImmediate(next);
    else res.once('drain', next);
  };
  next();
}

beforeAll(async () => {
  const line = Buffer.alloc(PIECE, 0x61);
  const dataLines = Buffer.from(`${'data: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n'.repeat(PIECE / 64)}`);
  server = createServer((req, res) => {
    const path = req.url ?? '';
    req.resume();
    req.on('end', () => {
      if (path === '/endless-body') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"id":"x","choices":[{"text":"');
        writeForever(res, path, line);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (path === '/endless-line') res.write('data: ');
      writeForever(res, path, path === '/endless-line' ? line : dataLines);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await agent.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

async function send(path: string, stream: boolean) {
  return sendAndMeasure(
    agent,
    realClock,
    { origin, path, body: '{}', headers: { 'content-type': 'application/json' } },
    { index: 0, requestId: path, stage: 0, warmup: false, scheduledMs: 0, promptTokens: 1 },
    { api: completionsApi, stream, tokenizerFallback: false, timeoutMs: 60_000 },
  );
}

describe('responses that never end a line, an event or a body', () => {
  it.each([
    ['/endless-line', 'a line that never ends'],
    ['/endless-data-lines', 'data lines with no blank line between them'],
  ])('%s (%s): malformed at 64 MiB, and the connection is cut off', async (path) => {
    const record = await send(path, true);
    expect(record.failure?.kind).toBe('malformed');
    expect(record.failure?.message).toMatch(/^an event passed 64 MiB without its end, the most the client reads/);
    expect(record.metrics).toBeNull();
    for (let i = 0; i < 200 && !cutOff.has(path); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(cutOff.get(path)).toBe(true);
  });

  it('a non-streamed body that never ends: malformed at 256 MiB, and the connection is cut off', async () => {
    const record = await send('/endless-body', false);
    expect(record.failure).toEqual({ kind: 'malformed', message: 'the response body passed 256 MiB, the most the client reads' });
    for (let i = 0; i < 200 && !cutOff.has('/endless-body'); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(cutOff.get('/endless-body')).toBe(true);
  });
});
