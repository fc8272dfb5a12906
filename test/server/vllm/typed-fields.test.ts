/**
 * Typed request fields the fake model does not use are still type-checked as vLLM's request
 * models declare them (audit 9-Y1): a wrong type or a null where the field is not Optional is
 * vLLM's 400, never silently served.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';

const servers: BenchtruthServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

async function server(): Promise<BenchtruthServer> {
  const s = buildServer({ seed: 1, ttftMs: 0, itlMs: 0 });
  servers.push(s);
  await s.app.ready();
  return s;
}

const ask = async (s: BenchtruthServer, url: string, payload: Record<string, unknown>): Promise<{ status: number; message: string }> => {
  const response = await s.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(payload) });
  const body = JSON.parse(response.body) as { error?: { message: string } };
  return { status: response.statusCode, message: body.error?.message ?? '' };
};

describe('typed fields', () => {
  it('completions: n, request_id, priority, beam search, length penalty, special tokens, token ids as strings', async () => {
    const s = await server();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ n: null }, "'type': 'int_type', 'loc': ('body', 'n')"],
      [{ request_id: 5 }, "'type': 'string_type', 'loc': ('body', 'request_id')"],
      [{ priority: 'x' }, "'type': 'int_parsing', 'loc': ('body', 'priority')"],
      [{ use_beam_search: null }, "'type': 'bool_type', 'loc': ('body', 'use_beam_search')"],
      [{ length_penalty: null }, "'type': 'float_type', 'loc': ('body', 'length_penalty')"],
      [{ add_special_tokens: null }, "'type': 'bool_type', 'loc': ('body', 'add_special_tokens')"],
      [{ return_tokens_as_token_ids: 'x' }, "'type': 'bool_parsing', 'loc': ('body', 'return_tokens_as_token_ids')"],
      [{ cache_salt: '' }, "Parameter 'cache_salt' must be a non-empty string if provided."],
    ];
    for (const [extra, expected] of cases) {
      const answer = await ask(s, '/v1/completions', { prompt: 'x', max_tokens: 1, ...extra });
      expect(answer.status, JSON.stringify(extra)).toBe(400);
      expect(answer.message, JSON.stringify(extra)).toContain(expected);
    }
    expect((await ask(s, '/v1/completions', { prompt: 'x', max_tokens: 1, priority: 3, cache_salt: 'salt', return_tokens_as_token_ids: null })).status).toBe(200);
  });

  it('chat: a cache salt that is no string, and priority', async () => {
    const s = await server();
    const messages = [{ role: 'user', content: 'a' }];
    expect((await ask(s, '/v1/chat/completions', { messages, max_tokens: 1, cache_salt: 5 })).message).toContain("Parameter 'cache_salt' must be a non-empty string if provided.");
    expect((await ask(s, '/v1/chat/completions', { messages, max_tokens: 1, priority: 'x' })).message).toContain("'loc': ('body', 'priority')");
    expect((await ask(s, '/v1/chat/completions', { messages, max_tokens: 1, n: null })).status).toBe(200);
  });

  it('/tokenize: its bool fields and check_generation_prompt', async () => {
    const s = await server();
    expect((await ask(s, '/tokenize', { prompt: 'a', add_special_tokens: 'x' })).message).toContain("'loc': ('body', 'add_special_tokens')");
    const messages = [{ role: 'user', content: 'a' }];
    expect((await ask(s, '/tokenize', { messages, add_generation_prompt: 'x' })).message).toContain("'loc': ('body', 'add_generation_prompt')");
    expect((await ask(s, '/tokenize', { messages, continue_final_message: true, add_generation_prompt: true })).message).toContain('Cannot set both `continue_final_message` and `add_generation_prompt` to True.');
    expect((await ask(s, '/tokenize', { messages, continue_final_message: true, add_generation_prompt: false })).status).toBe(200);
  });
});
