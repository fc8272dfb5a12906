/**
 * A request whose body comes well after its head (review 21-clients): its clock starts once the
 * body is in, as vLLM's does, so its tokens keep their planned spacing instead of all falling due,
 * and leaving in one burst, while the body was still on its way.
 */
import { connect } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { buildServer } from '../../../server/app.ts';
import { endedRecord } from '../../helpers/raw-completions.ts';

const server = buildServer({ seed: 3, ttftMs: 20, itlMs: 40 });
afterAll(() => server.close());

describe('a slowly uploaded request body', () => {
  it('starts the request when the body is in: no token is due before it, none leaves in a burst', async () => {
    const port = await server.listen(0);
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    socket.on('data', () => {});
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    const json = JSON.stringify({ model: '', prompt: 'hi', max_tokens: 4, ignore_eos: true, stream: true });
    const head = `POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nx-request-id: slow-body\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n`;
    const headSentEpochMs = performance.timeOrigin + performance.now();
    socket.write(head + json.slice(0, 10));
    await new Promise((resolve) => setTimeout(resolve, 400));
    socket.write(json.slice(10));
    const record = await endedRecord(server, 'slow-body', 5_000);
    socket.destroy();
    expect(record.end?.how).toBe('completed');
    // Arrival is the body's, not the head's: the body left 400 ms after the head (a timer never
    // fires early by more than a millisecond), so this holds however busy the machine is.
    expect(record.arrivalEpochMs - headSentEpochMs).toBeGreaterThan(390);
    // So no write was due while the body was on its way: none is late by the upload's 400 ms
    // (a generous bound, far above the contract's tolerance, that a busy machine still meets).
    for (const write of record.writes) expect((write.actualMs ?? Infinity) - write.dueMs).toBeLessThan(300);
  });
});
