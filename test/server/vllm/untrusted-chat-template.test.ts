/**
 * vLLM 0.11 refuses a chat request carrying its own template unless the server trusts them
 * (`--trust-request-chat-template`, GHSA-6fvq-23cw-5628); review 22 found it served.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchtruthServer } from '../../../server/app.ts';
import { injectServer, postTo } from './vllm-inject.ts';

const REFUSAL = {
  error: {
    message: 'Chat template is passed with request, but --trust-request-chat-template is not set. Refused request with untrusted chat template.',
    type: 'BadRequestError',
    param: null,
    code: 400,
  },
};
const chat = { model: 'fake-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 };

let strict: BenchtruthServer;
let trusting: BenchtruthServer;
let older: BenchtruthServer;

beforeAll(async () => {
  [strict, trusting, older] = await Promise.all([injectServer(), injectServer({ trustRequestChatTemplate: true }), injectServer({ vllmVersion: '0.10.1' })]);
});

afterAll(async () => {
  await Promise.all([strict, trusting, older].map((server) => server.close()));
});

describe('a chat request that carries a chat template', () => {
  it.each([
    ['chat_template', { chat_template: '{{ messages }}' }],
    ['chat_template_kwargs.chat_template', { chat_template_kwargs: { chat_template: 'x' } }],
    ['streamed', { chat_template: 'x', stream: true }],
    ['with continue_final_message (the refusal comes before rendering)', { chat_template: 'x', continue_final_message: true }],
  ])('is refused by 0.11 without --trust-request-chat-template: %s', async (_name, extra) => {
    const response = await postTo(strict, '/v1/chat/completions', { ...chat, ...extra });
    expect(response.statusCode).toBe(400);
    expect(JSON.parse(response.body)).toEqual(REFUSAL);
  });

  it('is served with the flag, under 0.10.1, and when the template is null', async () => {
    expect((await postTo(trusting, '/v1/chat/completions', { ...chat, chat_template: 'x' })).statusCode).toBe(200);
    expect((await postTo(older, '/v1/chat/completions', { ...chat, chat_template: 'x' })).statusCode).toBe(200);
    expect((await postTo(strict, '/v1/chat/completions', { ...chat, chat_template: null, chat_template_kwargs: { enable_thinking: false, chat_template: null } })).statusCode).toBe(200);
  });
});
