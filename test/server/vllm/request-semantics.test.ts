import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchtruthServer } from '../../../server/app.ts';
import { builtinTokenizer } from '../../../server/tokenizers/builtin-tokenizer.ts';
import { chunks, firstChoice, injectServer, postTo, type Json } from './vllm-inject.ts';

const servers: Record<string, BenchtruthServer> = {};

beforeAll(async () => {
  servers['0.11'] = await injectServer({ vllmVersion: '0.11' });
  servers['0.10.1'] = await injectServer({ vllmVersion: '0.10.1' });
});

afterAll(async () => {
  for (const server of Object.values(servers)) await server.close();
});

describe('request semantics', () => {
  const post = (url: string, body: unknown, headers: Record<string, string> = {}) => postTo(servers['0.11'] as BenchtruthServer, url, body, headers);

  it('treats stream_options: {} as include_usage (vLLM’s default is True)', async () => {
    const all = chunks((await post('/v1/completions', { prompt: 'x', max_tokens: 2, stream: true, stream_options: {} })).body);
    expect(all.at(-1)).toMatchObject({ choices: [], usage: { completion_tokens: 2 } });
  });

  it('gives n choices, each with its own text, and usage summed over them', async () => {
    const body = JSON.parse((await post('/v1/completions', { prompt: 'x', max_tokens: 4, n: 3 }, { 'x-request-id': 'n3' })).body) as Json;
    const choices = body.choices as Json[];
    expect(choices.map((c) => c.index)).toEqual([0, 1, 2]);
    expect(new Set(choices.map((c) => c.text)).size).toBe(3);
    expect((body.usage as Json).completion_tokens).toBe(12);
    const single = JSON.parse((await post('/v1/completions', { prompt: 'x', max_tokens: 4 }, { 'x-request-id': 'n3' })).body) as Json;
    expect(firstChoice(single).text).toBe(choices[0]?.text);
  });

  it('streams n chat choices with a role chunk each and a finish chunk each', async () => {
    const all = chunks((await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], max_tokens: 2, n: 2, stream: true })).body);
    expect(all.filter((c) => (firstChoice(c).delta as Json).role === 'assistant').map((c) => firstChoice(c).index)).toEqual([0, 1]);
    expect(all.filter((c) => firstChoice(c).finish_reason === 'length').map((c) => firstChoice(c).index)).toEqual([0, 1]);
  });

  it('ends a choice at a stop string: finish_reason "stop", stop_reason = the string, text cut before it', async () => {
    const free = JSON.parse((await post('/v1/completions', { prompt: 'x', max_tokens: 40 }, { 'x-request-id': 'stop' })).body) as Json;
    const text = firstChoice(free).text as string;
    const word = text.split(' ').filter((w) => /^[a-z]+$/.test(w))[2] as string;
    const stop = ` ${word}`;
    const cut = JSON.parse((await post('/v1/completions', { prompt: 'x', max_tokens: 40, stop: [stop, 'zzz'] }, { 'x-request-id': 'stop' })).body) as Json;
    expect(firstChoice(cut)).toMatchObject({ text: text.slice(0, text.indexOf(stop)), finish_reason: 'stop', stop_reason: stop });
    const kept = JSON.parse((await post('/v1/completions', { prompt: 'x', max_tokens: 40, stop, include_stop_str_in_output: true }, { 'x-request-id': 'stop' })).body) as Json;
    expect(firstChoice(kept).text).toBe(text.slice(0, text.indexOf(stop) + stop.length));
    const streamed = chunks((await post('/v1/completions', { prompt: 'x', max_tokens: 40, stop, stream: true }, { 'x-request-id': 'stop' })).body);
    expect(streamed.map((c) => firstChoice(c).text).join('')).toBe(firstChoice(cut).text);
    expect(firstChoice(streamed.at(-1) as Json)).toMatchObject({ finish_reason: 'stop', stop_reason: stop });
  });

  it('reads messages given as content-part arrays (text parts joined with a newline)', async () => {
    const parts = await post('/v1/chat/completions', { messages: [{ role: 'user', content: [{ type: 'text', text: 'one two' }, { type: 'image_url', image_url: { url: 'x' } }, { type: 'text', text: 'three' }] }], max_tokens: 1 });
    expect((JSON.parse(parts.body) as { usage: Json }).usage.prompt_tokens).toBe(4);
  });

  it('reads content parts as vLLM chat_utils does: refusal and thinking are text, an empty text part is skipped, a malformed part is its 400 (audit 13-Z4-1)', async () => {
    const ask = async (content: unknown[]): Promise<{ status: number; promptTokens: number | null; message: string }> => {
      const response = await post('/v1/chat/completions', { messages: [{ role: 'user', content }], max_tokens: 1 });
      const body = JSON.parse(response.body) as { usage?: Json; error?: { message: string; type: string } };
      if (response.statusCode !== 200) expect(body.error?.type).toBe('BadRequestError');
      return { status: response.statusCode, promptTokens: (body.usage?.prompt_tokens as number | undefined) ?? null, message: body.error?.message ?? '' };
    };
    expect((await ask([{ type: 'text', text: 'one' }, { type: 'refusal', refusal: 'two' }, { type: 'thinking', thinking: 'three' }])).promptTokens).toBe(5);
    expect(await ask([{ type: 'text' }, { type: 'refusal', refusal: null }, { image_url: 'http://x' }, { type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }])).toMatchObject({ status: 200, promptTokens: 0 });
    // Raised while vLLM 0.11 renders the messages, answered as f"{e} {e.__cause__}".
    expect((await ask([{ type: 'bogus' }])).message).toBe('Unknown part type: bogus None');
    expect((await ask([{ foo: 1 }])).message).toBe("Missing 'type' field in multimodal part. None");
    expect((await ask([{ type: 5 }])).message).toBe("Invalid 'type' field in multimodal part. None");
    expect((await ask([{ type: 'image_url' }])).message).toBe(
      "1 validation error for ChatCompletionContentPartImageParam\nimage_url\n  Field required [type=missing, input_value={'type': 'image_url'}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.11/v/missing None",
    );
    expect((await ask([{ type: 'video_url', video_url: { url: 5 } }])).message).toContain('video_url.url\n  Input should be a valid string [type=string_type, input_value=5, input_type=int]');
    expect((await ask([{ type: 'text', text: 'a' }, { type: 'text', text: 5 }])).message).toBe('sequence item 1: expected str instance, int found None');
    // An empty text adds nothing, not even its newline (`if parse_res:`; audit 13-R20-3).
    const withEmpty = await ask([{ type: 'text', text: 'one' }, '', { type: 'text', text: '' }, { type: 'text', text: 'two' }]);
    expect(withEmpty.status).toBe(200);
    expect(withEmpty.promptTokens).toBe((await ask([{ type: 'text', text: 'one' }, { type: 'text', text: 'two' }])).promptTokens);
    expect(withEmpty.promptTokens).toBeLessThan((await ask([{ type: 'text', text: 'one' }, ' ', { type: 'text', text: 'two' }])).promptTokens as number);
    // Rendering comes after the model check: an unknown model is its 404 first (audit 13-R20-2).
    for (const url of ['/v1/chat/completions', '/tokenize']) {
      const unknown = await post(url, { model: 'no-such-model', messages: [{ role: 'user', content: [{ type: 'bogus' }] }], max_tokens: 1 });
      expect(unknown.statusCode, url).toBe(404);
    }
  });

  it('lets max_completion_tokens win over max_tokens', async () => {
    const body = JSON.parse((await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], max_tokens: 9, max_completion_tokens: 2 })).body) as Json;
    expect((body.usage as Json).completion_tokens).toBe(2);
  });

  it('stops at the EOS point (--eos-after) when a chat sets no limit, and runs on with ignore_eos', async () => {
    const server = await injectServer({ eosAfterTokens: 5, maxModelLen: 12 });
    const natural = JSON.parse((await postTo(server, '/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }] })).body) as Json;
    expect(firstChoice(natural).finish_reason).toBe('stop');
    expect((natural.usage as Json).completion_tokens).toBe(5);
    const ignoring = JSON.parse((await postTo(server, '/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], ignore_eos: true })).body) as Json;
    expect(firstChoice(ignoring).finish_reason).toBe('length');
    expect((ignoring.usage as Json).completion_tokens).toBe(11);
    await server.close();
  });

  it('refuses a plan too large to hold in memory (benchtruth’s own guard) instead of falling over', async () => {
    const response = await post('/v1/completions', { prompt: 'x', n: 128, max_tokens: 20_000 });
    expect(response.statusCode).toBe(400);
    expect((JSON.parse(response.body) as { error: Json }).error.param).toBe('max_tokens');
  });

  it('accepts what pydantic’s lax mode accepts: digit strings for integers, yes/no for booleans', async () => {
    const response = await post('/v1/completions', { prompt: 'x', max_tokens: '2', stream: 'yes' });
    expect(response.statusCode).toBe(200);
    expect(chunks(response.body)).toHaveLength(2);
  });
});

describe('context-length messages, per version and endpoint', () => {
  it.each([
    ['0.11', '/v1/completions', { prompt: 'a b c', max_tokens: 100 }, "This model's maximum context length is -36 tokens. However, your request has 3 input tokens. Please reduce the length of the input messages."],
    ['0.10.1', '/v1/completions', { prompt: 'a b c', max_tokens: 100 }, "'max_tokens' or 'max_completion_tokens' is too large: 100. This model's maximum context length is 64 tokens and your request has 3 input tokens (100 > 64 - 3)."],
    ['0.11', '/v1/chat/completions', { messages: [{ role: 'user', content: 'a b c' }], max_tokens: 100 }, "'max_tokens' or 'max_completion_tokens' is too large: 100. This model's maximum context length is 64 tokens and your request has 3 input tokens (100 > 64 - 3). None"],
    ['0.11', '/v1/chat/completions', { messages: [{ role: 'user', content: `a${' a'.repeat(63)}` }] }, "This model's maximum context length is 64 tokens. However, your request has 64 input tokens. Please reduce the length of the input messages. None"],
  ] as const)('vLLM %s %s', async (version, url, body, message) => {
    const server = await injectServer({ vllmVersion: version, maxModelLen: 64 });
    const response = await postTo(server, url, body);
    expect(response.statusCode).toBe(400);
    expect(JSON.parse(response.body)).toEqual({ error: { message, type: 'BadRequestError', param: null, code: 400 } });
    await server.close();
  });
});

describe('return_token_ids (0.11 only)', () => {
  const PROMPT_IDS = builtinTokenizer.encode(' the model');

  const post = (version: '0.11' | '0.10.1', url: string, body: unknown) => postTo(servers[version] as BenchtruthServer, url, body, { 'x-request-id': 'ids' });

  it('fills prompt_token_ids and token_ids in completions, streamed (prompt ids on the first chunk) and not', async () => {
    const whole = JSON.parse((await post('0.11', '/v1/completions', { prompt: ' the model', max_tokens: 3, return_token_ids: true })).body) as Json;
    const choice = firstChoice(whole);
    expect(choice.prompt_token_ids).toEqual(PROMPT_IDS);
    expect(choice.token_ids).toHaveLength(3);
    const streamed = chunks((await post('0.11', '/v1/completions', { prompt: ' the model', max_tokens: 3, stream: true, return_token_ids: true })).body);
    expect(streamed.map((c) => firstChoice(c).prompt_token_ids)).toEqual([PROMPT_IDS, null, null]);
    expect(streamed.flatMap((c) => firstChoice(c).token_ids as number[])).toEqual(choice.token_ids);
  });

  it('fills them in chat: prompt ids on the role chunk and the response, token ids per chunk and choice', async () => {
    const body = { messages: [{ role: 'user', content: ' the model' }], max_tokens: 2, return_token_ids: true };
    const whole = JSON.parse((await post('0.11', '/v1/chat/completions', body)).body) as Json;
    expect(whole.prompt_token_ids).toEqual(PROMPT_IDS);
    expect(firstChoice(whole).token_ids).toHaveLength(2);
    const streamed = chunks((await post('0.11', '/v1/chat/completions', { ...body, stream: true })).body);
    expect(streamed[0]?.prompt_token_ids).toEqual(PROMPT_IDS);
    expect(streamed.slice(1).flatMap((c) => firstChoice(c).token_ids as number[])).toEqual(firstChoice(whole).token_ids);
  });

  it('with echo: the prompt comes back as ids only (its text is ""), as vLLM does, streamed and not', async () => {
    const body = { prompt: ' the model', max_tokens: 3, echo: true, return_token_ids: true };
    const plain = firstChoice(JSON.parse((await post('0.11', '/v1/completions', { ...body, echo: false })).body) as Json);
    const whole = firstChoice(JSON.parse((await post('0.11', '/v1/completions', body)).body) as Json);
    expect(whole.text).toBe(plain.text);
    expect(whole.prompt_token_ids).toEqual(PROMPT_IDS);
    expect(whole.token_ids).toEqual(plain.token_ids);
    const streamed = chunks((await post('0.11', '/v1/completions', { ...body, stream: true })).body);
    expect(streamed.map((c) => firstChoice(c).text).join('')).toBe(plain.text);
    expect(streamed.map((c) => firstChoice(c).prompt_token_ids)).toEqual([PROMPT_IDS, null, null]);
  });

  it('a streamed echo sends the prompt ids on its first chunk unasked (vLLM\'s echo branch), no token ids; a body does not', async () => {
    const body = { prompt: ' the model', max_tokens: 3, echo: true };
    const streamed = chunks((await post('0.11', '/v1/completions', { ...body, stream: true })).body);
    expect(firstChoice(streamed[0] as Json).text).toMatch(/^ the model/);
    expect(streamed.map((c) => firstChoice(c).prompt_token_ids)).toEqual([PROMPT_IDS, null, null]);
    expect(streamed.map((c) => firstChoice(c).token_ids)).toEqual([null, null, null]);
    const whole = firstChoice(JSON.parse((await post('0.11', '/v1/completions', body)).body) as Json);
    expect([whole.prompt_token_ids, whole.token_ids]).toEqual([null, null]);
  });

  it('is ignored by the 0.10.1 shape, which has no such fields', async () => {
    const whole = JSON.parse((await post('0.10.1', '/v1/completions', { prompt: ' the model', max_tokens: 3, return_token_ids: true })).body) as Json;
    expect('token_ids' in firstChoice(whole)).toBe(false);
    // So echo still gives the prompt's text there (review 20).
    const echoed = JSON.parse((await post('0.10.1', '/v1/completions', { prompt: ' the model', max_tokens: 3, echo: true, return_token_ids: true })).body) as Json;
    expect(firstChoice(echoed).text).toBe(` the model${firstChoice(whole).text as string}`);
  });
});

describe('chat request rules', () => {
  const post = (body: unknown) => postTo(servers['0.11'] as BenchtruthServer, '/v1/chat/completions', body);
  const user = [{ role: 'user', content: 'x' }];

  it.each([
    ['tools without --enable-auto-tool-choice', { messages: user, tools: [{ type: 'function', function: { name: 'f' } }] }, 'BadRequestError', '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'],
    ['tool_choice without tools', { messages: user, tool_choice: 'required' }, 'Bad Request', 'When using `tool_choice`, `tools` must be set.'],
    ['top_logprobs without logprobs', { messages: user, top_logprobs: 2 }, 'Bad Request', 'when using `top_logprobs`, `logprobs` must be set to true.'],
    ['continue_final_message with the generation prompt', { messages: user, continue_final_message: true, add_generation_prompt: true }, 'Bad Request', 'Cannot set both `continue_final_message` and `add_generation_prompt` to True.'],
    ['prompt_logprobs while streaming', { messages: user, stream: true, prompt_logprobs: 1 }, 'Bad Request', '`prompt_logprobs` are not available when `stream=True`.'],
  ])('%s → 400', async (_name, body, type, message) => {
    const response = await post(body);
    expect(response.statusCode).toBe(400);
    const error = (JSON.parse(response.body) as { error: Json }).error;
    expect(error.type).toBe(type);
    expect(error.message).toContain(message);
  });

  it('answers in the last message’s role when add_generation_prompt is false', async () => {
    const body = JSON.parse((await post({ messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content: 'Once' }], add_generation_prompt: false, max_tokens: 2 })).body) as Json;
    expect((firstChoice(body).message as Json).role).toBe('assistant');
    const custom = JSON.parse((await post({ messages: [{ role: 'narrator', content: 'x' }], add_generation_prompt: false, max_tokens: 2 })).body) as Json;
    expect((firstChoice(custom).message as Json).role).toBe('narrator');
  });
});

describe('logprobs (deterministic stand-in values in vLLM’s shapes)', () => {
  const post = (url: string, body: unknown) => postTo(servers['0.11'] as BenchtruthServer, url, body, { 'x-request-id': 'lp' });

  it('completions: text_offset, token_logprobs, tokens and top_logprobs per position, streamed offsets continuing', async () => {
    const whole = firstChoice(JSON.parse((await post('/v1/completions', { prompt: 'x', max_tokens: 3, logprobs: 2 })).body) as Json);
    const logprobs = whole.logprobs as { text_offset: number[]; token_logprobs: number[]; tokens: string[]; top_logprobs: Array<Record<string, number>> };
    expect(Object.keys(logprobs)).toEqual(['text_offset', 'token_logprobs', 'tokens', 'top_logprobs']);
    expect(logprobs.tokens.join('')).toBe(whole.text);
    expect(logprobs.text_offset[0]).toBe(0);
    logprobs.top_logprobs.forEach((top, i) => {
      expect(Object.keys(top)).toHaveLength(2);
      expect(top[logprobs.tokens[i] as string]).toBe(logprobs.token_logprobs[i]);
    });
    const streamed = chunks((await post('/v1/completions', { prompt: 'x', max_tokens: 3, logprobs: 2, stream: true })).body);
    expect(streamed.map((c) => (firstChoice(c).logprobs as { text_offset: number[] }).text_offset[0])).toEqual(logprobs.text_offset);
  });

  it('chat: content entries with token, logprob, bytes and top_logprobs; none without logprobs: true', async () => {
    const body = { messages: [{ role: 'user', content: 'x' }], max_tokens: 2 };
    const whole = firstChoice(JSON.parse((await post('/v1/chat/completions', { ...body, logprobs: true, top_logprobs: 3 })).body) as Json);
    const content = (whole.logprobs as { content: Json[] }).content;
    expect(content).toHaveLength(2);
    expect(Object.keys(content[0] as Json)).toEqual(['token', 'logprob', 'bytes', 'top_logprobs']);
    expect((content[0] as Json).top_logprobs).toHaveLength(3);
    expect(Buffer.from((content[0] as { bytes: number[] }).bytes).toString()).toBe((content[0] as Json).token);
    expect(firstChoice(JSON.parse((await post('/v1/chat/completions', body)).body) as Json).logprobs).toBeNull();
    // serving_chat: `if request.logprobs and request.top_logprobs is not None` (audit 16-V finding 3).
    expect(firstChoice(JSON.parse((await post('/v1/chat/completions', { ...body, logprobs: true, top_logprobs: null })).body) as Json).logprobs).toBeNull();
    expect(firstChoice(JSON.parse((await post('/v1/chat/completions', { ...body, logprobs: true })).body) as Json).logprobs).not.toBeNull();
  });

  it('return_tokens_as_token_ids names every token token_id:<id>, sampled and alternatives; offsets advance by those names (audit 17-V5)', async () => {
    const plain = JSON.parse((await post('/v1/completions', { prompt: 'x', max_tokens: 3, logprobs: 2, return_token_ids: true })).body) as Json;
    const named = JSON.parse((await post('/v1/completions', { prompt: 'x', max_tokens: 3, logprobs: 2, return_token_ids: true, return_tokens_as_token_ids: true })).body) as Json;
    const ids = firstChoice(plain).token_ids as number[];
    const logprobs = firstChoice(named).logprobs as { text_offset: number[]; tokens: string[]; token_logprobs: number[]; top_logprobs: Array<Record<string, number>> };
    expect(logprobs.tokens).toEqual(ids.map((id) => `token_id:${id}`));
    expect(logprobs.token_logprobs).toEqual((firstChoice(plain).logprobs as { token_logprobs: number[] }).token_logprobs);
    for (const top of logprobs.top_logprobs) expect(Object.keys(top).every((key) => /^token_id:\d+$/.test(key))).toBe(true);
    expect(logprobs.text_offset).toEqual([0, logprobs.tokens[0]?.length, (logprobs.tokens[0]?.length ?? 0) + (logprobs.tokens[1]?.length ?? 0)]);
    const chat = JSON.parse((await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], max_tokens: 1, logprobs: true, top_logprobs: 2, return_tokens_as_token_ids: true })).body) as Json;
    const entry = ((firstChoice(chat).logprobs as { content: Json[] }).content[0]) as { token: string; bytes: number[]; top_logprobs: Array<{ token: string; bytes: number[] }> };
    expect(entry.token).toMatch(/^token_id:\d+$/);
    // The sampled token's bytes are its text's, as vLLM encodes decoded_token (review 22: they were its name's);
    // the alternatives' are their names'.
    expect(Buffer.from(entry.bytes).toString()).toBe((firstChoice(chat).message as { content: string }).content);
    expect(entry.top_logprobs.map((t) => t.token).every((t) => /^token_id:\d+$/.test(t))).toBe(true);
    for (const top of entry.top_logprobs) expect(Buffer.from(top.bytes).toString()).toBe(top.token);
  });

  it('refuses more than --max-logprobs (20), as vLLM’s engine does', async () => {
    const response = await post('/v1/completions', { prompt: 'x', logprobs: 21 });
    expect(JSON.parse(response.body)).toEqual({ error: { message: 'Requested sample logprobs of 21, which is greater than max allowed: 20', type: 'BadRequestError', param: null, code: 400 } });
  });

  it('refuses them in the stream when streaming: the cap is the engine’s first check, after the 200 (review 23: a plain 400)', async () => {
    const cases: Array<[string, Json, string]> = [
      ['/v1/completions', { prompt: 'x', logprobs: 21 }, 'Requested sample logprobs of 21'],
      ['/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], logprobs: true, top_logprobs: 21 }, 'Requested sample logprobs of 21'],
    ];
    for (const [url, body, message] of cases) {
      const response = await post(url, { ...body, max_tokens: 2, stream: true });
      expect(response.statusCode, url).toBe(200);
      const events = response.body.split('\n\n').filter((e) => e !== '');
      expect(events).toHaveLength(2);
      expect(events[0]).toContain(message);
      expect(events[0]).toMatch(/^data: \{"error": \{/);
      expect(events[1]).toBe('data: [DONE]');
    }
  });
});

describe('completions echo', () => {
  it('puts the prompt in front of the text, in the first chunk when streaming', async () => {
    const post = (body: unknown) => postTo(servers['0.11'] as BenchtruthServer, '/v1/completions', body, { 'x-request-id': 'echo' });
    const plain = firstChoice(JSON.parse((await post({ prompt: 'Tell me', max_tokens: 3 })).body) as Json).text as string;
    const echoed = JSON.parse((await post({ prompt: 'Tell me', max_tokens: 3, echo: true })).body) as Json;
    expect(firstChoice(echoed).text).toBe(`Tell me${plain}`);
    expect((echoed.usage as Json).completion_tokens).toBe(3);
    const streamed = chunks((await post({ prompt: 'Tell me', max_tokens: 3, echo: true, stream: true })).body);
    expect(firstChoice(streamed[0] as Json).text as string).toMatch(/^Tell me/);
    expect(streamed.map((c) => firstChoice(c).text).join('')).toBe(`Tell me${plain}`);
  });

  it('with logprobs, streamed text offsets count the generated text only, as the whole body does (audit 17-X1)', async () => {
    const post = (body: unknown) => postTo(servers['0.11'] as BenchtruthServer, '/v1/completions', body, { 'x-request-id': 'echo-logprobs' });
    const whole = firstChoice(JSON.parse((await post({ prompt: 'hello there', max_tokens: 3, echo: true, logprobs: 0 })).body) as Json).logprobs as { text_offset: number[] };
    const streamed = chunks((await post({ prompt: 'hello there', max_tokens: 3, echo: true, logprobs: 0, stream: true })).body);
    const offsets = streamed.flatMap((c) => ((firstChoice(c).logprobs as { text_offset: number[] } | null)?.text_offset ?? []));
    expect(offsets).toEqual(whole.text_offset);
  });
});
