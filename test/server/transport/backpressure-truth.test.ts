/**
 * A write is "handed to the socket" when the kernel takes it (DESIGN §3). A reader that does not
 * keep up fills the kernel's buffer; Node then holds what is written, and the truth must not
 * stamp those bytes as sent: they are stamped when they drain, or never, if the client leaves
 * first. A pipelined request's response waits behind the one ahead of it on the connection, and
 * is stamped when its bytes can leave (audit 17-W1, W2).
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realClock } from '../../../contracts/clock.ts';
import type { TruthRecord } from '../../../contracts/truth.ts';
import { endedRecord, rawCompletion } from '../../helpers/raw-completions.ts';
import { startServer, type RunningServer } from '../../helpers/server.ts';

let running: RunningServer;
let port: number;

beforeAll(async () => {
  running = await startServer({ seed: 9, ttftMs: 5, itlMs: 0.05 });
  port = Number(new URL(running.url).port);
});

afterAll(async () => {
  running.server.app.server.closeAllConnections();
  await running.close();
});

const request = rawCompletion;

function ended(id: string, withinMs = 15_000, server = running): Promise<TruthRecord> {
  return endedRecord(server.server, id, withinMs);
}

const open = (to = port): Promise<Socket> =>
  new Promise((resolve, reject) => {
    const socket = connect(to, '127.0.0.1', () => resolve(socket));
    socket.on('error', reject);
  });

describe('a reader that does not keep up', () => {
  it('leaves the bytes it never took unstamped, and the response ends client_aborted, not completed', async () => {
    const socket = await open();
    socket.pause();
    // About 20 MB of stream: more than the kernel's buffers on both ends hold.
    socket.write(request('bp-never', { max_tokens: 30_000, n: 2, ignore_eos: true, stream: true, stream_options: { include_usage: true, continuous_usage_stats: true } }));
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const live = running.server.context.truth.get('bp-never') as TruthRecord;
    expect(live.end).toBeNull();
    socket.destroy();
    const record = await ended('bp-never');
    expect(record.end?.how).toBe('client_aborted');
    const unsent = record.writes.filter((w) => w.actualMs === null).length;
    expect(unsent).toBeGreaterThan(record.writes.length / 4);
    // Stamped ones form a prefix: nothing after a write still waiting is stamped.
    const firstUnsent = record.writes.findIndex((w) => w.actualMs === null);
    expect(record.writes.slice(firstUnsent).every((w) => w.actualMs === null)).toBe(true);
  }, 20_000);

  it('stamps the held bytes when they drain: their lateness shows the pause', async () => {
    const socket = await open();
    socket.pause();
    let received = 0;
    socket.on('data', (chunk: Buffer) => (received += chunk.length));
    socket.write(request('bp-slow', { max_tokens: 30_000, n: 2, ignore_eos: true, stream: true, stream_options: { include_usage: true, continuous_usage_stats: true } }));
    // The whole stream is due within about 1.5 s (0.05 ms a token): paused twice as long.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const resumedAt = performance.now();
    socket.resume();
    const record = await ended('bp-slow');
    expect(record.end?.how).toBe('completed');
    // Handed to the kernel is not yet read: the last few MB may still be on their way.
    for (let i = 0; i < 250 && received <= record.body.byteLength; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    socket.destroy();
    expect(received).toBeGreaterThan(record.body.byteLength);
    expect(record.writes.every((w) => w.actualMs !== null)).toBe(true);
    // The last write left after the reader came back, not at its due time 1.5 s earlier.
    const last = record.writes.at(-1);
    expect(record.arrivalEpochMs + (last?.actualMs ?? 0)).toBeGreaterThanOrEqual(realClock.epochMs(resumedAt) - 5);
    expect((last?.actualMs ?? 0) - (last?.dueMs ?? 0)).toBeGreaterThan(1_000);
  }, 20_000);
});

/** A server of its own with `bytes` written on one connection: `check` runs, then both are closed. */
async function onOneConnection(itlMs: number, bytes: string, check: (paced: RunningServer, socket: Socket) => Promise<void>): Promise<void> {
  const paced = await startServer({ seed: 9, ttftMs: 5, itlMs });
  const socket = await open(Number(new URL(paced.url).port));
  socket.resume();
  socket.write(bytes);
  try {
    await check(paced, socket);
  } finally {
    socket.destroy();
    await paced.close();
  }
}

describe('a pipelined request', () => {
  it('whose connection is dropped before its turn ends, client_aborted, and frees its id and the running gauge (audit 17-R1)', async () => {
    const ahead = request('drop-a', { max_tokens: 200, ignore_eos: true, stream: true });
    const dropper = request('drop-b', { max_tokens: 20, stream: true }).replace('x-request-id: drop-b', 'x-request-id: drop-b\r\nx-benchtruth-wire: fault=disconnect:3');
    await onOneConnection(1, ahead + dropper + request('drop-c', { max_tokens: 5, stream: true }), async (paced) => {
      const c = await ended('drop-c', 15_000, paced);
      expect(c.end?.how).toBe('client_aborted');
      expect((await ended('drop-b', 15_000, paced)).end?.how).toBe('fault');
      expect(paced.server.context.truth.isLive('drop-c')).toBe(false);
      expect(paced.server.context.engine.state().running).toBe(0);
    });
  }, 20_000);

  it('is not taken in, nor its clock started, until the response ahead of it ends, as uvicorn reads it (review 22: it ran in the engine at once, then left in a burst)', async () => {
    await onOneConnection(5, request('wait-a', { max_tokens: 400, ignore_eos: true, stream: true }) + request('wait-b', { max_tokens: 20, ignore_eos: true, stream: true }), async (paced) => {
      // While A streams (2 s of it: checked as soon as its first write is out), B has no record
      // and the engine runs A alone.
      for (let i = 0; i < 1_500; i++) {
        const a = paced.server.context.truth.get('wait-a');
        if (a !== undefined && a.writes.some((w) => w.actualMs !== null)) break;
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      expect(paced.server.context.truth.get('wait-a')?.end).toBeNull();
      expect(paced.server.context.truth.get('wait-b')).toBeUndefined();
      expect(paced.server.context.engine.state().running).toBe(1);
      const a = await ended('wait-a', 15_000, paced);
      const b = await ended('wait-b', 15_000, paced);
      // B arrived once A had ended: its plan starts then, not at A's arrival.
      expect(b.arrivalEpochMs).toBeGreaterThanOrEqual(a.arrivalEpochMs + (a.end?.atMs ?? 0) - 1);
      expect(b.end?.how).toBe('completed');
    });
  }, 20_000);

  it('whose connection closes while it waits never reaches the engine nor /metrics, as uvicorn never starts it; its truth is client_aborted (diff review 22)', async () => {
    const pipelined = request('gone-a', { max_tokens: 200, ignore_eos: true, stream: true }) + request('gone-b', { max_tokens: 5, stream: true }) + request('gone-c', { max_tokens: 5 });
    await onOneConnection(5, pipelined, async (paced, socket) => {
      for (let i = 0; i < 1_500 && paced.server.context.truth.get('gone-a') === undefined; i++) await new Promise((resolve) => setTimeout(resolve, 2));
      socket.destroy();
      const [a, b, c] = [await ended('gone-a', 15_000, paced), await ended('gone-b', 15_000, paced), await ended('gone-c', 15_000, paced)];
      expect([a.end?.how, b.end?.how, c.end?.how]).toEqual(['client_aborted', 'client_aborted', 'client_aborted']);
      expect([b.status, c.status]).toEqual([499, 499]);
      const metrics = (await paced.server.app.inject({ method: 'GET', url: '/metrics' })).body;
      expect(metrics).toMatch(/^vllm:e2e_request_latency_seconds_count\{[^}]*\} 1$/m);
      expect(metrics).toMatch(/^vllm:request_success_total\{[^}]*finished_reason="abort"\} 1$/m);
    });
  }, 20_000);

  it('a request pipelined behind one the HTTP parser refuses keeps its own truth, not the parser’s 400 (diff review 22)', async () => {
    const badChunk = 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nx-request-id: bad-c\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"pro\r\nZZ\r\n';
    await onOneConnection(5, request('bad-a', { max_tokens: 100, ignore_eos: true, stream: true }) + request('bad-b', { model: 'no-such-model', max_tokens: 5 }) + badChunk, async (paced) => {
      const b = await ended('bad-b', 15_000, paced);
      const c = await ended('bad-c', 15_000, paced);
      expect([c.status, c.end?.how]).toEqual([400, 'completed']);
      expect(b.status).not.toBe(400);
      expect(b.end?.how).toBe('client_aborted');
      expect(b.writes[0]?.actualMs).toBeNull();
    });
  }, 20_000);

  it('many waiting behind one stream share one listener on their connection: no MaxListenersExceededWarning (noticed in session 22)', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning.name);
    process.on('warning', onWarning);
    const behind = Array.from({ length: 15 }, (_, i) => request(`many-${i}`, { max_tokens: 2, stream: true })).join('');
    try {
      await onOneConnection(5, request('many-a', { max_tokens: 60, ignore_eos: true, stream: true }) + behind, async (paced) => {
        for (let i = 0; i < 15; i++) expect((await ended(`many-${i}`, 15_000, paced)).end?.how).toBe('completed');
      });
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings).not.toContain('MaxListenersExceededWarning');
  }, 20_000);

  it('is stamped when its bytes can leave, after the response ahead of it ends', async () => {
    const paced = await startServer({ seed: 9, ttftMs: 5, itlMs: 5 });
    const socket = await open(Number(new URL(paced.url).port));
    socket.resume();
    // A lasts about 300 ms (60 tokens, 5 ms apart); B is due almost at once but must wait.
    socket.write(request('pipe-a', { max_tokens: 60, ignore_eos: true, stream: true }) + request('pipe-b', { max_tokens: 2, stream: true }));
    const a = await ended('pipe-a', 15_000, paced);
    const b = await ended('pipe-b', 15_000, paced);
    socket.destroy();
    await paced.close();
    expect(a.end?.how).toBe('completed');
    expect(b.end?.how).toBe('completed');
    const aEnd = a.arrivalEpochMs + (a.end?.atMs ?? 0);
    const bFirst = b.arrivalEpochMs + (b.headersMs ?? 0);
    expect(bFirst).toBeGreaterThanOrEqual(aEnd - 1);
    expect(b.writes.every((w) => b.arrivalEpochMs + (w.actualMs ?? 0) >= aEnd - 1)).toBe(true);
  }, 20_000);
});
