/**
 * JetStream's EOS sample comes from a decode step of its own, one step after the last token's
 * (token_utils.process_result_tokens), with the slot held for it (audit 9-Y3-2): under the
 * isolated scheduler the EOS step is due one inter-token gap after the last token; under the
 * batching scheduler the engine runs that step, and the stream still ends.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';

const servers: BenchtruthServer[] = [];
afterAll(async () => {
  for (const s of servers) s.app.server.closeAllConnections();
  await Promise.all(servers.map((s) => s.close()));
});

describe.each(['isolated', 'batching'] as const)('the EOS step (--scheduler %s)', (scheduler) => {
  it.each(['/v1/generate', '/generate'])('%s: due one decode step after the last token', async (path) => {
    const server = buildServer({ dialect: 'jetstream', scheduler, seed: 3, ttftMs: 20, itlMs: 10 });
    servers.push(server);
    const url = `http://127.0.0.1:${await server.listen(0)}`;
    const body = path === '/generate' ? { prompt: 'a b', max_tokens: 3, stream: true } : { max_tokens: 3, text_content: { text: 'a b' } };
    const response = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': `eos-${scheduler}` }, body: JSON.stringify(body) });
    expect(response.status).toBe(200);
    await response.text();
    let truth = server.context.truth.get(`eos-${scheduler}`);
    for (let i = 0; i < 200 && truth?.end == null; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      truth = server.context.truth.get(`eos-${scheduler}`);
    }
    expect(truth?.end?.how).toBe('completed');
    const done = truth?.events.find((e) => e.kind === 'done');
    const lastToken = truth?.tokens[truth.tokens.length - 1];
    expect(truth?.tokens).toHaveLength(3);
    expect(done).toBeDefined();
    expect(lastToken).toBeDefined();
    // One more step: at least the engine's step time later (10 ms, fixed; batching adds its own cost).
    expect((done?.dueMs as number) - (lastToken?.dueMs as number)).toBeGreaterThanOrEqual(10 - 1e-9);
  });
});
