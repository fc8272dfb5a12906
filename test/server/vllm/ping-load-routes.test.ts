/**
 * vLLM's `/ping` (SageMaker's health check, GET and POST, an empty 200) and `GET /load`
 * (`{"server_load": N}`: the generation requests in flight with --enable-server-load-tracking,
 * else always 0); and vLLM's answer to an empty prompt list.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';

const servers: BenchtruthServer[] = [];
afterAll(async () => {
  for (const s of servers) s.app.server.closeAllConnections();
  await Promise.all(servers.map((s) => s.close()));
});

async function start(options: Parameters<typeof buildServer>[0]): Promise<string> {
  const server = buildServer(options);
  servers.push(server);
  return `http://127.0.0.1:${await server.listen(0)}`;
}

describe('vLLM /ping and /load', () => {
  it('/ping answers GET and POST with an empty 200; other methods 405', async () => {
    const url = await start({ seed: 1 });
    for (const method of ['GET', 'POST']) {
      const response = await fetch(`${url}/ping`, { method });
      expect(response.status).toBe(200);
      expect(await response.text()).toBe('');
      expect(response.headers.get('content-type')).toBeNull();
    }
    const put = await fetch(`${url}/ping`, { method: 'PUT' });
    expect(put.status).toBe(405);
    expect(await put.json()).toEqual({ detail: 'Method Not Allowed' });
  });

  it('/load is 0 without load tracking, and counts the requests in flight with it', async () => {
    const quiet = await start({ seed: 1 });
    const plain = await fetch(`${quiet}/load`);
    expect(plain.headers.get('content-type')).toBe('application/json');
    expect(await plain.text()).toBe('{"server_load":0}');

    const url = await start({ seed: 1, ttftMs: 5000, itlMs: 1, serverLoadTracking: true });
    const controller = new AbortController();
    const pending = fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: '', prompt: 'a b', max_tokens: 2, stream: true }), signal: controller.signal }).catch(() => null);
    let load = 0;
    for (let i = 0; i < 200 && load === 0; i++) {
      load = ((await (await fetch(`${url}/load`)).json()) as { server_load: number }).server_load;
      if (load === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(load).toBe(1);
    controller.abort();
    await pending;
  });
});

describe('an empty prompt list', () => {
  it('is vLLM renderer\'s 400, not a type error; the empty text is 0.11\'s validation 400, and 0.10.1\'s engine check', async () => {
    const url = await start({ seed: 1 });
    const ask = async (prompt: unknown) => (await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: '', prompt, max_tokens: 2 }) })).json();
    expect(await ask([])).toMatchObject({ error: { message: 'please provide at least one prompt', type: 'BadRequestError', code: 400 } });
    expect(await ask([[]])).toMatchObject({ error: { message: 'please provide at least one prompt', type: 'BadRequestError', code: 400 } });
    expect(await ask([[1], []])).toMatchObject({ error: { message: 'The decoder prompt cannot be empty', type: 'BadRequestError', code: 400 } });
    // 0.11's CompletionRequest refuses the empty text itself (validate_prompt_and_prompt_embeds), streamed or not (review 21-pydantic).
    const emptyText = "[{'type': 'value_error', 'loc': ('body',), 'msg': 'Value error, Either prompt or prompt_embeds must be provided and non-empty.', 'input': {'model': '', 'prompt': '', 'max_tokens': 2}, 'ctx': {'error': ValueError('Either prompt or prompt_embeds must be provided and non-empty.')}}]";
    expect(await ask('')).toMatchObject({ error: { message: emptyText, type: 'Bad Request', code: 400 } });
    const streamedEmpty = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: '', prompt: '', max_tokens: 2, stream: true }) });
    expect(streamedEmpty.status).toBe(400);
    // The engine's check (V1's processor), so a stream has its 200 and gets it as an event, as an out-of-vocabulary id does.
    for (const prompt of [[[1], []], ['']]) {
      const streamed = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: '', prompt, max_tokens: 2, stream: true }) });
      expect(streamed.status).toBe(200);
      expect(await streamed.text()).toBe('data: {"error": {"message": "The decoder prompt cannot be empty", "type": "BadRequestError", "param": null, "code": 400}}\n\ndata: [DONE]\n\n');
    }
    const older = await start({ seed: 1, vllmVersion: '0.10.1' });
    const olderEmpty = await fetch(`${older}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: '', prompt: '', max_tokens: 2 }) });
    expect(await olderEmpty.json()).toMatchObject({ error: { message: 'The decoder prompt cannot be empty', type: 'BadRequestError', code: 400 } });
    const olderMissing = await fetch(`${older}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: '', max_tokens: 2 }) });
    expect(((await olderMissing.json()) as { error: { message: string } }).error.message).toContain('At least one of `prompt` or `prompt_embeds` must be set.');
  });
});
