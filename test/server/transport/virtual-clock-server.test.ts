/**
 * A server built on a VirtualClock waits for the test's clock, never for real time (README "In
 * process, for tests"): review 22 found a jump past every due time still waited ~4 s of real time
 * for a timer, and a clock held still spun a core.
 */
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../contracts/clock.ts';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';

const completion = (id: string) => ({
  method: 'POST' as const,
  url: '/v1/completions',
  headers: { 'content-type': 'application/json', 'x-request-id': id },
  payload: JSON.stringify({ model: '', prompt: 'hi', max_tokens: 3, stream: true }),
});

/** Real-time turns until `check` holds, at most `turns` of them (each one setImmediate). */
async function settle(check: () => boolean, turns = 2_000): Promise<boolean> {
  for (let i = 0; i < turns && !check(); i++) await new Promise((resolve) => setImmediate(resolve));
  return check();
}

/**
 * A server on a VirtualClock (a 60 s TTFT: waited for in real time, a test would time out) with
 * one streamed completion `id` begun: `play` moves the clock, then the server is closed.
 */
async function withOneStream(id: string, play: (clock: VirtualClock, server: BenchtruthServer, answer: Promise<{ statusCode: number; body: string }>) => Promise<void>): Promise<void> {
  const clock = new VirtualClock(0, 1_700_000_000_000);
  const server = buildServer({ seed: 3, ttftMs: 60_000, itlMs: 1_000 }, clock);
  try {
    const answer = server.app.inject(completion(id));
    expect(await settle(() => server.context.truth.get(id) !== undefined)).toBe(true);
    await play(clock, server, answer);
  } finally {
    await server.close();
  }
}

describe('buildServer with a VirtualClock', () => {
  it('a jump past every due time plays the whole stream at once, stamped at the new time', async () => {
    await withOneStream('jump', async (clock, server, answer) => {
      clock.set(100_000);
      const response = await answer;
      expect(response.statusCode).toBe(200);
      expect(response.body.endsWith('data: [DONE]\n\n')).toBe(true);
      const record = server.context.truth.get('jump');
      expect(record?.end?.how).toBe('completed');
      for (const write of record?.writes ?? []) expect(write.actualMs).toBe(100_000);
    });
  });

  it('stepped to each due time, every write leaves exactly when due', async () => {
    await withOneStream('steps', async (clock, server, answer) => {
      // Read through the store, as GET /_truth/requests/:id reads it: a live record's stamps settled.
      const writes = () => server.context.truth.get('steps')?.writes ?? [];
      const dues = [...new Set(writes().map((write) => write.dueMs))].sort((a, b) => a - b);
      expect(dues.length).toBeGreaterThanOrEqual(3);
      for (const due of dues) {
        clock.set(due);
        expect(await settle(() => writes().every((write) => write.dueMs > due || write.actualMs !== null))).toBe(true);
        // A held clock leaves the rest unsent: nothing is due before the next step.
        expect(writes().filter((write) => write.dueMs > due).every((write) => write.actualMs === null)).toBe(true);
      }
      expect((await answer).statusCode).toBe(200);
      for (const write of server.context.truth.get('steps')?.writes ?? []) expect(write.actualMs).toBe(write.dueMs);
    });
  });
});
