/**
 * The isolated engine's phases of a one-body answer with n > 1 and stop strings (audit
 * 14-A4MIX-2): a choice's token held back behind a possible stop string is released after another
 * choice's later token, so token order is not production order. Prefill ends at the earliest
 * token produced and decode at the latest, as the TTFT histogram (per choice) already says.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { parsePrometheusText } from '../../../client/scrape/prometheus-text.ts';
import { buildServer } from '../../../server/app.ts';
import { sampleValue } from '../../helpers/prometheus-samples.ts';

// vLLM labels engine metrics with the served model, not the adapter.
const MODEL = { model_name: 'benchtruth/fake-model', engine: '0' };

describe('prefill and decode of a non-streamed n=2 answer with stop strings (isolated)', () => {
  const server = buildServer({ seed: 11, ttftMs: 20, ttftSpreadMs: 8, itlMs: 4, itlSpreadMs: 1, loraModules: [{ name: 'la', path: '/adapters/a', baseModelName: null }] });
  afterAll(() => server.close());

  it('take the earliest and the latest token the engine produced, whatever their order in the body', async () => {
    let expectedPrefill = 0;
    let expectedDecode = 0;
    let reordered = 0;
    // With this seed and spread, held-52's first choice releases its first token after the second's; the others are ordinary.
    for (const id of ['held-52', 'held-1', 'held-2', 'held-3']) {
      const response = await server.app.inject({
        method: 'POST',
        url: '/v1/chat/completions',
        headers: { 'content-type': 'application/json', 'x-request-id': id },
        payload: { model: 'la', messages: [{ role: 'user', content: 'brown at' }], max_tokens: 53, n: 2, stop: [' a'] },
      });
      expect(response.statusCode).toBe(200);
      const truth = JSON.parse((await server.app.inject({ method: 'GET', url: `/_truth/requests/${id}` })).body) as { tokens: Array<{ dueMs: number }> };
      const due = truth.tokens.map((t) => t.dueMs);
      if (due.length === 0) continue;
      if (Math.min(...due) !== due[0]) reordered++;
      // Each of the two choices is one engine request; they share the request's phases.
      expectedPrefill += 2 * Math.min(...due);
      expectedDecode += 2 * (Math.max(...due) - Math.min(...due));
    }
    expect(reordered).toBeGreaterThan(0);
    const families = parsePrometheusText((await server.app.inject({ method: 'GET', url: '/metrics' })).body);
    expect(sampleValue(families, 'vllm:request_prefill_time_seconds_sum', MODEL) * 1000).toBeCloseTo(expectedPrefill, 6);
    expect(sampleValue(families, 'vllm:request_decode_time_seconds_sum', MODEL) * 1000).toBeCloseTo(expectedDecode, 6);
  });
});
