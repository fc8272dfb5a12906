/**
 * /metrics against the truth: drive a known load (streams, non-streams, client aborts) and
 * check that every counter equals the sum over truth records and every histogram counts what
 * happened. Only counts and sums are compared, never timings, so this runs anywhere.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { parsePrometheusText, type MetricFamily } from '../../../client/scrape/prometheus-text.ts';
import type { TruthRecord } from '../../../contracts/truth.ts';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';
import { finishedReason } from '../../../server/engine/isolated-engine.ts';
import { deliveredTokenTimes } from '../../../server/engine/token-times.ts';
import { latencyTokenTimes } from '../../../server/engine/token-times.ts';
import { ITL_BUCKETS_S, REQUEST_TIME_BUCKETS_S, TTFT_BUCKETS_S } from '../../../server/metrics/vllm-metrics.ts';

const servers: BenchtruthServer[] = [];
afterAll(async () => {
  // An aborted fetch may leave a fresh, request-less keep-alive socket that close() would wait on.
  for (const s of servers) s.app.server.closeAllConnections();
  await Promise.all(servers.map((s) => s.close()));
});

async function completion(url: string, id: string, body: Record<string, unknown>, abortAfterFirstChunk = false): Promise<void> {
  const controller = new AbortController();
  const response = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': id },
    body: JSON.stringify({ model: '', prompt: 'one two three four five', ...body }),
    signal: controller.signal,
  });
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  for (;;) {
    const { done } = await reader.read();
    if (done) return;
    if (abortAfterFirstChunk) {
      controller.abort();
      await reader.cancel().catch(() => {});
      return;
    }
  }
}

async function settled(server: BenchtruthServer, ids: readonly string[]): Promise<TruthRecord[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const records = ids.map((id) => server.context.truth.get(id));
    if (records.every((r) => r?.end != null)) return records as TruthRecord[];
    if (Date.now() > deadline) throw new Error('requests did not end within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function value(families: Map<string, MetricFamily>, sample: string, labels: Record<string, string> = {}): number {
  const family = families.get(sample.replace(/_(bucket|sum|count)$/, '')) ?? families.get(sample);
  const found = family?.samples.find((s) => s.name === sample && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found === undefined) throw new Error(`no sample ${sample} ${JSON.stringify(labels)}`);
  return found.value;
}

function bucketEdges(families: Map<string, MetricFamily>, name: string): number[] {
  return (families.get(name)?.samples ?? []).filter((s) => s.name === `${name}_bucket`).map((s) => Number(s.labels.le === '+Inf' ? Infinity : s.labels.le));
}

describe.each(['isolated', 'batching'] as const)('vllm:* metrics with --scheduler %s', (scheduler) => {
  it('the running and waiting gauges count every choice, as vLLM runs each as its own request (audit 17-E1)', async () => {
    const server = buildServer({ scheduler, seed: 4, ttftMs: 5, itlMs: 20, maxNumSeqs: 3 });
    servers.push(server);
    const url = `http://127.0.0.1:${await server.listen(0)}`;
    const controller = new AbortController();
    const open = (id: string, body: Record<string, unknown>): Promise<Response> =>
      fetch(`${url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': id },
        body: JSON.stringify({ model: '', prompt: ['a b', 'c d'], max_tokens: 200, ignore_eos: true, stream: true, ...body }),
        signal: controller.signal,
      });
    // Two prompts × n = 1, then two prompts × n = 2: 2 + 4 choices on 3 slots.
    const responses = [await open(`${scheduler}-g0`, {}), await open(`${scheduler}-g1`, { n: 2 })];
    const model = { model_name: 'benchtruth/fake-model', engine: '0' };
    const families = parsePrometheusText(await (await fetch(`${url}/metrics`)).text());
    const running = value(families, 'vllm:num_requests_running', model);
    const waiting = value(families, 'vllm:num_requests_waiting', model);
    controller.abort();
    for (const response of responses) await response.body?.cancel().catch(() => {});
    if (scheduler === 'isolated') expect([running, waiting]).toEqual([6, 0]);
    else expect([running, waiting]).toEqual([2, 4]);
  });

  it('counters equal sums over the truth records; histogram counts equal request and gap counts', async () => {
    const server = buildServer({ scheduler, seed: 4, ttftMs: 5, itlMs: 3, maxNumSeqs: 3 });
    servers.push(server);
    const url = `http://127.0.0.1:${await server.listen(0)}`;
    const jobs: Array<Promise<void>> = [];
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) {
      ids.push(`${scheduler}-s${i}`);
      jobs.push(completion(url, `${scheduler}-s${i}`, { max_tokens: 1 + i, stream: true, stream_options: { include_usage: i % 2 === 0 } }));
    }
    for (let i = 0; i < 3; i++) {
      ids.push(`${scheduler}-n${i}`);
      jobs.push(completion(url, `${scheduler}-n${i}`, { max_tokens: 4 + i }));
    }
    for (let i = 0; i < 2; i++) {
      ids.push(`${scheduler}-a${i}`);
      jobs.push(completion(url, `${scheduler}-a${i}`, { max_tokens: 400, stream: true }, true));
    }
    await Promise.all(jobs);
    const records = await settled(server, ids);
    // The listener that feeds the metrics runs when the truth record ends; give it one turn.
    await new Promise((resolve) => setImmediate(resolve));
    const families = parsePrometheusText(await (await fetch(`${url}/metrics`)).text());

    const delivered = records.map(deliveredTokenTimes);
    const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
    const model = { model_name: 'benchtruth/fake-model', engine: '0' };
    expect(value(families, 'vllm:prompt_tokens_total', model)).toBe(sum(records.map((r) => r.promptTokens)));
    expect(value(families, 'vllm:generation_tokens_total', model)).toBe(sum(delivered.map((d) => d.length)));
    for (const reason of ['stop', 'length', 'abort'] as const) {
      expect(value(families, 'vllm:request_success_total', { ...model, finished_reason: reason })).toBe(records.filter((r) => finishedReason(r, latencyTokenTimes(r, deliveredTokenTimes(r))) === reason).length);
    }
    expect(value(families, 'vllm:request_success_total', { ...model, finished_reason: 'abort' })).toBe(2);

    // Latencies are engine times: a non-streamed answer's tokens are not all timed at its one write.
    const latency = records.map((r, i) => latencyTokenTimes(r, delivered[i] ?? []));
    const withTokens = latency.filter((d) => d.length > 0);
    expect(value(families, 'vllm:time_to_first_token_seconds_count', model)).toBe(withTokens.length);
    expect(value(families, 'vllm:time_to_first_token_seconds_sum', model)).toBeCloseTo(sum(withTokens.map((d) => (d[0] as number) / 1000)), 9);
    const gaps = sum(latency.map((d) => Math.max(0, d.length - 1)));
    expect(value(families, 'vllm:inter_token_latency_seconds_count', model)).toBe(gaps);
    expect(value(families, 'vllm:time_per_output_token_seconds_count', model)).toBe(gaps);
    expect(value(families, 'vllm:e2e_request_latency_seconds_count', model)).toBe(records.length);
    expect(value(families, 'vllm:e2e_request_latency_seconds_sum', model)).toBeCloseTo(sum(records.map((r) => (r.end?.atMs ?? 0) / 1000)), 9);
    for (const name of ['request_queue_time_seconds', 'request_prompt_tokens', 'request_generation_tokens']) {
      expect(value(families, `vllm:${name}_count`, model)).toBe(records.length);
    }
    expect(value(families, 'vllm:request_generation_tokens_sum', model)).toBe(sum(delivered.map((d) => d.length)));
    expect(value(families, 'vllm:num_requests_running', model)).toBe(0);
    expect(value(families, 'vllm:num_requests_waiting', model)).toBe(0);
    expect(value(families, 'vllm:kv_cache_usage_perc', model)).toBe(0);

    expect(bucketEdges(families, 'vllm:time_to_first_token_seconds')).toEqual([...TTFT_BUCKETS_S, Infinity]);
    expect(bucketEdges(families, 'vllm:inter_token_latency_seconds')).toEqual([...ITL_BUCKETS_S, Infinity]);
    expect(bucketEdges(families, 'vllm:e2e_request_latency_seconds')).toEqual([...REQUEST_TIME_BUCKETS_S, Infinity]);
    expect(families.get('vllm:lora_requests_info')?.samples[0]?.labels).toMatchObject({ max_lora: '1', running_lora_adapters: '', waiting_lora_adapters: '' });
  });
});
