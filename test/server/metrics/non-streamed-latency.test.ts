/**
 * A non-streamed answer leaves in one write, but vLLM and JetStream time its first token and
 * its inter-token gaps in the engine: the TTFT histogram must see the configured TTFT, not the
 * end-to-end latency, and the ITL histogram real gaps, not zeros. Counts stay one per request.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { parsePrometheusText, type MetricFamily } from '../../../client/scrape/prometheus-text.ts';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';

const TTFT_MS = 60;
const ITL_MS = 15;
const MAX_TOKENS = 6;
/** Planned end: the first token, then MAX_TOKENS − 1 gaps. */
const E2E_MS = TTFT_MS + (MAX_TOKENS - 1) * ITL_MS;
/** Generous: the batching engine's steps run on the real clock and may come late. */
const SLACK_MS = 40;

const servers: BenchtruthServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

function sample(families: Map<string, MetricFamily>, name: string): number {
  const family = families.get(name.replace(/_(sum|count)$/, ''));
  const found = family?.samples.find((s) => s.name === name);
  if (found === undefined) throw new Error(`no sample ${name}`);
  return found.value;
}

async function scrape(server: BenchtruthServer): Promise<Map<string, MetricFamily>> {
  // The listener that feeds the metrics runs when the truth record ends; give it one turn.
  await new Promise((resolve) => setImmediate(resolve));
  return parsePrometheusText((await server.app.inject({ method: 'GET', url: '/metrics' })).body);
}

describe.each(['isolated', 'batching'] as const)('vllm:* latency histograms of non-streamed requests, --scheduler %s', (scheduler) => {
  it('observe the engine’s first-token time and gaps, not the one write’s time', async () => {
    const server = buildServer({ scheduler, seed: 9, ttftMs: TTFT_MS, itlMs: ITL_MS });
    servers.push(server);
    await server.app.ready();
    const requests = 2;
    for (let i = 0; i < requests; i++) {
      const response = await server.app.inject({
        method: 'POST',
        url: '/v1/completions',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ model: '', prompt: 'one two three', max_tokens: MAX_TOKENS, ignore_eos: true }),
      });
      expect(response.statusCode).toBe(200);
    }
    const families = await scrape(server);
    expect(sample(families, 'vllm:time_to_first_token_seconds_count')).toBe(requests);
    expect(sample(families, 'vllm:e2e_request_latency_seconds_count')).toBe(requests);
    const ttft = (sample(families, 'vllm:time_to_first_token_seconds_sum') / requests) * 1000;
    const e2e = (sample(families, 'vllm:e2e_request_latency_seconds_sum') / requests) * 1000;
    expect(ttft).toBeGreaterThanOrEqual(TTFT_MS - 1);
    expect(ttft).toBeLessThan(TTFT_MS + SLACK_MS);
    expect(e2e).toBeGreaterThanOrEqual(E2E_MS - 1);
    expect(e2e - ttft).toBeGreaterThan((MAX_TOKENS - 1) * ITL_MS - SLACK_MS);
    const gaps = requests * (MAX_TOKENS - 1);
    expect(sample(families, 'vllm:inter_token_latency_seconds_count')).toBe(gaps);
    const itl = (sample(families, 'vllm:inter_token_latency_seconds_sum') / gaps) * 1000;
    expect(itl).toBeGreaterThanOrEqual(ITL_MS - 1);
    expect(itl).toBeLessThan(ITL_MS + SLACK_MS);
    expect(sample(families, 'vllm:generation_tokens_total')).toBe(requests * MAX_TOKENS);
  });
});

describe('jetstream_* latency histograms of a non-streamed proxy request', () => {
  it('TTFT is the first token’s engine time, not the request time', async () => {
    const server = buildServer({ dialect: 'jetstream', seed: 9, ttftMs: TTFT_MS, itlMs: ITL_MS });
    servers.push(server);
    await server.app.ready();
    const response = await server.app.inject({
      method: 'POST',
      url: '/generate',
      headers: { 'content-type': 'application/json', 'x-request-id': 'proxy-1' },
      payload: JSON.stringify({ prompt: 'one two three', max_tokens: MAX_TOKENS, stream: false }),
    });
    expect(response.statusCode).toBe(200);
    const text = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
    const value = (name: string): number => Number(new RegExp(`^${name}\\{id="[^"]+"\\} (\\S+)$`, 'm').exec(text)?.[1]);
    expect(value('jetstream_time_to_first_token_count')).toBe(1);
    expect(value('jetstream_time_per_request_count')).toBe(1);
    const ttft = value('jetstream_time_to_first_token_sum') * 1000;
    const e2e = value('jetstream_time_per_request_sum') * 1000;
    expect(ttft).toBeGreaterThanOrEqual(TTFT_MS - 1);
    expect(ttft).toBeLessThan(TTFT_MS + SLACK_MS);
    // JetStream's time per request is the decode phase (first token's engine time → end), and
    // its time per output token that phase over the output length: read off the truth record,
    // not bounded by the wall clock. The phase spans every gap after the first token and the
    // EOS step's.
    const truth = server.context.truth.get('proxy-1');
    const decodeMs = (truth?.end?.atMs ?? NaN) - (truth?.tokens[0]?.dueMs ?? NaN);
    expect(decodeMs).toBeGreaterThanOrEqual(MAX_TOKENS * ITL_MS - 1e-6);
    expect(e2e).toBeCloseTo(decodeMs, 6);
    expect(value('jetstream_time_per_output_token_sum') * 1000).toBeCloseTo(decodeMs / MAX_TOKENS, 6);
  });
});
