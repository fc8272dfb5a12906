/**
 * Idle keep-alive as uvicorn (vLLM, JetStream's apps) keeps it: 5 s, advertised in the answer,
 * so a pooled client that outlives it meets the same closed socket it would meet there.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../helpers/server.ts';

let running: RunningServer;

beforeAll(async () => {
  running = await startServer({ seed: 1 });
});

afterAll(async () => {
  await running.close();
});

/** The response head of one keep-alive request (the socket stays open; it is closed here). */
function keptAliveHead(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.setTimeout(5000, () => socket.destroy(new Error('no answer within 5 s')));
    socket.on('error', reject);
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end >= 0) {
        socket.destroy();
        resolve(text.slice(0, end));
      }
    });
    socket.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
  });
}

describe('keep-alive', () => {
  it('holds an idle connection 5 s, as uvicorn does, and says so', async () => {
    const head = await keptAliveHead(Number(new URL(running.url).port));
    expect(`${head}\r\n`.toLowerCase()).toContain('\r\nkeep-alive: timeout=5\r\n');
    expect(running.server.app.server.keepAliveTimeout).toBe(5000);
  });
});
