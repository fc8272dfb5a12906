import { getEncoding } from 'js-tiktoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchtruthServer } from '../../../server/app.ts';
import { chunks, firstChoice, injectServer, postTo, type Json } from './vllm-inject.ts';

let server: BenchtruthServer;

beforeAll(async () => {
  server = await injectServer({ loraModules: [{ name: 'sql-lora', path: '/adapters/sql', baseModelName: null }] });
});

afterAll(async () => {
  await server.close();
});

const get = (url: string, headers: Record<string, string> = {}) => server.app.inject({ method: 'GET', url, headers });
const post = (url: string, body: unknown, headers: Record<string, string> = {}) => postTo(server, url, body, headers);

describe('/v1/models and LoRA adapters', () => {
  it('lists the base model card, then each adapter with parent = base and no max_model_len', async () => {
    const body = JSON.parse((await get('/v1/models')).body) as { object: string; data: Json[] };
    expect(body.object).toBe('list');
    expect(body.data.map((c) => [c.id, c.root, c.parent, c.max_model_len])).toEqual([
      ['fake-model', 'fake-model', null, 32768],
      ['sql-lora', '/adapters/sql', 'fake-model', null],
    ]);
    expect(Object.keys(body.data[0] as Json)).toEqual(['id', 'object', 'created', 'owned_by', 'root', 'parent', 'max_model_len', 'permission']);
  });

  it('loads and unloads adapters at run time with vLLM’s messages, and serves requests under an adapter’s name', async () => {
    const load = await post('/v1/load_lora_adapter', { lora_name: 'chat-lora', lora_path: '/adapters/chat' });
    expect(load.statusCode).toBe(200);
    expect(load.body).toBe("Success: LoRA adapter 'chat-lora' added successfully.");
    // Starlette's bare Response: no content type.
    expect(load.headers['content-type']).toBeUndefined();
    const again = await post('/v1/load_lora_adapter', { lora_name: 'chat-lora', lora_path: '/adapters/chat' });
    expect(again.statusCode).toBe(400);
    expect(JSON.parse(again.body)).toEqual({ error: { message: "The lora adapter 'chat-lora' has already been loaded.", type: 'InvalidUserInput', param: null, code: 400 } });
    const served = JSON.parse((await post('/v1/chat/completions', { model: 'chat-lora', messages: [{ role: 'user', content: 'x' }], max_tokens: 1 })).body) as Json;
    expect(served.model).toBe('chat-lora');
    const unload = await post('/v1/unload_lora_adapter', { lora_name: 'chat-lora' });
    expect(unload.body).toBe("Success: LoRA adapter 'chat-lora' removed successfully.");
    const gone = await post('/v1/unload_lora_adapter', { lora_name: 'chat-lora' });
    expect(gone.statusCode).toBe(404);
    const unknown = await post('/v1/completions', { model: 'chat-lora', prompt: 'x' });
    expect(JSON.parse(unknown.body)).toEqual({ error: { message: 'The model `chat-lora` does not exist.', type: 'NotFoundError', param: null, code: 404 } });
  });

  it('checks the LoRA request models as pydantic does before vLLM’s own checks (audit 9-Y1)', async () => {
    const message = async (url: string, body: Json): Promise<string> => (JSON.parse((await post(url, body)).body) as { error: { message: string; type: string } }).error.message;
    expect(await message('/v1/load_lora_adapter', { lora_name: 'x' })).toBe("[{'type': 'missing', 'loc': ('body', 'lora_path'), 'msg': 'Field required', 'input': {'lora_name': 'x'}}]");
    expect(await message('/v1/load_lora_adapter', { lora_name: 5, lora_path: '/p' })).toBe("[{'type': 'string_type', 'loc': ('body', 'lora_name'), 'msg': 'Input should be a valid string', 'input': 5}]");
    // Present but empty: vLLM's own check.
    expect(await message('/v1/load_lora_adapter', { lora_name: '', lora_path: '/p' })).toBe("Both 'lora_name' and 'lora_path' must be provided.");
    expect(await message('/v1/unload_lora_adapter', {})).toBe("[{'type': 'missing', 'loc': ('body', 'lora_name'), 'msg': 'Field required', 'input': {}}]");
    expect(await message('/v1/unload_lora_adapter', { lora_name: 'x', lora_int_id: 'y' })).toMatch(/^\[\{'type': 'int_parsing', 'loc': \('body', 'lora_int_id'\)/);
  });
});

describe('/version, /tokenize, /detokenize', () => {
  it('reports the dialect’s release', async () => {
    expect(JSON.parse((await get('/version')).body)).toEqual({ version: '0.11.0' });
    const older = await injectServer({ vllmVersion: '0.10.1' });
    expect(JSON.parse((await older.app.inject({ method: 'GET', url: '/version' })).body)).toEqual({ version: '0.10.1' });
    await older.close();
  });

  it('tokenizes a prompt or chat messages in vLLM’s shape and detokenizes vocabulary ids back', async () => {
    const tokenized = JSON.parse((await post('/tokenize', { prompt: ' the model', return_token_strs: true })).body) as Json;
    expect(Object.keys(tokenized)).toEqual(['count', 'max_model_len', 'tokens', 'token_strs']);
    expect(tokenized).toMatchObject({ count: 2, max_model_len: 32768, token_strs: [' the', ' model'] });
    const chat = JSON.parse((await post('/tokenize', { messages: [{ role: 'user', content: 'a b' }] })).body) as Json;
    expect(chat).toMatchObject({ count: 2, token_strs: null });
    const detokenized = JSON.parse((await post('/detokenize', { tokens: tokenized.tokens })).body) as Json;
    expect(detokenized).toEqual({ prompt: ' the model' });
    const outside = await post('/detokenize', { tokens: [-5] });
    expect(outside.statusCode).toBe(400);
  });

  it('/detokenize decodes the hashed ids of words outside the vocabulary that it handed out (audit 13-Z4-7)', async () => {
    const text = 'zyxwv qwertyuiop plainly';
    const ids = (JSON.parse((await post('/tokenize', { prompt: text })).body) as { tokens: number[] }).tokens;
    expect(JSON.parse((await post('/detokenize', { tokens: ids })).body)).toEqual({ prompt: text });
    // Planning never reads what was handed out: an echo stays a function of (seed, request).
    const echoed = JSON.parse((await post('/v1/completions', { prompt: ids, max_tokens: 1, echo: true })).body) as Json;
    expect(firstChoice(echoed).text as string).not.toContain('zyxwv');
    // An id in range that was never handed out has no known word: said so, not "out of vocabulary".
    const unknown = await post('/detokenize', { tokens: [3_999_999] });
    expect(JSON.parse(unknown.body).error.message).toMatch(/^Token id 3999999 cannot be decoded: the builtin tokenizer hashes words/);
    expect(JSON.parse((await post('/detokenize', { tokens: [9_999_999] })).body).error.message).toBe('Token id 9999999 is out of vocabulary');
  });
});

describe('--api-key, --max-body-size, x-request-id', () => {
  it('guards /v1/* only, with vLLM’s bare 401 body', async () => {
    const locked = await injectServer({ apiKey: 'sekret' });
    const denied = await locked.app.inject({ method: 'GET', url: '/v1/models' });
    expect(denied.statusCode).toBe(401);
    expect(denied.body).toBe('{"error":"Unauthorized"}');
    expect((await locked.app.inject({ method: 'GET', url: '/v1/models', headers: { authorization: 'Bearer wrong' } })).statusCode).toBe(401);
    expect((await locked.app.inject({ method: 'GET', url: '/v1/nothing-here' })).statusCode).toBe(401);
    expect((await locked.app.inject({ method: 'GET', url: '/v1/models', headers: { authorization: 'Bearer sekret' } })).statusCode).toBe(200);
    expect((await locked.app.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
    expect((await locked.app.inject({ method: 'GET', url: '/version' })).statusCode).toBe(200);
    await locked.close();
  });

  it('answers 413 in vLLM’s error shape for a body over the limit', async () => {
    const small = await injectServer({ maxBodySizeBytes: 64 });
    const response = await postTo(small, '/v1/completions', { prompt: 'x'.repeat(200) });
    expect(response.statusCode).toBe(413);
    expect(JSON.parse(response.body)).toMatchObject({ error: { type: 'RequestEntityTooLarge', code: 413 } });
    await small.close();
  });

  it('echoes x-request-id on answers and errors alike', async () => {
    expect((await post('/v1/completions', { prompt: 'x', max_tokens: 1 }, { 'x-request-id': 'rid-1' })).headers['x-request-id']).toBe('rid-1');
    expect((await post('/v1/completions', { prompt: 5 }, { 'x-request-id': 'rid-2' })).headers['x-request-id']).toBe('rid-2');
  });
});

describe('text modes and tokenizers', () => {
  it('echo mode hands back the prompt (completions) and the last message (chat), then stops', async () => {
    const echo = await injectServer({ mode: 'echo' });
    const completion = JSON.parse((await postTo(echo, '/v1/completions', { prompt: 'Say 你好 to me', max_tokens: 50 })).body) as Json;
    expect(firstChoice(completion)).toMatchObject({ text: 'Say 你好 to me', finish_reason: 'stop' });
    const truncated = JSON.parse((await postTo(echo, '/v1/completions', { prompt: 'one two three', max_tokens: 2 })).body) as Json;
    expect(firstChoice(truncated)).toMatchObject({ text: 'one two', finish_reason: 'length' });
    const chat = chunks((await postTo(echo, '/v1/chat/completions', { messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'ping 🚀' }], max_tokens: 9, stream: true })).body);
    expect(chat.map((c) => (firstChoice(c).delta as Json).content).join('')).toBe('ping 🚀');
    await echo.close();
  });

  it('random mode includes multi-byte tokens at the configured rate', async () => {
    const heavy = await injectServer({ multibyteRate: 1 });
    const text = firstChoice(JSON.parse((await postTo(heavy, '/v1/completions', { prompt: 'x', max_tokens: 20 })).body) as Json).text as string;
    expect([...text].every((ch) => ch.codePointAt(0) as number > 0x7f)).toBe(true);
    await heavy.close();
  });

  it('--tokenizer cl100k_base counts prompt tokens exactly as tiktoken does', async () => {
    const bpe = await injectServer({ tokenizer: 'cl100k_base' });
    const encoding = getEncoding('cl100k_base');
    const prompt = 'The quick brown fox — 狐狸 🦊 — jumps over 13 lazy dogs.';
    const usage = (JSON.parse((await postTo(bpe, '/v1/completions', { prompt, max_tokens: 1 })).body) as { usage: Json }).usage;
    expect(usage.prompt_tokens).toBe(encoding.encode(prompt).length);
    const messages = [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: prompt }];
    const chatUsage = (JSON.parse((await postTo(bpe, '/v1/chat/completions', { messages, max_tokens: 1 })).body) as { usage: Json }).usage;
    expect(chatUsage.prompt_tokens).toBe(messages.reduce((n, m) => n + encoding.encode(m.content).length, 0));
    const tokenized = JSON.parse((await postTo(bpe, '/tokenize', { prompt })).body) as Json;
    expect(tokenized.tokens).toEqual(encoding.encode(prompt));
    expect(JSON.parse((await postTo(bpe, '/detokenize', { tokens: tokenized.tokens })).body)).toEqual({ prompt });
    const echo = await injectServer({ tokenizer: 'cl100k_base', mode: 'echo' });
    expect(firstChoice(JSON.parse((await postTo(echo, '/v1/completions', { prompt, max_tokens: 100 })).body) as Json).text).toBe(prompt);
    await echo.close();
    await bpe.close();
  });
});

describe('wrong methods', () => {
  it.each([
    ['GET', '/v1/completions', 'POST'],
    ['PUT', '/v1/chat/completions', 'POST'],
    ['POST', '/v1/models', 'GET'],
    ['DELETE', '/version', 'GET'],
  ] as const)('%s %s → 405 allow %s, as FastAPI answers', async (method, url, allow) => {
    const response = await server.app.inject({ method, url });
    expect(response.statusCode).toBe(405);
    expect(response.headers.allow).toBe(allow);
    expect(response.body).toBe('{"detail":"Method Not Allowed"}');
  });
});

describe('a trailing slash (audit 13-Z4-2)', () => {
  it.each([
    ['POST', '/v1/completions/', 'http://bench.test:8000/v1/completions'],
    ['GET', '/v1/models//?x=1', 'http://bench.test:8000/v1/models?x=1'],
    ['PUT', '/health/', 'http://bench.test:8000/health'],
    // A percent-encoded path routes as Starlette routes it (audit 13-R20-4; the absolute form, which
    // inject rewrites, is tested on a socket in request-id-safety.test.ts).
    ['POST', '/v1/completion%73/', 'http://bench.test:8000/v1/completions'],
  ] as const)('%s %s → 307 to the path a route serves, as Starlette redirects slashes', async (method, url, location) => {
    const response = await server.app.inject({ method, url, headers: { host: 'bench.test:8000' } });
    expect(response.statusCode).toBe(307);
    expect(response.headers.location).toBe(location);
    expect(response.body).toBe('');
  });

  it('a path no route serves either way stays a 404', async () => {
    for (const url of ['/v1/completion/', '/nothing', '/v1/models/x/']) {
      const response = await get(url);
      expect(response.statusCode, url).toBe(404);
      expect(response.body).toBe('{"detail":"Not Found"}');
    }
  });
});

describe('truth of chat streams', () => {
  it('records the exact bytes, a role event carrying no token, and one token per content event', async () => {
    const response = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], max_tokens: 3, n: 2, stream: true, stream_options: { include_usage: true } }, { 'x-request-id': 'chat-truth' });
    const truth = JSON.parse((await get('/_truth/requests/chat-truth')).body) as { endpoint: string; bodyBase64: string; events: Array<{ kind: string; tokenCount: number }>; tokens: unknown[] };
    expect(truth.endpoint).toBe('/v1/chat/completions');
    expect(Buffer.from(truth.bodyBase64, 'base64').toString('utf8')).toBe(response.body);
    expect(truth.events.map((e) => e.kind)).toEqual(['role', 'role', 'content', 'content', 'content', 'content', 'finish', 'finish', 'usage', 'done']);
    expect(truth.events.map((e) => e.tokenCount)).toEqual([0, 0, 1, 1, 1, 1, 1, 1, 0, 0]);
    expect(truth.tokens).toHaveLength(6);
  });
});
