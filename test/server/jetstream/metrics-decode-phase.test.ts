/**
 * JetStream's request metrics as its orchestrator observes them: time per request and time per
 * output token over the decode phase (first token → end); the wait time only for a request that
 * carried metadata.start_time (JetStream's HTTP server stamps every request; the proxy none).
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { TruthRecord } from '../../../contracts/truth.ts';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';

const servers: BenchtruthServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

async function metricsAfter(url: string, payload: Record<string, unknown>, wire?: string): Promise<{ value: (name: string) => number; truth: TruthRecord }> {
  const server = buildServer({ dialect: 'jetstream', seed: 2, ttftMs: 20, itlMs: 10 });
  servers.push(server);
  await server.app.ready();
  const response = await server.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', 'x-request-id': 'r1', ...(wire === undefined ? {} : { 'x-benchtruth-wire': wire }) }, payload: JSON.stringify(payload) });
  expect(response.statusCode).toBe(200);
  const text = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
  const truth = server.context.truth.get('r1');
  if (truth === undefined) throw new Error('no truth for r1');
  return { value: (name) => Number(new RegExp(`^${name}\\{id="[^"]+"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN), truth };
}

describe('jetstream_* per-request metrics', () => {
  it('the proxy carries no start time: no wait observed; time per request is the decode phase', async () => {
    const { value, truth } = await metricsAfter('/generate', { prompt: 'a b c', max_tokens: 4, stream: false });
    expect(value('jetstream_request_success_count_total')).toBe(1);
    // Never observed, so no series at all (JetStream makes a label child on first observation too).
    expect(value('jetstream_wait_time_per_request_count')).toBeNaN();
    expect(value('jetstream_time_per_request_count')).toBe(1);
    // From the first token (made at 20 ms, a one-body answer's engine time) to the end, not from arrival.
    const decodeMs = (truth.end?.atMs ?? NaN) - (truth.tokens[0]?.dueMs ?? NaN);
    expect(decodeMs).toBeGreaterThanOrEqual(29);
    expect(value('jetstream_time_per_request_sum') * 1000).toBeCloseTo(decodeMs, 6);
    expect(value('jetstream_time_per_output_token_count')).toBe(1);
  });

  it('a request the engine completed counts whatever spoiled the wire after it (no EOS object); an error event does not (audit 11-M4)', async () => {
    const spoiled = await metricsAfter('/v1/generate', { max_tokens: 3, text_content: { text: 'a b' } }, 'fault=nodone');
    expect(spoiled.truth.end?.how).not.toBe('completed');
    expect(spoiled.value('jetstream_request_success_count_total')).toBe(1);
    expect(spoiled.value('jetstream_request_output_length_count')).toBe(1);
    // Several tokens in one step: the count is of tokens delivered, not of steps (audit 11-R14-3).
    const grouped = await metricsAfter('/v1/generate', { max_tokens: 4, text_content: { text: 'a b' } }, 'tokens=4;fault=nodone');
    expect(grouped.value('jetstream_request_success_count_total')).toBe(1);
    const failed = await metricsAfter('/v1/generate', { max_tokens: 3, text_content: { text: 'a b' } }, 'fault=error:1');
    expect(failed.value('jetstream_request_success_count_total') || 0).toBe(0);
  });

  it('JetStream\'s HTTP server stamps a start time: the wait is observed', async () => {
    const { value } = await metricsAfter('/v1/generate', { max_tokens: 1, text_content: { text: 'a b' } });
    expect(value('jetstream_wait_time_per_request_count')).toBe(1);
    // A one-token answer is observed too (JetStream divides by the output length).
    expect(value('jetstream_time_per_output_token_count')).toBe(1);
  });
});
