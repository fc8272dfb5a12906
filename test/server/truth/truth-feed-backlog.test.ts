/**
 * A `/_truth/stream` reader that stops reading is dropped once the server holds 32 MiB for it
 * (audit 10 Z10-1): the limit is in bytes, since one record's JSON is 15–110 KB and a limit in
 * records let one stalled reader hold gigabytes.
 */
import { connect } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';

const servers: BenchtruthServer[] = [];
afterAll(async () => {
  for (const s of servers) s.app.server.closeAllConnections();
  await Promise.all(servers.map((s) => s.close()));
});

describe('a truth feed whose reader stopped reading', () => {
  it('is closed once its backlog passes 32 MiB, long before 10,000 records', async () => {
    const server = buildServer({ seed: 1, ttftMs: 0, itlMs: 0 });
    servers.push(server);
    let unsubscribed = false;
    const subscribe = server.context.truth.subscribe.bind(server.context.truth);
    server.context.truth.subscribe = (listener) => {
      const off = subscribe(listener);
      return () => {
        unsubscribed = true;
        return off();
      };
    };
    const port = await server.listen(0);
    const reader = connect(port, '127.0.0.1', () => reader.write('GET /_truth/stream HTTP/1.1\r\nHost: x\r\n\r\n'));
    reader.pause();
    reader.on('error', () => undefined);
    await new Promise((resolve) => setTimeout(resolve, 200));
    let sent = 0;
    // Records of ~2,000 tokens: a few hundred KB of JSON each.
    while (!unsubscribed && sent < 1_000) {
      await server.app.inject({ method: 'POST', url: '/v1/completions', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ prompt: 'x', max_tokens: 2000, ignore_eos: true }) });
      sent++;
    }
    reader.destroy();
    expect(unsubscribed).toBe(true);
    expect(sent).toBeLessThan(1_000);
  }, 120_000);
});
