/**
 * vLLM's fake stream: a completion asked to stream that vLLM does not stream (best_of ≠ n, beam
 * search) is generated whole and sent as one event of its body, then [DONE]. The engine still
 * produced its tokens at their due times: /metrics times them so, as a body's (review 20).
 */
import { describe, expect, it } from 'vitest';
import { parsePrometheusText } from '../../../client/scrape/prometheus-text.ts';
import { buildServer } from '../../../server/app.ts';
import { sampleValue } from '../../helpers/prometheus-samples.ts';

const MODEL = { model_name: 'benchtruth/fake-model', engine: '0' };

describe('a one-event stream', () => {
  it.each(['isolated', 'batching'] as const)('is engine-timed in /metrics, as the same answer sent as a body (--scheduler %s)', async (scheduler) => {
    const server = buildServer({ seed: 4, scheduler, ttftMs: 300, itlMs: 50 });
    await server.app.ready();
    try {
      const response = await server.app.inject({ method: 'POST', url: '/v1/completions', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ prompt: 'hello', max_tokens: 5, use_beam_search: true, stream: true }) });
      expect(response.headers['content-type']).toBe('text/event-stream; charset=utf-8');
      for (let i = 0; i < 200 && server.context.engine.state().running > 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
      const families = parsePrometheusText((await server.app.inject({ method: 'GET', url: '/metrics' })).body);
      expect(sampleValue(families, 'vllm:time_to_first_token_seconds_sum', MODEL)).toBeCloseTo(0.3, 9);
      expect(sampleValue(families, 'vllm:inter_token_latency_seconds_count', MODEL)).toBe(4);
      expect(sampleValue(families, 'vllm:inter_token_latency_seconds_sum', MODEL)).toBeCloseTo(0.2, 9);
    } finally {
      await server.close();
    }
  });

  it('is sized as the body it is (the write guard does not count it per event), and its truth names no token grouping', async () => {
    const server = buildServer({ seed: 4, ttftMs: 0, itlMs: 0 });
    await server.app.ready();
    try {
      const post = (wire: string, id: string, maxTokens: number) =>
        server.app.inject({ method: 'POST', url: '/v1/completions', headers: { 'content-type': 'application/json', 'x-benchtruth-wire': wire, 'x-request-id': id }, payload: JSON.stringify({ prompt: 'hello', max_tokens: maxTokens, use_beam_search: true, stream: true }) });
      const bytes = await post('bytes', 'one-bytes', 1000);
      expect(bytes.statusCode).toBe(200);
      expect(bytes.body.endsWith('data: [DONE]\n\n')).toBe(true);
      await post('tokens=2', 'one-tokens', 3);
      const truth = server.context.truth.get('one-tokens');
      expect(truth?.events.map((e) => [e.kind, e.tokenCount])).toEqual([['finish', 3], ['done', 0]]);
      expect(truth?.wire).not.toContain('tokens=2');
    } finally {
      await server.close();
    }
  });
});
