/**
 * Fields vLLM 0.10.1/0.11 refuses that benchtruth used to serve (audit 7-E): `best_of` (V1 has
 * none), chat's `tool_choice` checks, typed fields of the wrong type, `logits_processors`,
 * `allowed_token_ids`; and a JSON null body answered as a missing one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchtruthServer } from '../../../server/app.ts';
import { injectServer, postTo, sseData, truthOf } from './vllm-inject.ts';

let server: BenchtruthServer;

beforeAll(async () => {
  server = await injectServer();
});

afterAll(async () => {
  await server.close();
});

type Json = Record<string, unknown>;
const post = (url: string, body: unknown, headers: Record<string, string> = {}) => postTo(server, url, body, headers);
const errorOf = (body: string): Json => (JSON.parse(body) as { error: Json }).error;
const COMPLETION = { prompt: 'hi', max_tokens: 2 };
const USER = [{ role: 'user', content: 'hi' }];
const CHAT = { messages: USER, max_tokens: 2 };
const TOOLS = [{ type: 'function', function: { name: 'f' } }];
const CORRECT = 'Correct usage: `{"type": "function", "function": {"name": "my_function"}}`';

async function refused(url: string, body: unknown): Promise<Json> {
  const response = await post(url, body);
  expect(response.statusCode).toBe(400);
  return errorOf(response.body);
}

describe('best_of (vLLM V1 samples no best-of)', () => {
  it.each(['/v1/completions', '/v1/chat/completions'])('%s: best_of 2 → 400 "vLLM V1 does not yet support best_of."', async (url) => {
    const error = await refused(url, { ...(url === '/v1/completions' ? COMPLETION : CHAT), best_of: 2 });
    expect(error).toEqual({ message: 'vLLM V1 does not yet support best_of.', type: 'BadRequestError', param: null, code: 400 });
  });

  it('streamed with best_of ≠ n: SamplingParams refuses output_kind=DELTA, a plain 400 on both endpoints (review 21-pydantic)', async () => {
    for (const url of ['/v1/completions', '/v1/chat/completions']) {
      for (const extra of [{ best_of: 2 }, { best_of: 3, n: 2 }]) {
        const response = await post(url, { ...(url === '/v1/completions' ? COMPLETION : CHAT), ...extra, stream: true });
        expect(response.statusCode).toBe(400);
        expect(response.headers['content-type']).toMatch(/^application\/json/);
        expect(errorOf(response.body)).toEqual({ message: 'best_of must equal n to use output_kind=DELTA', type: 'BadRequestError', param: null, code: 400 });
      }
    }
  });

  it('streamed with best_of = n, the engine refuses it after the 200: one error event, then [DONE], recorded', async () => {
    const response = await post('/v1/completions', { ...COMPLETION, best_of: 2, n: 2, stream: true }, { 'x-request-id': 'bo-stream' });
    expect(response.statusCode).toBe(200);
    expect(sseData(response.body)).toEqual(['{"error": {"message": "vLLM V1 does not yet support best_of.", "type": "BadRequestError", "param": null, "code": 400}}', '[DONE]']);
    expect((await truthOf(server, 'bo-stream')).status).toBe(200);
  });

  it('best_of below n → SamplingParams’ 400 before the engine', async () => {
    const error = await refused('/v1/completions', { ...COMPLETION, n: 2, best_of: 1 });
    expect(error.message).toBe('best_of must be greater than or equal to n, got n=2 and best_of=1.');
  });

  it('best_of 1 is served, streamed too (= n); best_of 0 is _verify_args’ 400 (falsy to __post_init__, not to it; review 21-pydantic)', async () => {
    expect((await post('/v1/completions', { ...COMPLETION, best_of: 1 })).statusCode).toBe(200);
    const streamed = await post('/v1/completions', { ...COMPLETION, best_of: 1, stream: true });
    expect(streamed.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(sseData(streamed.body).at(-1)).toBe('[DONE]');
    for (const url of ['/v1/completions', '/v1/chat/completions']) {
      expect((await refused(url, { ...(url === '/v1/completions' ? COMPLETION : CHAT), best_of: 0 })).message).toBe('best_of must be at least 1, got 0');
    }
  });

  it('a best_of that is not an integer is pydantic’s int_parsing', async () => {
    const error = await refused('/v1/completions', { ...COMPLETION, best_of: 'x' });
    expect(error.type).toBe('Bad Request');
    expect(error.message).toBe("[{'type': 'int_parsing', 'loc': ('body', 'best_of'), 'msg': 'Input should be a valid integer, unable to parse string as an integer', 'input': 'x'}]");
  });
});

describe('chat tool_choice (vLLM’s check_tool_usage)', () => {
  it.each([
    ['an unknown string', 'sometimes', 'Invalid value for `tool_choice`: sometimes! Only named tools, "none", "auto" or "required" are supported.'],
    ['a named tool not in tools', { type: 'function', function: { name: 'g' } }, 'The tool specified in `tool_choice` does not match any of the specified `tools`'],
    ['a named choice without function', { type: 'function' }, `Invalid value for \`function\`: \`None\` in \`tool_choice\`! ${CORRECT}`],
    ['a function without name', { type: 'function', function: {} }, `Expected field \`name\` in \`function\` in \`tool_choice\`! ${CORRECT}`],
    ['an empty function name', { type: 'function', function: { name: '' } }, `Invalid \`name\` in \`function\`: \`\` in \`tool_choice\`! ${CORRECT}`],
  ])('%s → 400 value_error', async (_name, toolChoice, message) => {
    const error = await refused('/v1/chat/completions', { ...CHAT, tools: TOOLS, tool_choice: toolChoice });
    expect(error.type).toBe('Bad Request');
    expect(error.message).toContain("'type': 'value_error', 'loc': ('body',), 'msg': ");
    expect(error.message).toContain(`Value error, ${message}`);
  });

  it('serves tool_choice null with tools (only an absent tool_choice defaults to "auto")', async () => {
    expect((await post('/v1/chat/completions', { ...CHAT, tools: TOOLS, tool_choice: null })).statusCode).toBe(200);
    const absent = await refused('/v1/chat/completions', { ...CHAT, tools: TOOLS });
    expect(absent.message).toBe('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set');
  });

  it('serves a named tool that is in tools, and "required"', async () => {
    expect((await post('/v1/chat/completions', { ...CHAT, tools: TOOLS, tool_choice: { type: 'function', function: { name: 'f' } } })).statusCode).toBe(200);
    expect((await post('/v1/chat/completions', { ...CHAT, tools: TOOLS, tool_choice: 'required' })).statusCode).toBe(200);
  });
});

describe('typed fields are type-checked as vLLM’s pydantic models do', () => {
  it.each([
    ['/v1/chat/completions', { response_format: { type: 'xml' } }, "{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text', 'json_object' or 'json_schema'\", 'input': 'xml', 'ctx': {'expected': \"'text', 'json_object' or 'json_schema'\"}}"],
    ['/v1/chat/completions', { response_format: 'json' }, "{'type': 'model_attributes_type', 'loc': ('body', 'response_format', 'ResponseFormat'), 'msg': 'Input should be a valid dictionary or object to extract fields from', 'input': 'json'}, {'type': 'model_attributes_type', 'loc': ('body', 'response_format', 'StructuralTagResponseFormat'), 'msg': 'Input should be a valid dictionary or object to extract fields from', 'input': 'json'}"],
    ['/v1/chat/completions', { reasoning_effort: 'extreme' }, "{'type': 'literal_error', 'loc': ('body', 'reasoning_effort'), 'msg': \"Input should be 'low', 'medium' or 'high'\", 'input': 'extreme', 'ctx': {'expected': \"'low', 'medium' or 'high'\"}}"],
    ['/v1/chat/completions', { user: 5 }, "{'type': 'string_type', 'loc': ('body', 'user'), 'msg': 'Input should be a valid string', 'input': 5}"],
    ['/v1/chat/completions', { logit_bias: [1] }, "{'type': 'dict_type', 'loc': ('body', 'logit_bias'), 'msg': 'Input should be a valid dictionary', 'input': [1]}"],
    ['/v1/chat/completions', { echo: 'maybe' }, "{'type': 'bool_parsing', 'loc': ('body', 'echo'), 'msg': 'Input should be a valid boolean, unable to interpret input', 'input': 'maybe'}"],
    ['/v1/chat/completions', { include_reasoning: 'x' }, "'loc': ('body', 'include_reasoning')"],
    ['/v1/chat/completions', { parallel_tool_calls: 'x' }, "'loc': ('body', 'parallel_tool_calls')"],
    ['/v1/chat/completions', { skip_special_tokens: 'x' }, "'loc': ('body', 'skip_special_tokens')"],
    ['/v1/completions', { user: 5 }, "'loc': ('body', 'user')"],
    ['/v1/completions', { logit_bias: { '5': 'high' } }, "{'type': 'float_parsing', 'loc': ('body', 'logit_bias', '5'), 'msg': 'Input should be a valid number, unable to parse string as a number', 'input': 'high'}"],
    ['/v1/completions', { response_format: { type: 'xml' } }, "'loc': ('body', 'response_format', 'type')"],
    ['/v1/completions', { stop_token_ids: 'x' }, "{'type': 'list_type', 'loc': ('body', 'stop_token_ids'), 'msg': 'Input should be a valid list', 'input': 'x'}"],
    ['/v1/completions', { allowed_token_ids: [1, 'a'] }, "{'type': 'int_parsing', 'loc': ('body', 'allowed_token_ids', 1), 'msg': 'Input should be a valid integer, unable to parse string as an integer', 'input': 'a'}"],
    ['/v1/completions', { truncate_prompt_tokens: 'x' }, "'loc': ('body', 'truncate_prompt_tokens')"],
    ['/v1/completions', { logits_processors: 'a' }, "{'type': 'list_type', 'loc': ('body', 'logits_processors'), 'msg': 'Input should be a valid list', 'input': 'a'}"],
  ])('%s %j → 400 Bad Request', async (url, extra, issue) => {
    const error = await refused(url, { ...(url === '/v1/completions' ? COMPLETION : CHAT), ...extra });
    expect(error.type).toBe('Bad Request');
    expect(error.message).toContain(issue);
  });

  it('accepts the values vLLM accepts', async () => {
    const chat = { ...CHAT, response_format: { type: 'json_object' }, reasoning_effort: 'low', user: 'u', logit_bias: { '5': 1.5 }, echo: false, include_reasoning: 'true', parallel_tool_calls: 1, skip_special_tokens: true };
    expect((await post('/v1/chat/completions', chat)).statusCode).toBe(200);
    const completion = { ...COMPLETION, user: 'u', logit_bias: { '5': '-2' }, response_format: { type: 'text' }, stop_token_ids: [1, '2'], truncate_prompt_tokens: 5, allowed_token_ids: [1, 2], logits_processors: [] };
    expect((await post('/v1/completions', completion)).statusCode).toBe(200);
  });
});

describe('logits_processors and allowed_token_ids (vLLM’s own refusals)', () => {
  it('a logit_bias key Python’s int() refuses → 400 with its ValueError; the keys int() reads are served (audit 16-V finding 4)', async () => {
    for (const url of ['/v1/completions', '/v1/chat/completions']) {
      const error = await refused(url, { ...(url === '/v1/completions' ? COMPLETION : CHAT), logit_bias: { '5': 1, abc: 1 } });
      expect(error).toMatchObject({ type: 'BadRequestError', message: "invalid literal for int() with base 10: 'abc'" });
    }
    expect((await refused('/v1/completions', { ...COMPLETION, logit_bias: { '1.5': 1 } })).message).toBe("invalid literal for int() with base 10: '1.5'");
    expect((await post('/v1/completions', { ...COMPLETION, logit_bias: { ' 5 ': 1, '+7': 2, '1_0': -1, '٣': 0 } })).statusCode).toBe(200);
  });

  it('a non-empty logits_processors → 400 without --logits-processor-pattern (vLLM’s words, typo kept)', async () => {
    const error = await refused('/v1/completions', { ...COMPLETION, logits_processors: ['a'] });
    expect(error.message).toBe('The `logits_processors` argument is not supported by this server. See --logits-processor-pattern engine argugment for more information.');
    expect(error.type).toBe('BadRequestError');
  });

  it('an empty or out-of-vocabulary allowed_token_ids → the engine’s 400 (streamed: after the 200)', async () => {
    expect((await refused('/v1/completions', { ...COMPLETION, allowed_token_ids: [] })).message).toBe('allowed_token_ids is not None and empty!');
    expect((await refused('/v1/chat/completions', { ...CHAT, allowed_token_ids: [10_000_000] })).message).toBe('allowed_token_ids contains out-of-vocab token id!');
    const streamed = await post('/v1/chat/completions', { ...CHAT, allowed_token_ids: [], stream: true });
    expect(streamed.statusCode).toBe(200);
    expect(sseData(streamed.body)[0]).toContain('allowed_token_ids is not None and empty!');
  });

  it('logit_bias keys outside the vocabulary → the engine’s 400 listing them in order, before allowed_token_ids (audit 17-V4)', async () => {
    // The built-in tokenizer's vocabulary: ids 0 … 2^22 − 1.
    const message = (await refused('/v1/completions', { ...COMPLETION, logit_bias: { '99999999': 1, '5': 0, ' -5 ': 2, '٤١٩٤٣٠٤': 1 }, allowed_token_ids: [] })).message;
    expect(message).toBe('token_id(s) [99999999, -5, 4194304] in logit_bias contain out-of-vocab token ids. Vocabulary size: 4194304');
    expect((await post('/v1/chat/completions', { ...CHAT, logit_bias: { '4194303': 1, '0': -1 } })).statusCode).toBe(200);
    const streamed = await post('/v1/chat/completions', { ...CHAT, logit_bias: { '-1': 1 }, stream: true });
    expect(streamed.statusCode).toBe(200);
    expect(sseData(streamed.body)[0]).toContain('token_id(s) [-1] in logit_bias contain out-of-vocab token ids.');
  });

  it('prompt_logprobs above --max-logprobs (20) → 400, checked after the sample logprobs; a non-integer is a type error (audit 17-V3)', async () => {
    expect((await refused('/v1/completions', { ...COMPLETION, prompt_logprobs: 21 })).message).toBe('Requested prompt logprobs of 21, which is greater than max allowed: 20');
    expect((await refused('/v1/chat/completions', { ...CHAT, prompt_logprobs: 1000 })).message).toBe('Requested prompt logprobs of 1000, which is greater than max allowed: 20');
    expect((await refused('/v1/completions', { ...COMPLETION, logprobs: 21, prompt_logprobs: 21 })).message).toBe('Requested sample logprobs of 21, which is greater than max allowed: 20');
    expect((await post('/v1/completions', { ...COMPLETION, prompt_logprobs: 20 })).statusCode).toBe(200);
    expect((await refused('/v1/completions', { ...COMPLETION, prompt_logprobs: 'x' })).message).toContain("'loc': ('body', 'prompt_logprobs')");
  });

  it('−1 logprobs (0.11: the whole vocabulary) pass the request checks and meet the engine cap; other negatives are 0.11\'s messages (review 21-pydantic)', async () => {
    expect((await refused('/v1/completions', { ...COMPLETION, prompt_logprobs: -1 })).message).toBe('Requested prompt logprobs of 4194304, which is greater than max allowed: 20');
    expect((await refused('/v1/chat/completions', { ...CHAT, logprobs: true, top_logprobs: -1 })).message).toBe('Requested sample logprobs of 4194304, which is greater than max allowed: 20');
    expect((await refused('/v1/completions', { ...COMPLETION, prompt_logprobs: -2 })).message).toContain('`prompt_logprobs` must be a positive value or -1.');
    expect((await refused('/v1/completions', { ...COMPLETION, prompt_logprobs: -1, stream: true })).message).toContain('`prompt_logprobs` are not available when `stream=True`.');
    expect((await refused('/v1/chat/completions', { ...CHAT, top_logprobs: -1 })).message).toContain('when using `top_logprobs`, `logprobs` must be set to true.');
    expect((await refused('/v1/chat/completions', { ...CHAT, logprobs: true, top_logprobs: -2 })).message).toContain('`top_logprobs` must be a positive value or -1.');
    const missing = await refused('/v1/completions', { max_tokens: 2 });
    expect(missing.message).toContain('Either prompt or prompt_embeds must be provided and non-empty.');
  });
});

describe('a JSON null body is a missing body, as FastAPI answers it', () => {
  it.each(['/v1/completions', '/v1/chat/completions', '/tokenize'])('%s', async (url) => {
    const error = await refused(url, 'null');
    expect(error.message).toBe("[{'type': 'missing', 'loc': ('body',), 'msg': 'Field required', 'input': None}]");
  });
});

describe('chat messages as openai’s message types take them (review 21-pydantic)', () => {
  it('null content only for an assistant or a function; a name is a text', async () => {
    for (const message of [{ role: 'user', content: null }, { role: 'system', content: null }, { role: 'tool', content: null, tool_call_id: 'x' }, { role: 'function', content: null }]) {
      const error = await refused('/v1/chat/completions', { messages: [message], max_tokens: 2 });
      expect(error.message).toContain("'type': 'string_type', 'loc': ('body', 'messages', 0, 'content', 'str')");
    }
    expect((await refused('/v1/chat/completions', { messages: [{ role: 'user', content: 'hi', name: null }], max_tokens: 2 })).message).toContain("'loc': ('body', 'messages', 0, 'name')");
    expect((await refused('/v1/chat/completions', { messages: [{ role: 'user', content: 'hi', name: 5 }], max_tokens: 2 })).message).toContain("'loc': ('body', 'messages', 0, 'name')");
    for (const messages of [[{ role: 'user', content: 'hi' }, { role: 'assistant', content: null }], [{ role: 'user', content: 'hi' }, { role: 'function', name: 'f', content: null }], [{ role: 'user' }], [{ role: 'user', content: 'hi', name: 'n' }]]) {
      expect((await post('/v1/chat/completions', { messages, max_tokens: 2 })).statusCode).toBe(200);
    }
  });
});

describe('a nested model given no mapping (review 21-pydantic)', () => {
  it('is model_attributes_type, as FastAPI validates with from_attributes', async () => {
    const expected = "'type': 'model_attributes_type', 'loc': ('body', 'stream_options'), 'msg': 'Input should be a valid dictionary or object to extract fields from'";
    expect((await refused('/v1/completions', { ...COMPLETION, stream: true, stream_options: 'x' })).message).toContain(expected);
    expect((await refused('/v1/chat/completions', { ...CHAT, tools: [5], tool_choice: 'none' })).message).toContain("'type': 'model_attributes_type', 'loc': ('body', 'tools', 0)");
    expect((await refused('/v1/chat/completions', { ...CHAT, tools: [{ type: 'function', function: 5 }], tool_choice: 'none' })).message).toContain("'type': 'model_attributes_type', 'loc': ('body', 'tools', 0, 'function')");
  });
});

describe('stop: Union[str, list[str]] (review 21-pydantic)', () => {
  it('reports each member’s errors as pydantic 2.13 does', async () => {
    const locs = async (stop: unknown): Promise<string[]> => [...String((await refused('/v1/completions', { ...COMPLETION, stop })).message).matchAll(/'loc': \(([^)]*)\)/g)].map((m) => m[1] as string);
    expect(await locs(5)).toEqual(["'body', 'stop', 'str'", "'body', 'stop', 'list[str]'"]);
    expect(await locs(['a', 1])).toEqual(["'body', 'stop', 'str'", "'body', 'stop', 'list[str]', 1"]);
    expect(await locs([1, 2])).toEqual(["'body', 'stop', 'str'", "'body', 'stop', 'list[str]', 0", "'body', 'stop', 'list[str]', 1"]);
  });
});

describe('two failing before-validators: the one pydantic runs first answers (review 23)', () => {
  // pydantic runs model_validator(mode="before") last-defined first: in protocol.py's reverse order.
  it.each([
    ['/v1/completions', { prompt: '', stream_options: { include_usage: true } }, 'Either prompt or prompt_embeds must be provided and non-empty.'],
    ['/v1/completions', { prompt: 'hi', logprobs: -1, stream_options: { include_usage: true } }, 'Stream options can only be defined when `stream=True`.'],
    ['/v1/completions', { prompt: 'hi', cache_salt: '', logprobs: -1 }, "Parameter 'cache_salt' must be a non-empty string if provided."],
    ['/v1/chat/completions', { messages: USER, top_logprobs: 2, tool_choice: 'auto' }, 'When using `tool_choice`, `tools` must be set.'],
    ['/v1/chat/completions', { messages: USER, top_logprobs: 2, stream_options: { include_usage: true } }, 'when using `top_logprobs`, `logprobs` must be set to true.'],
  ])('%s %j: %s', async (url, body, message) => {
    expect((await refused(url, body)).message).toContain(`Value error, ${message}`);
  });

  it('a chat validator after check_tool_usage echoes the body as it left it: tool_choice "auto" added last', async () => {
    const { message } = await refused('/v1/chat/completions', { messages: USER, tools: TOOLS, top_logprobs: 2 });
    expect(message).toContain('when using `top_logprobs`, `logprobs` must be set to true.');
    expect(message).toContain("'top_logprobs': 2, 'tool_choice': 'auto'}");
  });
});
