import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { truthFromJson, type TruthRecordJson } from '../../contracts/truth.ts';
import { buildServer, type BenchtruthServer } from '../../server/app.ts';

const REFERENCE = new URL('../fixtures/vllm/completions-stream-2025-03.txt', import.meta.url);

let server: BenchtruthServer;

beforeAll(async () => {
  server = buildServer({ seed: 5, ttftMs: 0, itlMs: 0, created: 1741212154, model: 'tweet-summary-1' });
  await server.app.ready();
});

afterAll(async () => {
  await server.close();
});

const post = (body: unknown, headers: Record<string, string> = {}) =>
  server.app.inject({
    method: 'POST',
    url: '/v1/completions',
    headers: { 'content-type': 'application/json', ...headers },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });

function sseData(text: string): string[] {
  return text
    .split('\n\n')
    .filter((block) => block !== '')
    .map((block) => {
      expect(block.startsWith('data: ')).toBe(true);
      return block.slice('data: '.length);
    });
}

describe('POST /v1/completions, streaming', () => {
  it('sends vLLM’s chunk shape: compact JSON, every field in order, nulls included, then [DONE]', async () => {
    const response = await post({ model: 'tweet-summary-1', prompt: 'Write a summary', max_tokens: 5, stream: true }, { 'x-request-id': 'req-1' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(response.headers['x-request-id']).toBe('req-1');
    const data = sseData(response.body);
    expect(data).toHaveLength(6);
    expect(data[5]).toBe('[DONE]');
    data.slice(0, 5).forEach((payload, i) => {
      const chunk = JSON.parse(payload) as Record<string, unknown>;
      expect(Object.keys(chunk)).toEqual(['id', 'object', 'created', 'model', 'choices', 'usage']);
      expect(chunk).toMatchObject({ id: 'cmpl-req-1', object: 'text_completion', created: 1741212154, model: 'tweet-summary-1', usage: null });
      const choice = (chunk.choices as Array<Record<string, unknown>>)[0] as Record<string, unknown>;
      expect(Object.keys(choice)).toEqual(['index', 'text', 'logprobs', 'finish_reason', 'stop_reason', 'prompt_token_ids', 'token_ids']);
      expect(choice.finish_reason).toBe(i === 4 ? 'length' : null);
      expect(JSON.stringify(chunk)).toBe(payload);
    });
  });

  it('has the same fields, in the same order, as a real vLLM capture (which predates prompt_token_ids/token_ids)', async () => {
    const capture = readFileSync(REFERENCE, 'utf8');
    const realChunks = capture
      .split('\n')
      .filter((line) => line.startsWith('data: {'))
      .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
    const response = await post({ model: 'tweet-summary-1', prompt: 'x', max_tokens: 3, stream: true });
    const ours = sseData(response.body)
      .filter((d) => d !== '[DONE]')
      .map((d) => JSON.parse(d) as Record<string, unknown>);
    const olderShape = (choice: Record<string, unknown>) => Object.keys(choice).filter((k) => k !== 'prompt_token_ids' && k !== 'token_ids');
    expect(Object.keys(ours[0] as object)).toEqual(Object.keys(realChunks[0] as object));
    const realChoice = (realChunks[0]?.choices as Array<Record<string, unknown>>)[0] as Record<string, unknown>;
    const ourChoice = (ours[0]?.choices as Array<Record<string, unknown>>)[0] as Record<string, unknown>;
    expect(olderShape(ourChoice)).toEqual(Object.keys(realChoice));
  });

  it('adds one usage chunk before [DONE] with include_usage, and running usage with continuous_usage_stats', async () => {
    const response = await post({ prompt: 'one two three', max_tokens: 4, stream: true, stream_options: { include_usage: true, continuous_usage_stats: true } });
    const data = sseData(response.body);
    expect(data).toHaveLength(6);
    const usageChunk = JSON.parse(data[4] as string) as { choices: unknown[]; usage: Record<string, number> };
    expect(usageChunk.choices).toEqual([]);
    expect(Object.keys(usageChunk.usage)).toEqual(['prompt_tokens', 'total_tokens', 'completion_tokens']);
    expect(usageChunk.usage).toEqual({ prompt_tokens: 3, total_tokens: 7, completion_tokens: 4 });
    data.slice(0, 4).forEach((payload, i) => {
      expect((JSON.parse(payload) as { usage: { completion_tokens: number } }).usage.completion_tokens).toBe(i + 1);
    });
  });

  it('honours max_tokens exactly and gives the same text for the same seed and request id', async () => {
    const a = await post({ prompt: 'p', max_tokens: 37, stream: true }, { 'x-request-id': 'same' });
    const b = await post({ prompt: 'p', max_tokens: 37, stream: true }, { 'x-request-id': 'same' });
    expect(sseData(a.body)).toHaveLength(38);
    expect(a.body).toBe(b.body);
  });
});

describe('POST /v1/completions, non-streaming', () => {
  it('answers one JSON object with the text and usage', async () => {
    const response = await post({ prompt: 'a b c d', max_tokens: 6 }, { 'x-request-id': 'plain' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/json');
    const body = JSON.parse(response.body) as { id: string; choices: Array<{ text: string; finish_reason: string }>; usage: Record<string, number> };
    expect(body.id).toBe('cmpl-plain');
    expect(body.choices[0]?.finish_reason).toBe('length');
    expect(body.usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 6, total_tokens: 10 });
  });
});

describe('bad input gets vLLM’s error shape and a 4xx, never a 500', () => {
  it.each([
    ['malformed JSON', '{"prompt": ', 400, 'Bad Request'],
    ['an empty body', '', 400, 'Bad Request'],
    ['a JSON array', '[1,2]', 400, 'Bad Request'],
    ['a prompt of the wrong type', { prompt: 5 }, 400, 'Bad Request'],
    ['max_tokens = 0', { prompt: 'x', max_tokens: 0 }, 400, 'BadRequestError'],
    ['max_tokens negative', { prompt: 'x', max_tokens: -3 }, 400, 'BadRequestError'],
    ['max_tokens not an integer', { prompt: 'x', max_tokens: 2.5 }, 400, 'Bad Request'],
    ['max_tokens a word', { prompt: 'x', max_tokens: 'five' }, 400, 'Bad Request'],
    ['stream not a boolean', { prompt: 'x', stream: 'maybe' }, 400, 'Bad Request'],
    ['stream_options without stream', { prompt: 'x', stream_options: { include_usage: true } }, 400, 'Bad Request'],
    ['an unknown model', { prompt: 'x', model: 'gpt-9' }, 404, 'NotFoundError'],
    ['a context over max_model_len', { prompt: 'x', max_tokens: 10_000_000 }, 400, 'BadRequestError'],
  ])('%s → %s', async (_name, body, status, type) => {
    const response = await post(body);
    expect(response.statusCode).toBe(status);
    const parsed = JSON.parse(response.body) as { error: Record<string, unknown> };
    expect(Object.keys(parsed.error)).toEqual(['message', 'type', 'param', 'code']);
    expect(parsed.error.code).toBe(status);
    expect(parsed.error.type).toBe(type);
    expect(response.headers['x-request-id']).toBeTruthy();
  });
});

describe('truth records', () => {
  it('serves the truth of a finished request at /_truth/requests/:id, with the exact bytes it sent', async () => {
    const response = await post({ prompt: 'x', max_tokens: 3, stream: true }, { 'x-request-id': 'truth-1' });
    const truthResponse = await server.app.inject({ method: 'GET', url: '/_truth/requests/truth-1' });
    expect(truthResponse.statusCode).toBe(200);
    const json = JSON.parse(truthResponse.body) as TruthRecordJson;
    const record = truthFromJson(json);
    expect(Buffer.from(record.body).toString('utf8')).toBe(response.body);
    expect(record.tokens).toHaveLength(3);
    expect(record.events.map((e) => e.kind)).toEqual(['content', 'content', 'finish', 'done']);
    expect(record.writes.every((w) => w.actualMs !== null)).toBe(true);
    expect(json.writes.map((w) => Buffer.from(w.base64, 'base64').toString()).join('')).toBe(response.body);
    expect(record.end?.how).toBe('completed');
    // DESIGN §3: every actual time also as an absolute stamp from the one process-wide origin.
    const end = json.end as NonNullable<TruthRecordJson['end']>;
    expect(json.headersEpochMs).toBe(json.arrivalEpochMs + (json.headersMs as number));
    expect(end.atEpochMs).toBe(json.arrivalEpochMs + end.atMs);
    for (const write of json.writes) expect(write.actualEpochMs).toBe(json.arrivalEpochMs + (write.actualMs as number));
    expect(record.end).toEqual({ atMs: end.atMs, how: 'completed' });
  });

  it('answers 404 for an unknown id', async () => {
    const response = await server.app.inject({ method: 'GET', url: '/_truth/requests/nope' });
    expect(response.statusCode).toBe(404);
  });
});

describe('other routes', () => {
  it('GET /health is 200 with an empty body', async () => {
    const response = await server.app.inject({ method: 'GET', url: '/health' });
    expect(response.statusCode).toBe(200);
    expect(response.body).toBe('');
  });

  it('GET /v1/models lists the served model in vLLM’s card shape', async () => {
    const response = await server.app.inject({ method: 'GET', url: '/v1/models' });
    const body = JSON.parse(response.body) as { object: string; data: Array<Record<string, unknown>> };
    expect(body.object).toBe('list');
    expect(body.data[0]).toMatchObject({ id: 'tweet-summary-1', object: 'model', owned_by: 'vllm', root: 'tweet-summary-1', parent: null });
  });
});
