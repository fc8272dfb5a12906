/**
 * A client that resets its connection while the server's thread is busy (another request's
 * planning, a collection): the writes due when the thread is free fail on the reset socket.
 * They were never handed to the client, so they stay unstamped and the response ends
 * client_aborted, never completed (audit 18-H1).
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realClock } from '../../../contracts/clock.ts';
import { endedRecord, rawCompletion } from '../../helpers/raw-completions.ts';
import { startServer, type RunningServer } from '../../helpers/server.ts';

let running: RunningServer;
let port: number;

beforeAll(async () => {
  running = await startServer({ seed: 3, ttftMs: 5, itlMs: 40 });
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
    // the thread is free every remaining write is due (20 tokens × 40 ms, under the 1 s held).
    const resetAt = realClock.now();
    socket.resetAndDestroy();
    busy(1_000);
    const record = await endedRecord(running.server, id, 5_000);
    expect(record.end?.how).toBe('client_aborted');
    const stamped = record.writes.filter((w) => w.actualMs !== null);
    expect(stamped.length).toBeLessThan(record.writes.length);
    // What was stamped left before the reset; nothing after it.
    for (const write of stamped) expect(record.arrivalEpochMs + (write.actualMs as number)).toBeLessThanOrEqual(realClock.epochMs(resetAt) + 0.001);
    expect(received).toBeGreaterThan(0);
  });

  it.each([1, 2])('leaves a one-body answer unsent: no head, no write stamped (run %i)', async (run) => {
    const id = `rst-busy-body-${run}`;
    const socket: Socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    let received = 0;
    socket.on('data', (chunk: Buffer) => (received += chunk.length));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(rawCompletion(id, { max_tokens: 20, ignore_eos: true, stream: false }));
    // The body is due at about 765 ms: reset before, and keep the thread busy past it.
    await new Promise((resolve) => setTimeout(resolve, 40));
    socket.resetAndDestroy();
    busy(1_000);
    const record = await endedRecord(running.server, id, 5_000);
    expect(received).toBe(0);
    expect(record.end?.how).toBe('client_aborted');
    expect(record.headersMs).toBeNull();
    expect(record.writes.every((w) => w.actualMs === null)).toBe(true);
  });
});
