/**
 * The LPG report's server_metrics asks for what the archived generator asks vLLM for (its
 * metrics_to_scrape list) and reports every one benchtruth's own server exports, each in the
 * generator's layout: gauges Mean/Median/Sd/Min/Max/P90/P99, histograms the same without Sd.
 */
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { LPG_VLLM_METRICS, lpgServerMetrics } from '../../../client/report/lpg-report.ts';
import { summarizeSegments } from '../../../client/scrape/metric-summary.ts';
import { parsePrometheusText } from '../../../client/scrape/prometheus-text.ts';
import { startServer } from '../../helpers/server.ts';

const GAUGE_STATS = ['Mean', 'Median', 'Sd', 'Min', 'Max', 'P90', 'P99'];
const HISTOGRAM_STATS = ['Mean', 'Median', 'Min', 'Max', 'P90', 'P99'];

describe('LPG server metrics', () => {
  it("ask for the archived generator's full vLLM list, in its order", () => {
    expect([...LPG_VLLM_METRICS]).toEqual([
      'vllm:gpu_cache_usage_perc',
      'vllm:num_requests_waiting',
      'vllm:num_requests_running',
      'vllm:num_requests_swapped',
      'vllm:time_to_first_token_seconds',
      'vllm:time_per_output_token_seconds',
      'vllm:request_queue_time_seconds',
      'vllm:request_inference_time_seconds',
      'vllm:request_prompt_tokens',
      'vllm:request_generation_tokens',
      'vllm:iteration_tokens_total',
    ]);
  });

  it("report every one benchtruth's server exports, gauges with Sd and histograms without", async () => {
    const server = await startServer({ seed: 2, ttftMs: 5, itlMs: 1 });
    try {
      const scrape = async () => ({ atEpochMs: Date.now(), families: parsePrometheusText(await (await request(`${server.url}/metrics`)).body.text()) });
      const before = await scrape();
      for (let i = 0; i < 3; i++) {
        const response = await request(`${server.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'benchtruth/fake-model', prompt: 'hello there', max_tokens: 3 }) });
        expect(response.statusCode).toBe(200);
        await response.body.text();
      }
      const after = await scrape();
      const reported = lpgServerMetrics(summarizeSegments([[before, after]]), LPG_VLLM_METRICS);
      // All but the two vLLM metrics the server has no counterpart of (swapped requests: no CPU swap; iteration tokens).
      expect(Object.keys(reported)).toEqual(LPG_VLLM_METRICS.filter((name) => name !== 'vllm:num_requests_swapped' && name !== 'vllm:iteration_tokens_total'));
      for (const name of ['vllm:gpu_cache_usage_perc', 'vllm:num_requests_waiting', 'vllm:num_requests_running']) expect(Object.keys(reported[name] ?? {})).toEqual(GAUGE_STATS);
      for (const name of ['vllm:time_to_first_token_seconds', 'vllm:request_prompt_tokens', 'vllm:request_generation_tokens']) expect(Object.keys(reported[name] ?? {})).toEqual(HISTOGRAM_STATS);
      expect(Number(reported['vllm:request_generation_tokens']?.Mean)).toBe(3);
    } finally {
      await server.close();
    }
  });
});
