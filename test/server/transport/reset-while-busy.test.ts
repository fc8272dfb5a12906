/**
 * A client that resets its connection while the server's thread is busy (another request's
 * planning, a collection): the writes due when the thread is free fail on the reset socket.
 * They were never handed to the client, so they stay unstamped and the response ends
 * client_aborted, never completed (audit 18-H1).
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endedRecord, rawCompletion } from '../../helpers/raw-completions.ts';
import { startServer, type RunningServer } from '../../helpers/server.ts';

let running: RunningServer;
let port: number;

beforeAll(async () => {
  running = await startServer({ seed: 3, ttftMs: 5, itlMs: 10 });
  port = Number(new URL(running.url).port);
});

afterAll(async () => {
  running.server.app.server.closeAllConnections();
  await running.close();
});

/** Holds this thread (the server's too: it runs in this process) for `ms`. */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('a connection reset while the server is busy', () => {
  it.each([1, 2, 3])('leaves the writes due after it unstamped and ends client_aborted (run %i)', async (run) => {
    const id = `rst-busy-${run}`;
    const socket: Socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    let received = 0;
    const firstBytes = new Promise<void>((resolve) => socket.on('data', (chunk: Buffer) => ((received += chunk.length), resolve())));
    socket.write(rawCompletion(id, { max_tokens: 20, ignore_eos: true, stream: true }));
    await firstBytes;
    await new Promise((resolve) => setTimeout(resolve, 15));
    // The reset reaches the server's kernel socket while its thread cannot see it; by the time
    // the thread is free every remaining write is due (20 tokens × 10 ms).
    socket.resetAndDestroy();
    busy(400);
    const record = await endedRecord(running.server, id, 5_000);
    expect(record.end?.how).toBe('client_aborted');
    const stamped = record.writes.filter((w) => w.actualMs !== null);
    // What was stamped left before the reset: at most what the client read, never the rest.
    expect(stamped.length).toBeLessThan(record.writes.length);
    const stampedBytes = stamped.reduce((sum, w) => sum + w.length, 0);
    expect(stampedBytes).toBeLessThanOrEqual(record.body.byteLength);
    expect(record.end?.atMs ?? 0).toBeGreaterThan(0);
    expect(received).toBeGreaterThan(0);
  });
});
