/**
 * JetStream counts a prompt with its model's tokenizer: under `--tokenizer`, the proxy, native
 * HTTP and gRPC surfaces count it as vLLM's /tokenize does on the same server (review 21-jetstream),
 * in the truth and in jetstream_request_input_length.
 */
import { Metadata, type ClientReadableStream } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orchestratorClient } from '../../../client/send/grpc-sender.ts';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';
import { endedRecord } from '../../helpers/raw-completions.ts';

const PROMPT = 'Tokenizers disagree: 東京タワー 🗼 and naïve café prose.';
let server: BenchtruthServer;

beforeAll(async () => {
  server = buildServer({ seed: 2, ttftMs: 0, itlMs: 0, grpcPort: 0, dialect: 'jetstream', tokenizer: 'cl100k_base' });
  await server.listen(0);
});
afterAll(() => server.close());

describe('JetStream prompt tokens under --tokenizer', () => {
  it('proxy, native HTTP and gRPC count the prompt as /tokenize does', async () => {
    const tokenized = (await server.app.inject({ method: 'POST', url: '/tokenize', payload: { prompt: PROMPT, add_special_tokens: false } })).json() as { count: number };
    expect(tokenized.count).toBeGreaterThan(0);
    await server.app.inject({ method: 'POST', url: '/generate', headers: { 'x-request-id': 'tok-proxy' }, payload: { prompt: PROMPT, max_tokens: 2 } });
    await server.app.inject({ method: 'POST', url: '/v1/generate', headers: { 'x-request-id': 'tok-native' }, payload: { max_tokens: 2, text_content: { text: PROMPT } } });
    const client = orchestratorClient(`127.0.0.1:${server.jetstream.grpcPort}`);
    const metadata = new Metadata();
    metadata.set('x-request-id', 'tok-grpc');
    await new Promise<void>((resolve, reject) => {
      const call = client.Decode({ maxTokens: 2, textContent: { text: PROMPT } }, metadata) as ClientReadableStream<unknown>;
      call.on('data', () => {});
      call.on('error', reject);
      call.on('end', () => resolve());
    });
    client.close();
    const counts = await Promise.all(['tok-proxy', 'tok-native', 'tok-grpc'].map(async (id) => (await endedRecord(server, id, 5_000)).promptTokens));
    expect(counts).toEqual([tokenized.count, tokenized.count, tokenized.count]);
    const metrics = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(new RegExp(`^jetstream_request_input_length_sum\\{id="[^"]*"\\} ${3 * tokenized.count}$`, 'm'));
  });
});
