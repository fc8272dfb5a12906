/**
 * Whatever arrives, every POST endpoint answers a well-formed 2xx or 4xx (never a 5xx, never a
 * hang) and the server stays up. Arbitrary JSON values, near-valid bodies and raw bytes.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchtruthServer } from '../../../server/app.ts';
import { startServer } from '../../helpers/server.ts';
import { injectServer } from './vllm-inject.ts';

const POST_ENDPOINTS = ['/v1/completions', '/v1/chat/completions', '/tokenize', '/detokenize', '/v1/load_lora_adapter', '/v1/unload_lora_adapter'] as const;

let server: BenchtruthServer;

beforeAll(async () => {
  // A small context keeps accidental valid requests small; streams have no delay.
  server = await injectServer({ maxModelLen: 64, eosAfterTokens: 8, maxBodySizeBytes: 4096 });
});

afterAll(async () => {
  await server.close();
});

const value = fc.jsonValue({ maxDepth: 3 });

/** Bodies shaped like real requests with arbitrary values in the known fields. */
const nearValid = fc.record(
  {
    model: fc.oneof(fc.constant('fake-model'), value),
    prompt: fc.oneof(fc.string({ maxLength: 20 }), fc.array(fc.integer({ min: -5, max: 300 }), { maxLength: 5 }), value),
    messages: fc.oneof(
      fc.array(fc.record({ role: fc.oneof(fc.constantFrom('user', 'system'), value), content: fc.oneof(fc.string({ maxLength: 20 }), value) }), { maxLength: 3 }),
      value,
    ),
    max_tokens: fc.oneof(fc.integer({ min: -2, max: 70 }), value),
    max_completion_tokens: fc.oneof(fc.integer({ min: -2, max: 70 }), value),
    n: fc.oneof(fc.integer({ min: -1, max: 3 }), value),
    stream: fc.oneof(fc.boolean(), value),
    stream_options: fc.oneof(fc.record({ include_usage: value, continuous_usage_stats: value }, { requiredKeys: [] }), value),
    stop: fc.oneof(fc.string({ maxLength: 3 }), fc.array(fc.string({ maxLength: 3 }), { maxLength: 3 }), value),
    ignore_eos: fc.oneof(fc.boolean(), value),
    tokens: fc.oneof(fc.array(fc.integer({ min: -2, max: 400 }), { maxLength: 5 }), value),
    lora_name: fc.oneof(fc.string({ maxLength: 5 }), value),
    lora_path: fc.oneof(fc.string({ maxLength: 5 }), value),
  },
  { requiredKeys: [] },
);

const payload = fc.oneof(
  value.map((v) => Buffer.from(JSON.stringify(v) ?? 'null')),
  nearValid.map((v) => Buffer.from(JSON.stringify(v))),
  fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
  fc.string({ maxLength: 200 }).map((text) => Buffer.from(text)),
);

function wellFormed(status: number, contentType: string | undefined, body: string): void {
  expect(status >= 200 && status < 500).toBe(true);
  if (status >= 400) {
    expect(contentType).toBe('application/json');
    const parsed = JSON.parse(body) as { error?: unknown; detail?: unknown };
    expect(parsed.error ?? parsed.detail).toBeDefined();
  }
}

describe('robustness: arbitrary input to every POST endpoint', () => {
  it('always answers 2xx or a well-formed 4xx, and the server stays up', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...POST_ENDPOINTS), payload, fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded'), async (url, body, contentType) => {
        const response = await server.app.inject({ method: 'POST', url, headers: { 'content-type': contentType }, payload: body });
        wellFormed(response.statusCode, response.headers['content-type'] as string | undefined, response.body);
      }),
      { seed: 4242, numRuns: 400 },
    );
    const health = await server.app.inject({ method: 'GET', url: '/health' });
    expect(health.statusCode).toBe(200);
  });
});

describe('robustness over a real socket', () => {
  it('answers arbitrary bodies on 127.0.0.1 with 2xx or a well-formed 4xx and keeps serving', async () => {
    // The real BPE tokenizer here, the built-in one above: both face the same garbage.
    const running = await startServer({ seed: 7, ttftMs: 0, itlMs: 0, maxModelLen: 64, eosAfterTokens: 8, maxBodySizeBytes: 4096, tokenizer: 'cl100k_base', mode: 'echo' });
    try {
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...POST_ENDPOINTS), payload, async (url, body) => {
          const response = await fetch(`${running.url}${url}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
          wellFormed(response.status, response.headers.get('content-type') ?? undefined, await response.text());
        }),
        { seed: 4243, numRuns: 80 },
      );
      expect((await fetch(`${running.url}/health`)).status).toBe(200);
    } finally {
      await running.close();
    }
  });
});
