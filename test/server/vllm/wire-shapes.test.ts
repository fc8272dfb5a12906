import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchtruthServer } from '../../../server/app.ts';
import { chunks, firstChoice, injectServer, postTo, sseData, type Json } from './vllm-inject.ts';

const servers: Record<string, BenchtruthServer> = {};

beforeAll(async () => {
  servers['0.11'] = await injectServer({ vllmVersion: '0.11' });
  servers['0.10.1'] = await injectServer({ vllmVersion: '0.10.1' });
});

afterAll(async () => {
  for (const server of Object.values(servers)) await server.close();
});

const modern = (v: string): boolean => v === '0.11';
const ids = (v: string): string[] => (modern(v) ? ['prompt_token_ids', 'token_ids'] : []);

describe.each(['0.11', '0.10.1'])('vLLM %s field sets and order', (version) => {
  const post = (url: string, body: unknown, headers: Record<string, string> = {}) => postTo(servers[version] as BenchtruthServer, url, body, headers);

  it('streams completion chunks with every field, nulls included, the finish reason on the last token', async () => {
    const response = await post('/v1/completions', { prompt: 'hi there', max_tokens: 3, stream: true }, { 'x-request-id': 'c1' });
    const data = sseData(response.body);
    expect(data.at(-1)).toBe('[DONE]');
    const all = chunks(response.body);
    expect(all).toHaveLength(3);
    all.forEach((chunk, i) => {
      expect(Object.keys(chunk)).toEqual(['id', 'object', 'created', 'model', 'choices', 'usage']);
      expect(chunk).toMatchObject({ id: 'cmpl-c1', object: 'text_completion', created: 1741212154, model: 'fake-model', usage: null });
      expect(Object.keys(firstChoice(chunk))).toEqual(['index', 'text', 'logprobs', 'finish_reason', 'stop_reason', ...ids(version)]);
      expect(firstChoice(chunk).finish_reason).toBe(i === 2 ? 'length' : null);
    });
  });

  it('answers a non-streamed completion with the response model’s every field', async () => {
    const response = await post('/v1/completions', { prompt: 'hi there', max_tokens: 3 }, { 'x-request-id': 'c2' });
    expect(response.headers['content-type']).toBe('application/json');
    const body = JSON.parse(response.body) as Json;
    expect(Object.keys(body)).toEqual(['id', 'object', 'created', 'model', 'choices', 'service_tier', 'system_fingerprint', 'usage', 'kv_transfer_params']);
    const choiceKeys = modern(version)
      ? ['index', 'text', 'logprobs', 'finish_reason', 'stop_reason', 'token_ids', 'prompt_logprobs', 'prompt_token_ids']
      : ['index', 'text', 'logprobs', 'finish_reason', 'stop_reason', 'prompt_logprobs'];
    expect(Object.keys(firstChoice(body))).toEqual(choiceKeys);
    expect(body.usage).toEqual({ prompt_tokens: 2, total_tokens: 5, completion_tokens: 3, prompt_tokens_details: null });
  });

  it('streams chat as a role chunk, content chunks, a finish chunk with stop_reason, only the fields vLLM sets', async () => {
    const response = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'hello' }], max_tokens: 3, stream: true }, { 'x-request-id': 'h1' });
    const all = chunks(response.body);
    expect(all).toHaveLength(4);
    const [role, ...rest] = all as [Json, ...Json[]];
    expect(Object.keys(role)).toEqual(['id', 'object', 'created', 'model', 'choices', ...(modern(version) ? ['prompt_token_ids'] : [])]);
    expect(firstChoice(role)).toEqual({ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null });
    expect(role).toMatchObject({ id: 'chatcmpl-h1', object: 'chat.completion.chunk' });
    rest.forEach((chunk, i) => {
      expect(Object.keys(chunk)).toEqual(['id', 'object', 'created', 'model', 'choices']);
      const last = i === rest.length - 1;
      const keys = last ? ['index', 'delta', 'logprobs', 'finish_reason', 'stop_reason'] : ['index', 'delta', 'logprobs', 'finish_reason'];
      expect(Object.keys(firstChoice(chunk))).toEqual([...keys, ...(modern(version) ? ['token_ids'] : [])]);
      expect(Object.keys(firstChoice(chunk).delta as Json)).toEqual(['content']);
    });
  });

  it('answers a non-streamed chat with the whole message object', async () => {
    const response = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'hello' }], max_completion_tokens: 2 }, { 'x-request-id': 'h2' });
    const body = JSON.parse(response.body) as Json;
    expect(Object.keys(body)).toEqual([
      'id', 'object', 'created', 'model', 'choices', 'service_tier', 'system_fingerprint', 'usage', 'prompt_logprobs',
      ...(modern(version) ? ['prompt_token_ids'] : []), 'kv_transfer_params',
    ]);
    expect(body).toMatchObject({ id: 'chatcmpl-h2', object: 'chat.completion' });
    const choice = firstChoice(body);
    expect(Object.keys(choice)).toEqual(['index', 'message', 'logprobs', 'finish_reason', 'stop_reason', ...(modern(version) ? ['token_ids'] : [])]);
    expect(Object.keys(choice.message as Json)).toEqual(['role', 'content', 'refusal', 'annotations', 'audio', 'function_call', 'tool_calls', 'reasoning_content']);
    expect((body.usage as Json).completion_tokens).toBe(2);
  });

  it('adds usage: one final chunk without nulls, and running usage per chunk with continuous_usage_stats', async () => {
    const stream_options = { include_usage: true, continuous_usage_stats: true };
    const completion = chunks((await post('/v1/completions', { prompt: 'a b c', max_tokens: 2, stream: true, stream_options })).body);
    expect(completion.map((c) => c.usage)).toEqual([
      { prompt_tokens: 3, total_tokens: 4, completion_tokens: 1, prompt_tokens_details: null },
      { prompt_tokens: 3, total_tokens: 5, completion_tokens: 2, prompt_tokens_details: null },
      { prompt_tokens: 3, total_tokens: 5, completion_tokens: 2 },
    ]);
    const chat = chunks((await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'a b c' }], max_tokens: 2, stream: true, stream_options })).body);
    expect(chat.map((c) => c.usage)).toEqual([
      { prompt_tokens: 3, total_tokens: 3, completion_tokens: 0 },
      { prompt_tokens: 3, total_tokens: 4, completion_tokens: 1 },
      { prompt_tokens: 3, total_tokens: 5, completion_tokens: 2 },
      { prompt_tokens: 3, total_tokens: 5, completion_tokens: 2 },
    ]);
    expect(chat.at(-1)?.choices).toEqual([]);
  });
});
