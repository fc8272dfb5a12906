/**
 * What an llm-d-inference-sim manifest's probes and the EPP see of the server: `/health/ready`
 * (the simulator's helm readiness probe) answers as `/health`, a path-less JSON adapter is
 * rooted at its name, and `vllm:cache_config_info` carries vLLM V1's `engine="0"` label, still
 * one series when `--workers` merges the scrape.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { parsePrometheusText } from '../../../client/scrape/prometheus-text.ts';
import { buildServer } from '../../../server/app.ts';
import { mergeWorkerMetrics } from '../../../server/cluster/merge-worker-metrics.ts';
import { parseLoraModule } from '../../../server/dialects/vllm/model-registry.ts';

const server = buildServer({ model: 'Qwen/Qwen3-32B', loraModules: [parseLoraModule('{"name": "food-review-1"}')], maxLoras: 2 });
afterAll(() => server.close());

describe('llm-d-inference-sim manifests against the vLLM routes', () => {
  it('GET /health/ready is 200 with an empty body, like /health; other methods are 405', async () => {
    for (const url of ['/health', '/health/ready']) {
      const response = await server.app.inject({ method: 'GET', url });
      expect([url, response.statusCode, response.body]).toEqual([url, 200, '']);
    }
    for (const method of ['POST', 'HEAD'] as const) {
      const response = await server.app.inject({ method, url: '/health/ready' });
      expect(response.statusCode).toBe(405);
      expect(response.headers.allow).toBe('GET');
    }
  });

  it('GET /ready (the readiness probe of every released llm-d-inference-sim helm chart) is 200, empty, JSON-typed as llm-d sends it; other methods are 405', async () => {
    const response = await server.app.inject({ method: 'GET', url: '/ready' });
    expect([response.statusCode, response.body, response.headers['content-type']]).toEqual([200, '', 'application/json']);
    const post = await server.app.inject({ method: 'POST', url: '/ready' });
    expect([post.statusCode, post.headers.allow]).toEqual([405, 'GET']);
  });

  it('a JSON adapter without a path is served, rooted at its name', async () => {
    expect(parseLoraModule('{"name": "food-review-1"}')).toEqual({ name: 'food-review-1', path: 'food-review-1', baseModelName: null });
    const body = (await server.app.inject({ method: 'GET', url: '/v1/models' })).json() as { data: Array<{ id: string; root: string; parent: string | null }> };
    expect(body.data.map((m) => [m.id, m.root, m.parent])).toEqual([['Qwen/Qwen3-32B', 'Qwen/Qwen3-32B', null], ['food-review-1', 'food-review-1', 'Qwen/Qwen3-32B']]);
  });

  it("an adapter's parent is its base_model_name only when that is a served name, else the first served name (vLLM's is_base_model; review 24)", async () => {
    const served = buildServer({ model: 'first', modelPath: 'org/base', servedModelAliases: ['second'], loraModules: ['{"name":"a1","path":"/a","base_model_name":"not-served"}', '{"name":"a2","path":"/a","base_model_name":"org/base"}', '{"name":"a3","path":"/a","base_model_name":"second"}', '{"name":"a4","path":"/a","base_model_name":""}'].map(parseLoraModule) });
    try {
      const body = (await served.app.inject({ method: 'GET', url: '/v1/models' })).json() as { data: Array<{ id: string; parent: string | null }> };
      expect(body.data.map((m) => [m.id, m.parent])).toEqual([['first', null], ['second', null], ['a1', 'first'], ['a2', 'first'], ['a3', 'second'], ['a4', 'first']]);
    } finally {
      await served.close();
    }
  });

  it.each(['{"name": "a", "path": ""}', '{"name": "a", "path": null}'])('a JSON adapter %s is rooted at its name, as llm-d-inference-sim roots it (getLoraPath)', (raw) => {
    expect(parseLoraModule(raw)).toEqual({ name: 'a', path: 'a', baseModelName: null });
  });

  it.each(['{"path": "/x"}', '{"name": ""}', '{"name": "a", "path": 3}', '{"name": "a", "path": ["/x"]}'])('a JSON adapter %s is still refused', (raw) => {
    expect(() => parseLoraModule(raw)).toThrow(/a JSON LoRA module needs a string "name"/);
  });

  it('vllm:cache_config_info has engine="0", and --workers still merge it into one series', async () => {
    const text = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(text).toMatch(/^vllm:cache_config_info\{block_size="16",num_gpu_blocks="8192",num_cpu_blocks="0",enable_prefix_caching="False",cache_dtype="auto",engine="0"\} 1$/m);
    const other = buildServer({ model: 'Qwen/Qwen3-32B' });
    try {
      const perWorker = await Promise.all([server, other].map(async (s) => (await Promise.all(s.context.metrics.registries().map((r) => r.getMetricsAsJSON()))).flat()));
      const merged = parsePrometheusText(await mergeWorkerMetrics(perWorker).metrics());
      const samples = merged.get('vllm:cache_config_info')?.samples ?? [];
      expect(samples.map((s) => [s.labels.engine, s.value])).toEqual([['0', 1]]);
    } finally {
      await other.close();
    }
  });
});
