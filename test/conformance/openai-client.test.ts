/**
 * The official `openai` npm client against benchtruth over 127.0.0.1: everything a client built
 * for vLLM does must work unchanged, including the error classes it raises.
 */
import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../helpers/server.ts';

let open: RunningServer;
let locked: RunningServer;
let client: OpenAI;

beforeAll(async () => {
  open = await startServer({ seed: 3, ttftMs: 0, itlMs: 1, model: 'conformance-model', maxModelLen: 4096 });
  locked = await startServer({ seed: 3, ttftMs: 0, itlMs: 0, model: 'conformance-model', apiKey: 'right-key' });
  client = new OpenAI({ baseURL: `${open.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 10_000 });
});

afterAll(async () => {
  await open.close();
  await locked.close();
});

describe('openai client: completions', () => {
  it('non-streaming: text, finish reason and usage', async () => {
    const completion = await client.completions.create({ model: 'conformance-model', prompt: 'Once upon a time', max_tokens: 8 });
    expect(completion.id).toMatch(/^cmpl-[0-9a-f]{32}$/);
    expect(completion.object).toBe('text_completion');
    expect(completion.choices[0]?.finish_reason).toBe('length');
    expect(completion.usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 8, total_tokens: 12 });
  });

  it('streaming with include_usage: every chunk parses, the text adds up, usage arrives last', async () => {
    const stream = await client.completions.create({ model: 'conformance-model', prompt: 'Once upon a time', max_tokens: 6, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        text += choice.text;
        finish = choice.finish_reason ?? finish;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    expect(finish).toBe('length');
    expect(text.length).toBeGreaterThan(0);
    expect(usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 6, total_tokens: 10 });
  });
});

describe('openai client: chat', () => {
  it('non-streaming: an assistant message and usage', async () => {
    const chat = await client.chat.completions.create({ model: 'conformance-model', messages: [{ role: 'user', content: 'Hello there' }], max_completion_tokens: 5 });
    expect(chat.id).toMatch(/^chatcmpl-/);
    expect(chat.choices[0]?.message.role).toBe('assistant');
    expect(chat.choices[0]?.finish_reason).toBe('length');
    expect(chat.usage).toMatchObject({ prompt_tokens: 2, completion_tokens: 5, total_tokens: 7 });
  });

  it('streaming with content-part messages, n = 2 and usage', async () => {
    const stream = await client.chat.completions.create({
      model: 'conformance-model',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello there' }] }],
      max_tokens: 4,
      n: 2,
      stream: true,
      stream_options: { include_usage: true },
    });
    const texts = ['', ''];
    const roles: string[] = [];
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        if (choice.delta.role) roles.push(choice.delta.role);
        texts[choice.index] += choice.delta.content ?? '';
      }
      if (chunk.usage) usage = chunk.usage;
    }
    expect(roles).toEqual(['assistant', 'assistant']);
    expect(texts.every((t) => t.length > 0)).toBe(true);
    expect(usage).toMatchObject({ prompt_tokens: 2, completion_tokens: 8 });
  });

  it('parses logprobs', async () => {
    const chat = await client.chat.completions.create({ model: 'conformance-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3, logprobs: true, top_logprobs: 2 });
    const content = chat.choices[0]?.logprobs?.content ?? [];
    expect(content).toHaveLength(3);
    expect(content.map((c) => c.token).join('')).toBe(chat.choices[0]?.message.content);
    expect(content[0]?.top_logprobs).toHaveLength(2);
  });

  it('the stream helper assembles the final message', async () => {
    const runner = client.chat.completions.stream({ model: 'conformance-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 });
    const final = await runner.finalChatCompletion();
    expect(final.choices[0]?.message.content?.length).toBeGreaterThan(0);
  });
});

describe('openai client: models and errors', () => {
  it('lists the served model', async () => {
    const models = [];
    for await (const model of client.models.list()) models.push(model);
    expect(models.map((m) => m.id)).toEqual(['conformance-model']);
    expect(models[0]).toMatchObject({ object: 'model', owned_by: 'vllm' });
  });

  it('raises BadRequestError for a 400 with vLLM’s message', async () => {
    const error = await client.chat.completions.create({ model: 'conformance-model', messages: [{ role: 'user', content: 'x' }], max_tokens: 5000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as APIError).status).toBe(400);
    expect((error as APIError).error).toEqual({
      message: "'max_tokens' or 'max_completion_tokens' is too large: 5000. This model's maximum context length is 4096 tokens and your request has 1 input tokens (5000 > 4096 - 1). None",
      type: 'BadRequestError',
      param: null,
      code: 400,
    });
  });

  it('raises NotFoundError for an unknown model', async () => {
    const error = await client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect((error as APIError).message).toContain('The model `no-such-model` does not exist.');
  });

  it('raises AuthenticationError for a wrong key, and works with the right one', async () => {
    const wrong = new OpenAI({ baseURL: `${locked.url}/v1`, apiKey: 'wrong-key', maxRetries: 0 });
    const error = await wrong.models.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((error as APIError).status).toBe(401);
    const right = new OpenAI({ baseURL: `${locked.url}/v1`, apiKey: 'right-key', maxRetries: 0 });
    expect((await right.models.list()).data).toHaveLength(1);
  });

  it('raises RateLimitError for a 429 (the x-benchtruth-wire http fault)', async () => {
    const error = await client.completions
      .create({ model: 'conformance-model', prompt: 'x', max_tokens: 2 }, { headers: { 'x-benchtruth-wire': 'fault=http:429:1' } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect((error as APIError).headers?.get('retry-after')).toBe('1');
  });
});
