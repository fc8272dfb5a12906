/**
 * The isolated engine's KV-cache gauge books every sequence its own blocks, as vLLM (and the
 * batching engine) allocate them: n choices of a prompt hold n copies of it, each in whole blocks.
 */
import { describe, expect, it } from 'vitest';
import { buildServer } from '../../../server/app.ts';

describe('kv_cache_usage_perc under --scheduler isolated', () => {
  it.each([
    [1, { prompt: 'hello world', max_tokens: 10 }],
    [3, { prompt: 'hello world', max_tokens: 10, n: 3 }],
    [4, { prompt: ['a b', 'c d e'], max_tokens: 4, n: 2 }],
    // 2 + 15 tokens fill one block of 16: the last token is sampled, never fed back (review 20).
    [1, { prompt: [1, 2], max_tokens: 15 }],
  ] as const)('%i sequence(s), each in its own block while the request is in flight', async (sequences, body) => {
    const server = buildServer({ seed: 3, ttftMs: 60_000, itlMs: 1, blockSize: 16, kvCacheBlocks: 1000 });
    const port = await server.listen(0);
    const client = new AbortController();
    try {
      const pending = fetch(`http://127.0.0.1:${port}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...body, stream: true }), signal: client.signal }).catch(() => null);
      for (let i = 0; i < 400 && server.context.engine.state().running === 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
      expect(server.context.engine.state()).toMatchObject({ running: sequences, kvUsage: sequences / 1000 });
      client.abort();
      await pending;
      for (let i = 0; i < 400 && server.context.engine.state().running !== 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
      expect(server.context.engine.state()).toMatchObject({ running: 0, kvUsage: 0 });
    } finally {
      client.abort();
      // fetch keeps an aborted socket a few seconds: close it rather than wait.
      server.app.server.closeAllConnections();
      await server.close();
    }
  });
});
