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
    // Sent alone, the before-validator passes (it reads the absent field as None) and the chat
    // template refuses it with the default add_generation_prompt (audit 13-Z4-8).
    const template = 'continue_final_message and add_generation_prompt are not compatible. Use continue_final_message when you want the model to continue the final message, and add_generation_prompt when you want to add a header that will prompt it to start a new assistant message instead. None';
    for (const url of ['/tokenize', '/v1/chat/completions']) {
      const alone = await ask(s, url, { messages, continue_final_message: true, max_tokens: 1 });
      expect(alone, url).toEqual({ status: 400, message: template });
      // The template sees the validated value: the text "false" is pydantic's False.
      expect((await ask(s, url, { messages, continue_final_message: 'false', max_tokens: 1 })).status, url).toBe(200);
    }
  });
});

describe('structured output, pass-through and chat template fields (audit 10 Z2-4)', () => {
  const messages = [{ role: 'user', content: 'a' }];

  it.each([
    [{ guided_json: [1] }, "('body', 'guided_json', 'str')"],
    [{ guided_regex: 5 }, "('body', 'guided_regex')"],
    [{ guided_grammar: 5 }, "('body', 'guided_grammar')"],
    [{ guided_decoding_backend: 5 }, "('body', 'guided_decoding_backend')"],
    [{ guided_whitespace_pattern: [] }, "('body', 'guided_whitespace_pattern')"],
    [{ guided_choice: 'x' }, "'type': 'list_type', 'loc': ('body', 'guided_choice')"],
    [{ vllm_xargs: [1] }, "'type': 'dict_type', 'loc': ('body', 'vllm_xargs')"],
    [{ kv_transfer_params: 5 }, "'type': 'dict_type', 'loc': ('body', 'kv_transfer_params')"],
  ])('both endpoints refuse %j', async (extra, expected) => {
    const s = await server();
    for (const [url, base] of [['/v1/completions', { prompt: 'x' }], ['/v1/chat/completions', { messages }]] as const) {
      const answer = await ask(s, url, { ...base, max_tokens: 1, ...extra });
      expect(answer.status, url).toBe(400);
      expect(answer.message, url).toContain(expected);
    }
  });

  it.each([
    [{ structural_tag: 5 }, "('body', 'structural_tag')"],
    [{ documents: [{ a: 1 }] }, "('body', 'documents', 0, 'a')"],
    [{ bad_words: 'x' }, "'type': 'list_type', 'loc': ('body', 'bad_words')"],
    [{ bad_words: null }, "'type': 'list_type', 'loc': ('body', 'bad_words')"],
  ])('chat refuses %j (TokenizeChatRequest has no such field)', async (extra, expected) => {
    const s = await server();
    const answer = await ask(s, '/v1/chat/completions', { messages, max_tokens: 1, ...extra });
    expect(answer.status).toBe(400);
    expect(answer.message).toContain(expected);
    expect((await ask(s, '/tokenize', { messages, ...extra })).status).toBe(200);
  });

  it.each([
    [{ mm_processor_kwargs: 5 }, "'type': 'dict_type', 'loc': ('body', 'mm_processor_kwargs')"],
    [{ chat_template: 1.5 }, "('body', 'chat_template')"],
    [{ chat_template_kwargs: [1] }, "'type': 'dict_type', 'loc': ('body', 'chat_template_kwargs')"],
    [{ tools: 'bogus' }, "'type': 'list_type', 'loc': ('body', 'tools')"],
    [{ tools: [{ type: 'function', function: {} }] }, "'type': 'missing', 'loc': ('body', 'tools', 0, 'function', 'name')"],
  ])('chat and /tokenize of messages refuse %j', async (extra, expected) => {
    const s = await server();
    for (const url of ['/v1/chat/completions', '/tokenize']) {
      const answer = await ask(s, url, { messages, max_tokens: 1, ...extra });
      expect(answer.status, url).toBe(400);
      expect(answer.message, url).toContain(expected);
    }
  });

  it('completions read the prompt as the smart union of pydantic does: strict members first, then lax integers (audit 13-Z4-4)', async () => {
    const s = await server();
    const promptTokens = async (prompt: unknown): Promise<number | null> => {
      const response = await s.app.inject({ method: 'POST', url: '/v1/completions', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ prompt, max_tokens: 1 }) });
      return response.statusCode === 200 ? (JSON.parse(response.body) as { usage: { prompt_tokens: number } }).usage.prompt_tokens : null;
    };
    expect(await promptTokens([true])).toBe(1);
    expect(await promptTokens([1, '2', false])).toBe(3);
    expect(await promptTokens([[true, 7], [3]])).toBe(3);
    // Every item a string: the strict list[str] member wins, so these are two text prompts.
    expect(await promptTokens(['1', '2'])).toBe(2);
    expect(await promptTokens([1.5])).toBeNull();
    expect(await promptTokens([1, 'x'])).toBeNull();
  });

  it('completions refuse a prompt_embeds that is no bytes; the right types are served', async () => {
    const s = await server();
    expect((await ask(s, '/v1/completions', { prompt: 'x', max_tokens: 1, prompt_embeds: 5 })).message).toContain("('body', 'prompt_embeds', 'bytes')");
    const fine = {
      // One kind of constraint (two are refused: see below); a null one is not counted.
      guided_json: null,
      guided_choice: ['a', 'b'],
      structured_outputs: { choice: ['a'], json: null },
      bad_words: ['x'],
      vllm_xargs: { k: 1 },
      kv_transfer_params: null,
      guided_regex: null,
    };
    expect((await ask(s, '/v1/completions', { prompt: 'x', max_tokens: 1, ...fine })).status).toBe(200);
    const chatFine = { ...fine, documents: [{ title: 't', text: 'x' }], chat_template_kwargs: { enable_thinking: false }, tools: [{ type: 'function', function: { name: 'f', parameters: {} } }], tool_choice: 'none' };
    expect((await ask(s, '/v1/chat/completions', { messages, max_tokens: 1, ...chatFine })).status).toBe(200);
  });
});

describe('one kind of structured-output constraint per request (audit 18-A1)', () => {
  const messages = [{ role: 'user', content: 'a' }];
  const GUIDED = "Value error, You can only use one kind of guided decoding ('guided_json', 'guided_regex' or 'guided_choice').";
  const STRUCTURED = "Value error, You can only use one kind of constraints for structured outputs ('json', 'regex' or 'choice').";

  it.each([
    [{ guided_json: { type: 'object' }, guided_regex: 'a' }, GUIDED],
    [{ guided_regex: 'a', guided_choice: ['a'] }, GUIDED],
    [{ guided_json: '{}', guided_choice: ['a'], guided_regex: 'a' }, GUIDED],
    [{ structured_outputs: { json: {}, regex: 'a' } }, STRUCTURED],
    [{ structured_outputs: { regex: 'a', choice: [] } }, STRUCTURED],
    [{ structured_outputs: 5 }, "'type': 'dataclass_type', 'loc': ('body', 'structured_outputs')"],
    [{ structured_outputs: ['json'] }, 'Input should be a dictionary or an instance of StructuredOutputsParams'],
    [{ response_format: { type: 'json_schema' } }, "Value error, When response_format type is 'json_schema', the 'json_schema' field must be provided."],
    [{ response_format: { type: 'json_schema', json_schema: null } }, "the 'json_schema' field must be provided."],
  ])('both endpoints refuse %j with a 400', async (extra, expected) => {
    const s = await server();
    for (const [url, base] of [['/v1/completions', { prompt: 'x' }], ['/v1/chat/completions', { messages }]] as const) {
      for (const stream of [false, true]) {
        const answer = await ask(s, url, { ...base, max_tokens: 1, stream, ...extra });
        expect(answer.status, `${url} stream ${stream}`).toBe(400);
        expect(answer.message, url).toContain(expected);
      }
    }
  });

  it.each([
    [{ guided_json: { type: 'object' }, guided_regex: null, guided_grammar: 'g' }],
    [{ structured_outputs: { json: {}, regex: null, grammar: 'g' } }],
    [{ structured_outputs: null, guided_choice: ['a'] }],
  ])('one counted kind is served: %j', async (extra) => {
    const s = await server();
    for (const [url, base] of [['/v1/completions', { prompt: 'x' }], ['/v1/chat/completions', { messages }]] as const) {
      expect((await ask(s, url, { ...base, max_tokens: 1, ...extra })).status, url).toBe(200);
    }
  });
});

describe('requests vLLM serves that a naive reading would refuse (audit 10 Z9)', () => {
  const messages = [{ role: 'user', content: 'a' }];

  it('completions take any bad_words: CompletionRequest declares none (an ignored extra)', async () => {
    const s = await server();
    expect((await ask(s, '/v1/completions', { prompt: 'x', max_tokens: 1, bad_words: null })).status).toBe(200);
  });

  it('beam search skips the sampling checks (greedy n > 1, top_p 0), capped by 2 × width logprobs', async () => {
    const s = await server();
    for (const [url, base] of [['/v1/chat/completions', { messages }], ['/v1/completions', { prompt: 'x' }]] as const) {
      expect((await ask(s, url, { ...base, max_tokens: 2, use_beam_search: true, n: 2, temperature: 0 })).status, url).toBe(200);
      expect((await ask(s, url, { ...base, max_tokens: 2, use_beam_search: true, n: 3, top_p: 0 })).status, url).toBe(200);
      expect((await ask(s, url, { ...base, max_tokens: 2, use_beam_search: true, n: 11 })).message, url).toBe('Requested sample logprobs of 22, which is greater than max allowed: 20');
      // The engine's check: a chat stream has its 200 already, and gets the error as an event;
      // vLLM never streams a beam-search completion, so there it is a plain 400.
      const streamed = await s.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ ...base, max_tokens: 2, use_beam_search: true, n: 11, stream: true }) });
      expect(streamed.statusCode, url).toBe(url === '/v1/completions' ? 400 : 200);
      expect(streamed.body, url).toContain('Requested sample logprobs of 22');
    }
    // A beam-search completion asked to stream: the whole answer as one event, then [DONE].
    const beam = await s.app.inject({ method: 'POST', url: '/v1/completions', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ prompt: 'x', max_tokens: 2, use_beam_search: true, n: 2, stream: true }) });
    expect(beam.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    const [first, done, ...rest] = beam.body.split('\n\n');
    expect([done, rest]).toEqual(['data: [DONE]', ['']]);
    expect((JSON.parse((first as string).slice('data: '.length)) as { choices: unknown[] }).choices).toHaveLength(2);
  });

  it('a tiny positive temperature is raised to 0.01, not greedy: n > 1 is served; 0 is still greedy', async () => {
    const s = await server();
    expect((await ask(s, '/v1/chat/completions', { messages, max_tokens: 1, n: 2, temperature: 1e-6 })).status).toBe(200);
    expect((await ask(s, '/v1/chat/completions', { messages, max_tokens: 1, n: 2, temperature: 0 })).message).toBe('n must be 1 when using greedy sampling, got 2.');
  });

  it('/detokenize reads its token ids laxly, as pydantic does ("1" is 1)', async () => {
    const s = await server();
    const lax = await s.app.inject({ method: 'POST', url: '/detokenize', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ tokens: ['1', 2] }) });
    const strict = await s.app.inject({ method: 'POST', url: '/detokenize', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ tokens: [1, 2] }) });
    expect(lax.statusCode).toBe(200);
    expect(lax.body).toBe(strict.body);
    expect((await ask(s, '/detokenize', { tokens: ['x'] })).message).toContain("'loc': ('body', 'tokens', 0)");
    expect((await ask(s, '/detokenize', { tokens: null })).message).toContain("'type': 'list_type'");
  });
});

describe('truncate_prompt_tokens keeps the prompt’s last tokens before the length check (audit 10 Z9-3)', () => {
  const usageOf = (body: string): number => (JSON.parse(body) as { usage: { prompt_tokens: number } }).usage.prompt_tokens;
  const post = (s: BenchtruthServer, url: string, payload: object) => s.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(payload) });
  const long = Array.from({ length: 100 }, () => 'word').join(' ');

  it('completions and chat: an over-long prompt is served, counted as the kept tokens; −1 keeps the context', async () => {
    const s = buildServer({ seed: 1, ttftMs: 0, itlMs: 0, maxModelLen: 64 });
    servers.push(s);
    await s.app.ready();
    expect((await post(s, '/v1/completions', { prompt: long, max_tokens: 5 })).statusCode).toBe(400);
    const completion = await post(s, '/v1/completions', { prompt: long, max_tokens: 5, truncate_prompt_tokens: 10 });
    expect(completion.statusCode).toBe(200);
    expect(usageOf(completion.body)).toBe(10);
    const ids = await post(s, '/v1/completions', { prompt: [1, 2, 3, 4, 5], max_tokens: 2, truncate_prompt_tokens: 2, return_token_ids: true });
    expect(JSON.parse(ids.body)).toMatchObject({ usage: { prompt_tokens: 2 }, choices: [{ prompt_token_ids: [4, 5] }] });
    const chat = await post(s, '/v1/chat/completions', { messages: [{ role: 'user', content: long }], max_tokens: 5, truncate_prompt_tokens: 10 });
    expect(chat.statusCode).toBe(200);
    expect(usageOf(chat.body)).toBe(10);
    // A prompt shorter than the limit is left whole.
    expect(usageOf((await post(s, '/v1/completions', { prompt: 'word word word', max_tokens: 1, truncate_prompt_tokens: 20 })).body)).toBe(3);
  });
});

describe('truncation and beam search edges (audit 10 R11)', () => {
  const post = (s: BenchtruthServer, url: string, payload: object) => s.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(payload) });

  it('chat: prompt_token_ids are the kept tokens; completions echo a cut text prompt as sent', async () => {
    const s = await server();
    const chat = JSON.parse((await post(s, '/v1/chat/completions', { messages: [{ role: 'user', content: 'alpha beta gamma delta' }], max_tokens: 2, truncate_prompt_tokens: 3, return_token_ids: true })).body) as { usage: { prompt_tokens: number }; prompt_token_ids: number[] };
    expect(chat.usage.prompt_tokens).toBe(3);
    expect(chat.prompt_token_ids).toHaveLength(3);
    const echoed = JSON.parse((await post(s, '/v1/completions', { prompt: 'alpha beta gamma delta', max_tokens: 1, truncate_prompt_tokens: 2, echo: true })).body) as { choices: Array<{ text: string }>; usage: { prompt_tokens: number } };
    expect(echoed.choices[0]?.text.startsWith('alpha beta gamma delta')).toBe(true);
    expect(echoed.usage.prompt_tokens).toBe(2);
  });

  it('--mode echo repeats what truncate_prompt_tokens kept of a text prompt (audit 10 R12-3)', async () => {
    const s = buildServer({ seed: 1, ttftMs: 0, itlMs: 0, mode: 'echo' });
    servers.push(s);
    await s.app.ready();
    const body = JSON.parse((await post(s, '/v1/completions', { prompt: 'alpha beta gamma delta', max_tokens: 10, truncate_prompt_tokens: 2 })).body) as { choices: Array<{ text: string }>; usage: { completion_tokens: number } };
    expect(body.choices[0]?.text).toBe(' gamma delta');
    expect(body.usage.completion_tokens).toBe(2);
  });

  it('a streamed chat beam search is its role chunk and one chunk of the whole text, as vLLM’s search yields one finished output (review 23: token by token)', async () => {
    const s = await server();
    const response = await post(s, '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }], max_tokens: 6, ignore_eos: true, use_beam_search: true, stream: true, stream_options: { include_usage: true } });
    expect(response.statusCode).toBe(200);
    const events = response.body.split('\n\n').filter((e) => e !== '').map((e) => e.replace(/^data: /, ''));
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as { choices: Array<{ delta: { role?: string; content?: string }; finish_reason: string | null }>; usage: { completion_tokens: number } | null });
    expect(chunks).toHaveLength(3);
    expect(chunks[0]?.choices[0]?.delta.role).toBe('assistant');
    expect(chunks[1]?.choices[0]?.finish_reason).toBe('length');
    expect(chunks[1]?.choices[0]?.delta.content?.length).toBeGreaterThan(0);
    expect(chunks[2]?.usage?.completion_tokens).toBe(6);
  });

  it('beam search with a negative limit runs no step (vLLM: range(max_tokens)), never a 500', async () => {
    const s = await server();
    for (const [url, payload] of [
      ['/v1/completions', { prompt: 'hi', max_tokens: -1, use_beam_search: true }],
      ['/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: -5, use_beam_search: true }],
      ['/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }], max_tokens: -5, use_beam_search: true, stream: true }],
    ] as const) {
      expect((await post(s, url, payload)).statusCode, JSON.stringify(payload)).toBe(200);
    }
  });
});
