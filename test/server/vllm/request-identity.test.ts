/**
 * Who answered what: a request whose id is already running is refused as vLLM V1's
 * OutputProcessor refuses it ("Request id … already running.", a 400, or an error event after
 * the 200 for a stream), and the running request keeps its truth record whole; with POD_NAME and
 * POD_NAMESPACE an answer names its replica, as llm-d-inference-sim's do.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../helpers/server.ts';

let running: RunningServer;

beforeAll(async () => {
  running = await startServer({ seed: 5, ttftMs: 5, itlMs: 20 });
});

afterAll(async () => {
  await running.close();
});

const post = (path: string, body: Record<string, unknown>, id: string): Promise<Response> =>
  fetch(`${running.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': id }, body: JSON.stringify({ model: '', ...body }) });

describe('a request id already running (audit 17-V2)', () => {
  it('is refused with vLLM’s engine id, and the running request’s truth is kept', async () => {
    const first = await post('/v1/completions', { prompt: 'hi', max_tokens: 20, stream: true }, 'dup-1');
    const whole = await post('/v1/completions', { prompt: 'hi', max_tokens: 3 }, 'dup-1');
    expect(whole.status).toBe(400);
    expect(await whole.json()).toEqual({ error: { message: 'Request id cmpl-dup-1-0 already running.', type: 'BadRequestError', param: null, code: 400 } });
    const streamed = await post('/v1/completions', { prompt: 'hi', max_tokens: 3, stream: true, n: 2 }, 'dup-1');
    expect(streamed.status).toBe(200);
    expect(await streamed.text()).toBe('data: {"error": {"message": "Request id 0_cmpl-dup-1-0 already running.", "type": "BadRequestError", "param": null, "code": 400}}\n\ndata: [DONE]\n\n');
    // The engine's ids of another endpoint (chatcmpl-<id>) never collide with a completion's: served.
    const chat = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], max_tokens: 2 }, 'dup-1');
    expect(chat.status).toBe(200);
    await chat.text();
    await first.text();
    const truth = (await (await fetch(`${running.url}/_truth/requests/dup-1`)).json()) as { endpoint: string; tokens: unknown[]; end: { how: string } };
    expect([truth.endpoint, truth.tokens.length, truth.end.how]).toEqual(['/v1/completions', 20, 'completed']);
    // Once it has ended the id is free again.
    const again = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], max_tokens: 2 }, 'dup-1');
    expect(again.status).toBe(200);
  });
});

describe('a non-ASCII request id already running (review 22)', () => {
  it('is escaped in the in-stream error, as json.dumps writes it, and raw in the 400, as JSONResponse writes it', async () => {
    const chat = (stream: boolean, max_tokens: number): Promise<Response> =>
      fetch(`${running.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: '', messages: [{ role: 'user', content: 'x' }], max_tokens, stream, request_id: '日é😀' }),
      });
    const first = await chat(true, 20);
    const streamed = await chat(true, 2);
    expect(await streamed.text()).toBe(
      'data: {"error": {"message": "Request id chatcmpl-\\u65e5\\u00e9\\ud83d\\ude00 already running.", "type": "BadRequestError", "param": null, "code": 400}}\n\ndata: [DONE]\n\n',
    );
    const whole = await chat(false, 2);
    expect(whole.status).toBe(400);
    expect(await whole.text()).toContain('"message":"Request id chatcmpl-日é😀 already running."');
    await first.text();
  });
});

describe('two requests of one id sent at once (audit 17-R2)', () => {
  it('one is served and the other refused, however the isolated engine defers their planning', async () => {
    // Every pair at once; each answer lasts 2 s (100 tokens 20 ms apart), so the second of a
    // pair meets the first in flight however slowly this machine sends them.
    const pairs = Array.from({ length: 10 }, async (_, pair) => {
      const id = `race-${pair}`;
      const answers = await Promise.all([0, 1].map(() => post('/v1/completions', { prompt: 'hi', max_tokens: 100, stream: pair % 2 === 0 }, id)));
      const bodies = await Promise.all(answers.map((answer) => answer.text()));
      return bodies.filter((body) => body.includes(`Request id cmpl-${id}-0 already running.`)).length;
    });
    expect(await Promise.all(pairs)).toEqual(Array.from({ length: 10 }, () => 1));
  });
});

describe('one id on two endpoints at once (audit 17-R7)', () => {
  it('one is served per endpoint; the rest of each endpoint are refused', async () => {
    const chat = (stream: boolean): Promise<Response> => post('/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], max_tokens: 100, stream }, 'mix-1');
    const completion = (stream: boolean): Promise<Response> => post('/v1/completions', { prompt: 'hi', max_tokens: 100, stream }, 'mix-1');
    const answers = await Promise.all([chat(true), chat(false), chat(true), completion(true), completion(false), completion(true)]);
    const bodies = await Promise.all(answers.map((answer) => answer.text()));
    const refusedChats = bodies.slice(0, 3).filter((body) => body.includes('Request id chatcmpl-mix-1 already running.'));
    const refusedCompletions = bodies.slice(3).filter((body) => body.includes('Request id cmpl-mix-1-0 already running.'));
    expect([refusedChats.length, refusedCompletions.length]).toEqual([2, 2]);
  });
});

describe('POD_NAME and POD_NAMESPACE (llm-d-inference-sim’s replica headers, audit 17-D1)', () => {
  it('an answer carries x-inference-pod, x-inference-port and x-inference-namespace; a refusal carries none', async () => {
    const named = await startServer({ seed: 5, ttftMs: 0, itlMs: 0, podName: 'sim-0', podNamespace: 'llm-d' });
    try {
      const port = new URL(named.url).port;
      for (const stream of [false, true]) {
        const response = await fetch(`${named.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: '', prompt: 'hi', max_tokens: 2, stream }) });
        await response.text();
        expect([response.headers.get('x-inference-pod'), response.headers.get('x-inference-port'), response.headers.get('x-inference-namespace')]).toEqual(['sim-0', port, 'llm-d']);
      }
      const refused = await fetch(`${named.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'nope', prompt: 'hi' }) });
      await refused.text();
      expect(refused.status).toBe(404);
      expect(refused.headers.get('x-inference-pod')).toBeNull();
    } finally {
      await named.close();
    }
  });
});
