/**
 * Which requests vLLM's metrics count, as vLLM does: an HTTP-error fault answered before any
 * stream never reached the engine (no event, no queue place, no count); prompt tokens count at
 * prefill only; and every per-request histogram is observed for every finished request, so all
 * of their counts equal the e2e count. No timing is asserted: the test waits on engine state.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { sampleValue } from '../../helpers/prometheus-samples.ts';
import { parsePrometheusText, type MetricFamily } from '../../../client/scrape/prometheus-text.ts';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';
import type { EngineState } from '../../../server/engine/engine.ts';

const servers: BenchtruthServer[] = [];
afterAll(async () => {
  for (const s of servers) s.app.server.closeAllConnections();
  await Promise.all(servers.map((s) => s.close()));
});

const MODEL = { model_name: 'benchtruth/fake-model', engine: '0' };

const value = (families: Map<string, MetricFamily>, sample: string, labels: Record<string, string> = MODEL): number => sampleValue(families, sample, labels);

async function until(what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (ok()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

function post(url: string, id: string, body: Record<string, unknown>, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': id, ...headers },
    body: JSON.stringify({ model: '', prompt: 'one two three four five', ...body }),
    ...(signal === undefined ? {} : { signal }),
  });
}

async function scrape(url: string): Promise<Map<string, MetricFamily>> {
  return parsePrometheusText(await (await fetch(`${url}/metrics`)).text());
}

const PER_REQUEST = ['e2e_request_latency_seconds', 'request_queue_time_seconds', 'request_prefill_time_seconds', 'request_decode_time_seconds', 'request_inference_time_seconds', 'request_time_per_output_token_seconds', 'request_prompt_tokens', 'request_generation_tokens'];

describe.each(['isolated', 'batching'] as const)('vllm:* counts engine requests only (--scheduler %s)', (scheduler) => {
  it('an HTTP-error fault is never an engine request; per-request histograms count every finished request', async () => {
    const server = buildServer({ scheduler, seed: 9, ttftMs: 5, itlMs: 2, maxNumSeqs: 4 });
    servers.push(server);
    const url = `http://127.0.0.1:${await server.listen(0)}`;
    const queued: string[] = [];
    server.context.engine.subscribe({ queued: (request) => void queued.push(request.id) });

    for (const [i, status] of [429, 500].entries()) {
      const response = await post(url, `${scheduler}-fault${i}`, { max_tokens: 5, stream: i === 0 }, { 'x-benchtruth-wire': `fault=http:${status}` });
      expect(response.status).toBe(status);
      await response.text();
    }
    // One token only: N = 1, so its request TPOT is observed as 0.
    for (const [i, maxTokens] of [1, 4].entries()) await (await post(url, `${scheduler}-ok${i}`, { max_tokens: maxTokens })).text();
    await until('both answers to end', () => ['ok0', 'ok1'].every((s) => server.context.truth.get(`${scheduler}-${s}`)?.end != null));
    await new Promise((resolve) => setImmediate(resolve));

    expect(queued).toEqual([`${scheduler}-ok0`, `${scheduler}-ok1`]);
    const families = await scrape(url);
    const prompt = server.context.truth.get(`${scheduler}-ok0`)?.promptTokens ?? NaN;
    expect(value(families, 'vllm:prompt_tokens_total')).toBe(2 * prompt);
    expect(value(families, 'vllm:request_success_total', { ...MODEL, finished_reason: 'abort' })).toBe(0);
    for (const name of PER_REQUEST) expect(value(families, `vllm:${name}_count`), name).toBe(2);
    expect(value(families, 'vllm:time_to_first_token_seconds_count')).toBe(2);
    expect(value(families, 'vllm:request_time_per_output_token_seconds_bucket', { ...MODEL, le: '0.01' })).toBeGreaterThanOrEqual(1);
  });
});

describe('vllm:* under --scheduler batching: a request aborted while waiting', () => {
  it('is counted as an abort with every per-request histogram, but its prompt was never prefilled', async () => {
    const server = buildServer({ scheduler: 'batching', seed: 9, ttftMs: 5, itlMs: 20, maxNumSeqs: 1 });
    servers.push(server);
    const url = `http://127.0.0.1:${await server.listen(0)}`;
    const state = (): EngineState => server.context.engine.state();

    const runner = new AbortController();
    const running = await post(url, 'runs', { max_tokens: 1000, stream: true }, {}, runner.signal);
    const reader = (running.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    expect(state().running).toBe(1);

    const waiter = new AbortController();
    const waiting = post(url, 'waits', { max_tokens: 5, stream: true }, {}, waiter.signal).catch(() => null);
    await until('the second request to wait', () => state().waiting === 1);
    waiter.abort();
    await waiting;
    await until('the waiting request to end', () => server.context.truth.get('waits')?.end != null);
    runner.abort();
    await reader.cancel().catch(() => {});
    await until('the running request to end', () => server.context.truth.get('runs')?.end != null);
    await new Promise((resolve) => setImmediate(resolve));

    const families = await scrape(url);
    const prompt = server.context.truth.get('runs')?.promptTokens ?? NaN;
    expect(value(families, 'vllm:prompt_tokens_total')).toBe(prompt);
    // No prefix cache (enable_prefix_caching False): vLLM counts no query then.
    expect(value(families, 'vllm:prefix_cache_queries_total')).toBe(0);
    expect(value(families, 'vllm:request_success_total', { ...MODEL, finished_reason: 'abort' })).toBe(2);
    for (const name of PER_REQUEST) expect(value(families, `vllm:${name}_count`), name).toBe(2);
    expect(value(families, 'vllm:request_prompt_tokens_sum')).toBe(2 * prompt);
    expect(value(families, 'vllm:time_to_first_token_seconds_count')).toBe(1);
    expect(state()).toMatchObject({ running: 0, waiting: 0 });
  });
});

describe('vllm:iteration_tokens_total (audit 16-J finding 5)', () => {
  it('under --scheduler batching: one observation per step that made tokens, its prompts once plus a token per sequence', async () => {
    const server = buildServer({ scheduler: 'batching', seed: 9, ttftMs: 5, itlMs: 2, maxNumSeqs: 4 });
    servers.push(server);
    const url = `http://127.0.0.1:${await server.listen(0)}`;
    let prompts = 0;
    // One request at a time: every step holds one sequence, so 4 tokens take 4 steps.
    for (let i = 0; i < 3; i++) {
      const body = (await (await post(url, `iteration-${i}`, { max_tokens: 4 })).json()) as { usage: { prompt_tokens: number } };
      prompts += body.usage.prompt_tokens;
    }
    await until('the requests to finish', () => server.context.engine.state().running === 0);
    const families = await scrape(url);
    expect(value(families, 'vllm:iteration_tokens_total_count')).toBe(12);
    expect(value(families, 'vllm:iteration_tokens_total_sum')).toBe(prompts + 12);
    expect(value(families, 'vllm:iteration_tokens_total_bucket', { ...MODEL, le: '1' })).toBe(9);
  });

  it('n > 1 and prompt lists: each choice prefills its own prompt, so the sum equals prompt_tokens_total + generation_tokens_total', async () => {
    const server = buildServer({ scheduler: 'batching', seed: 9, ttftMs: 5, itlMs: 2, maxNumSeqs: 16 });
    servers.push(server);
    const url = `http://127.0.0.1:${await server.listen(0)}`;
    await (await post(url, 'iteration-n', { max_tokens: 3, n: 4 })).text();
    await (await post(url, 'iteration-list', { max_tokens: 2, n: 2, prompt: ['one two', 'three four five six'] })).text();
    await (
      await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ messages: [{ role: 'user', content: 'a b c' }], max_tokens: 2, n: 3 }),
      })
    ).text();
    await until('the requests to finish', () => server.context.engine.state().running === 0);
    const families = await scrape(url);
    const total = value(families, 'vllm:prompt_tokens_total') + value(families, 'vllm:generation_tokens_total');
    expect(value(families, 'vllm:generation_tokens_total')).toBe(12 + 8 + 6);
    expect(value(families, 'vllm:iteration_tokens_total_sum')).toBe(total);
  });

  it('under --scheduler isolated, which has no steps, it is not exported', async () => {
    const server = buildServer({ scheduler: 'isolated', seed: 9, ttftMs: 1, itlMs: 1 });
    servers.push(server);
    const url = `http://127.0.0.1:${await server.listen(0)}`;
    await (await post(url, 'isolated-iteration', { max_tokens: 3 })).text();
    expect((await scrape(url)).has('vllm:iteration_tokens_total')).toBe(false);
  });
});
