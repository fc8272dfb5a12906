/**
 * n > 1 and prompt lists: vLLM V1 runs each choice as its own engine request, so /metrics
 * counts each choice as one: its own success, TTFT and token counts, inter-token gaps only
 * between its own tokens, and its prompt's tokens. Counts and sums are checked against the
 * truth records, never timings.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { sampleValue } from '../../helpers/prometheus-samples.ts';
import { parsePrometheusText, type MetricFamily } from '../../../client/scrape/prometheus-text.ts';
import type { TruthRecord } from '../../../contracts/truth.ts';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';
import { choiceLayout, deliveredTokenTimes, latencyTokenTimes, timesByChoice } from '../../../server/engine/token-times.ts';

const servers: BenchtruthServer[] = [];
afterAll(async () => {
  for (const s of servers) s.app.server.closeAllConnections();
  await Promise.all(servers.map((s) => s.close()));
});

const finishedRecords = new Map<string, TruthRecord>();
const MODEL = { model_name: 'benchtruth/fake-model', engine: '0' };

const value = (families: Map<string, MetricFamily>, sample: string, labels: Record<string, string> = MODEL): number => sampleValue(families, sample, labels);

/** The live record the engine reported finished (the store keeps a packed copy). */
async function ended(server: BenchtruthServer, id: string): Promise<TruthRecord> {
  for (let i = 0; i < 500; i++) {
    const record = finishedRecords.get(id);
    if (record !== undefined) return record;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`${id} did not end`);
}

describe.each(['isolated', 'batching'] as const)('per-choice vllm:* metrics (--scheduler %s)', (scheduler) => {
  it('n=2 streamed: two requests, gaps within each choice only', async () => {
    const server = buildServer({ scheduler, seed: 3, ttftMs: 8, itlMs: 4 });
    servers.push(server);
    server.context.engine.subscribe({ finished: ({ record }) => void finishedRecords.set(record.id, record) });
    const url = `http://127.0.0.1:${await server.listen(0)}`;
    const response = await fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'n2' },
      body: JSON.stringify({ model: '', prompt: 'one two three', n: 2, max_tokens: 5, ignore_eos: true, stream: true }),
    });
    await response.text();
    const record = await ended(server, 'n2');
    await new Promise((resolve) => setImmediate(resolve));
    const families = parsePrometheusText(await (await fetch(`${url}/metrics`)).text());

    // The layout agrees with the bytes: every token-bearing event names its choice.
    const layout = choiceLayout(record);
    expect(layout?.promptTokens).toEqual([record.promptTokens, record.promptTokens]);
    const body = Buffer.from(record.body);
    for (const event of record.events.filter((e) => e.tokenCount > 0)) {
      const index = Number(/"index":(\d+)/.exec(body.toString('utf8', event.offset, event.offset + event.length))?.[1]);
      for (let k = 0; k < event.tokenCount; k++) expect(layout?.choiceOfToken[event.tokenStart + k]).toBe(index);
    }

    const perChoice = timesByChoice(latencyTokenTimes(record, deliveredTokenTimes(record)), layout);
    expect(perChoice.map((t) => t.length)).toEqual([5, 5]);
    const span = perChoice.reduce((sum, t) => sum + ((t[t.length - 1] as number) - (t[0] as number)), 0) / 1000;
    expect(value(families, 'vllm:request_success_total', { ...MODEL, finished_reason: 'length' })).toBe(2);
    expect(value(families, 'vllm:time_to_first_token_seconds_count')).toBe(2);
    expect(value(families, 'vllm:time_to_first_token_seconds_sum')).toBeCloseTo(perChoice.reduce((sum, t) => sum + (t[0] as number), 0) / 1000, 9);
    expect(value(families, 'vllm:inter_token_latency_seconds_count')).toBe(8);
    expect(value(families, 'vllm:inter_token_latency_seconds_sum')).toBeCloseTo(span, 9);
    expect(value(families, 'vllm:request_time_per_output_token_seconds_count')).toBe(2);
    expect(value(families, 'vllm:request_time_per_output_token_seconds_sum')).toBeCloseTo(span / 4, 9);
    expect(value(families, 'vllm:request_generation_tokens_count')).toBe(2);
    expect(value(families, 'vllm:request_generation_tokens_sum')).toBe(10);
    expect(value(families, 'vllm:generation_tokens_total')).toBe(10);
    expect(value(families, 'vllm:prompt_tokens_total')).toBe(2 * record.promptTokens);
    expect(value(families, 'vllm:e2e_request_latency_seconds_count')).toBe(2);
    // One parent request of n = 2 (audit 10 Z7-1): max_tokens per choice, n and the longest choice per parent.
    expect(value(families, 'vllm:request_params_max_tokens_count')).toBe(2);
    expect(value(families, 'vllm:request_params_max_tokens_sum')).toBe(10);
    expect(value(families, 'vllm:request_params_n_count')).toBe(1);
    expect(value(families, 'vllm:request_params_n_sum')).toBe(2);
    expect(value(families, 'vllm:request_params_n_bucket', { ...MODEL, le: '1' })).toBe(0);
    expect(value(families, 'vllm:request_max_num_generation_tokens_count')).toBe(1);
    expect(value(families, 'vllm:request_max_num_generation_tokens_sum')).toBe(5);
  });

  it('a prompt list, not streamed: one request per prompt, each with its own prompt tokens', async () => {
    const server = buildServer({ scheduler, seed: 3, ttftMs: 8, itlMs: 4 });
    servers.push(server);
    server.context.engine.subscribe({ finished: ({ record }) => void finishedRecords.set(record.id, record) });
    const url = `http://127.0.0.1:${await server.listen(0)}`;
    const response = await fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'list' },
      body: JSON.stringify({ model: '', prompt: ['one two', 'three four five six seven'], max_tokens: 3, ignore_eos: true }),
    });
    expect(response.status).toBe(200);
    await response.text();
    const record = await ended(server, 'list');
    await new Promise((resolve) => setImmediate(resolve));
    const families = parsePrometheusText(await (await fetch(`${url}/metrics`)).text());
    const prompts = choiceLayout(record)?.promptTokens ?? [];
    expect(prompts).toHaveLength(2);
    expect(prompts[0]).toBeLessThan(prompts[1] as number);
    expect(value(families, 'vllm:prompt_tokens_total')).toBe(record.promptTokens);
    expect(value(families, 'vllm:request_prompt_tokens_count')).toBe(2);
    expect(value(families, 'vllm:request_prompt_tokens_sum')).toBe(record.promptTokens);
    expect(value(families, 'vllm:request_success_total', { ...MODEL, finished_reason: 'length' })).toBe(2);
    expect(value(families, 'vllm:inter_token_latency_seconds_count')).toBe(4);
    expect(value(families, 'vllm:request_generation_tokens_sum')).toBe(6);
    // Two parent requests of n = 1.
    expect(value(families, 'vllm:request_params_n_count')).toBe(2);
    expect(value(families, 'vllm:request_params_n_sum')).toBe(2);
    expect(value(families, 'vllm:request_params_max_tokens_sum')).toBe(6);
    expect(value(families, 'vllm:request_max_num_generation_tokens_sum')).toBe(6);
  });
});

describe('vllm:request_params_max_tokens of a request that set no max_tokens (audit 15-S2)', () => {
  it('observes the context each prompt leaves, not the EOS point that ended it', async () => {
    const server = buildServer({ seed: 3, ttftMs: 1, itlMs: 1, eosAfterTokens: 3, maxModelLen: 40 });
    servers.push(server);
    const post = (path: string, body: unknown) =>
      server.app.inject({ method: 'POST', url: path, headers: { 'content-type': 'application/json' }, payload: body as Record<string, unknown> });
    // A prompt list: each prompt is its own request in vLLM, each with its own room.
    const completion = await post('/v1/completions', { model: '', prompt: ['one', 'one two three'], max_tokens: null });
    expect(completion.statusCode).toBe(200);
    const chat = await post('/v1/chat/completions', { model: '', messages: [{ role: 'user', content: 'hi there' }] });
    expect(chat.statusCode).toBe(200);
    const usage = (JSON.parse(completion.body) as { usage: { prompt_tokens: number } }).usage;
    const chatPrompt = (JSON.parse(chat.body) as { usage: { prompt_tokens: number } }).usage.prompt_tokens;
    const families = parsePrometheusText((await server.app.inject({ method: 'GET', url: '/metrics' })).body);
    expect(value(families, 'vllm:request_params_max_tokens_count')).toBe(3);
    // (40 − a) + (40 − b) for the two prompts, a + b = the completion's prompt tokens; 40 − chat's.
    expect(value(families, 'vllm:request_params_max_tokens_sum')).toBe(2 * 40 - usage.prompt_tokens + (40 - chatPrompt));
  });
});
