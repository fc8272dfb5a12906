/**
 * A prompt the fake tokenizer counts as 0 tokens (chat's empty content or no messages,
 * JetStream's empty prompt) still gets its prefill step under --scheduler batching: with nothing
 * pending no step scheduled it, and the request hung with its socket open (audit 16-C finding 1).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';

let vllm: BenchtruthServer;
let jetstream: BenchtruthServer;

beforeAll(async () => {
  vllm = buildServer({ scheduler: 'batching', seed: 3, ttftMs: 2, itlMs: 1 });
  jetstream = buildServer({ scheduler: 'batching', seed: 3, ttftMs: 2, itlMs: 1, dialect: 'jetstream' });
  await Promise.all([vllm.app.ready(), jetstream.app.ready()]);
});

afterAll(async () => {
  await Promise.all([vllm.close(), jetstream.close()]);
});

const inject = (server: BenchtruthServer, url: string, body: unknown) =>
  server.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) });

describe('a zero-token prompt under --scheduler batching', () => {
  it.each([
    ['empty content', { messages: [{ role: 'user', content: '' }] }],
    ['no messages', { messages: [] }],
  ])('chat, %s: answered, streamed or not', async (_name, body) => {
    for (const stream of [false, true]) {
      const response = await inject(vllm, '/v1/chat/completions', { model: 'benchtruth/fake-model', max_tokens: 3, stream, ...body });
      expect(response.statusCode).toBe(200);
      if (stream) expect(response.body.endsWith('data: [DONE]\n\n')).toBe(true);
      else expect(JSON.parse(response.body)).toMatchObject({ usage: { completion_tokens: 3 } });
    }
  });

  it('JetStream: an empty prompt or text is answered on every HTTP surface', async () => {
    expect((await inject(jetstream, '/generate', { prompt: '', max_tokens: 3 })).statusCode).toBe(200);
    expect((await inject(jetstream, '/generate', { prompt: null, max_tokens: 3, stream: true })).statusCode).toBe(200);
    const native = await inject(jetstream, '/v1/generate', { max_tokens: 3, text_content: { text: '' } });
    expect(native.statusCode).toBe(200);
    expect(native.body).toContain('streamContent');
    expect(jetstream.context.engine.state()).toMatchObject({ running: 0, waiting: 0 });
  });
});
