/**
 * A request whose id is already running: vLLM V1's OutputProcessor refuses it ("Request id …
 * already running.", a 400, or an error event after the 200 for a stream), and the running
 * request keeps its truth record whole.
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
    const streamed = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], max_tokens: 3, stream: true, n: 2 }, 'dup-1');
    expect(streamed.status).toBe(200);
    expect(await streamed.text()).toBe('data: {"error": {"message": "Request id 0_chatcmpl-dup-1 already running.", "type": "BadRequestError", "param": null, "code": 400}}\n\ndata: [DONE]\n\n');
    await first.text();
    const truth = (await (await fetch(`${running.url}/_truth/requests/dup-1`)).json()) as { endpoint: string; tokens: unknown[]; end: { how: string } };
    expect([truth.endpoint, truth.tokens.length, truth.end.how]).toEqual(['/v1/completions', 20, 'completed']);
    // Once it has ended the id is free again.
    const again = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], max_tokens: 2 }, 'dup-1');
    expect(again.status).toBe(200);
  });
});
