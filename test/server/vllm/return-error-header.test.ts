/**
 * llm-d-inference-sim's deterministic error injection (`X-Return-Error: CODE`, v0.9+): a harness
 * written for the simulator forces an error on one request; before, benchtruth answered a 200 and
 * counted a success (review 22).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { returnErrorHeader } from '../../../server/dialects/vllm/errors.ts';
import { startServer, type RunningServer } from '../../helpers/server.ts';

let running: RunningServer;

beforeAll(async () => {
  running = await startServer({ seed: 5, ttftMs: 0, itlMs: 0 });
});

afterAll(async () => {
  await running.close();
});

const post = (path: string, body: Record<string, unknown>, headers: Record<string, string>): Promise<Response> =>
  fetch(`${running.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

const chat = { model: '', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 5 };

describe('X-Return-Error', () => {
  it.each([
    [422, 'UnprocessableEntityError'],
    [429, 'RateLimitError'],
    [503, 'InternalServerError'],
    [401, 'AuthenticationError'],
    [418, 'APIConnectionError'],
  ])('%i is answered at once, in llm-d’s error body, on both routes, streamed or not', async (code, type) => {
    for (const [path, body] of [['/v1/chat/completions', chat], ['/v1/completions', { model: '', prompt: 'hi', max_tokens: 5, stream: true }]] as const) {
      const answer = await post(path, body, { 'x-return-error': String(code), 'x-request-id': `ret-${code}-${path.length}` });
      expect(answer.status).toBe(code);
      expect(await answer.json()).toEqual({ error: { message: `Simulated error triggered by X-Return-Error header (code ${code})`, type, param: null, code } });
      // The refusal has its truth record, as every refusal does.
      const truth = (await (await fetch(`${running.url}/_truth/requests/ret-${code}-${path.length}`)).json()) as { status: number };
      expect(truth.status).toBe(code);
    }
  });

  it('comes before the request is validated, as llm-d checks it before generating', async () => {
    const answer = await post('/v1/chat/completions', { model: 'no-such-model', messages: 'not a list' }, { 'x-return-error': '500' });
    expect(answer.status).toBe(500);
  });

  it('a value that is no integer is a 400 naming it; without the header the request is served', async () => {
    const bad = await post('/v1/chat/completions', chat, { 'x-return-error': 'abc' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toBe('Invalid X-Return-Error header value "abc": must be an integer');
    expect((await post('/v1/chat/completions', chat, {})).status).toBe(200);
  });

  it('reads statuses as Go’s Atoi does, and refuses those no client could read as an error', () => {
    expect(returnErrorHeader(undefined)).toBeNull();
    expect(returnErrorHeader('')).toBeNull();
    expect(returnErrorHeader('+429')?.status).toBe(429);
    expect(returnErrorHeader('4e2')?.message).toBe('Invalid X-Return-Error header value "4e2": must be an integer');
    expect(returnErrorHeader('200')?.status).toBe(400);
    expect(returnErrorHeader('200')?.message).toBe('Invalid X-Return-Error header value "200": benchtruth simulates the error statuses 400 to 599');
  });
});
