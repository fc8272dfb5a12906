/**
 * vLLM binds every labelled series when its logger starts, so the first scrape already has each
 * counter and histogram at 0 (rate() and histogram_quantile() work from the first scrape).
 */
import { describe, expect, it } from 'vitest';
import { parsePrometheusText } from '../../../client/scrape/prometheus-text.ts';
import { buildServer } from '../../../server/app.ts';

const COUNTERS = ['vllm:prompt_tokens_total', 'vllm:generation_tokens_total', 'vllm:prefix_cache_queries_total', 'vllm:prefix_cache_hits_total', 'vllm:num_preemptions_total'];
const HISTOGRAMS = [
  'vllm:time_to_first_token_seconds',
  'vllm:inter_token_latency_seconds',
  'vllm:time_per_output_token_seconds',
  'vllm:request_time_per_output_token_seconds',
  'vllm:e2e_request_latency_seconds',
  'vllm:request_queue_time_seconds',
  'vllm:request_prefill_time_seconds',
  'vllm:request_decode_time_seconds',
  'vllm:request_inference_time_seconds',
  'vllm:request_prompt_tokens',
  'vllm:request_generation_tokens',
  'vllm:request_max_num_generation_tokens',
  'vllm:request_params_n',
  'vllm:request_params_max_tokens',
];

describe('vllm:* series before the first request', () => {
  it('every counter, histogram and finished_reason is scraped at 0 under the served model name', async () => {
    const server = buildServer({ seed: 1, model: 'base-model', loraModules: [{ name: 'adapter-a', path: '/a', baseModelName: null }] });
    await server.app.ready();
    const text = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
    await server.close();
    const families = parsePrometheusText(text);
    const labels = { model_name: 'base-model', engine: '0' };
    for (const name of COUNTERS) {
      const samples = families.get(name)?.samples ?? [];
      expect(samples.map((s) => [s.labels, s.value]), name).toEqual([[labels, 0]]);
    }
    const reasons = (families.get('vllm:request_success_total')?.samples ?? []).map((s) => [s.labels.finished_reason, s.value]);
    expect(reasons).toEqual([['stop', 0], ['length', 0], ['abort', 0]]);
    for (const name of HISTOGRAMS) {
      const samples = families.get(name)?.samples ?? [];
      const count = samples.find((s) => s.name === `${name}_count`);
      expect(count?.labels, name).toEqual(labels);
      expect(count?.value, name).toBe(0);
      expect(samples.filter((s) => s.name === `${name}_bucket`).length, name).toBeGreaterThan(1);
      expect(samples.every((s) => s.value === 0), name).toBe(true);
    }
  });
});

describe('the /metrics mount (audit 13-Z4-3)', () => {
  it('answers the exposition for any method and any path that starts with /metrics, as vLLM’s mount does', async () => {
    const server = buildServer({ seed: 1 });
    await server.app.ready();
    const expected = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
    for (const [method, url] of [['POST', '/metrics'], ['DELETE', '/metrics'], ['GET', '/metrics/'], ['GET', '/metrics/anything'], ['PUT', '/metrics/']] as const) {
      const response = await server.app.inject({ method, url });
      expect(response.statusCode, `${method} ${url}`).toBe(200);
      expect(response.headers['content-type']).toContain('text/plain');
      expect(parsePrometheusText(response.body).has('vllm:num_requests_running')).toBe(true);
    }
    expect(expected).toContain('vllm:num_requests_running');
    expect((await server.app.inject({ method: 'GET', url: '/metric' })).statusCode).toBe(404);
    await server.close();
  });
});
