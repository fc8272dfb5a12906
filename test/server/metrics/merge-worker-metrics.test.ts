/**
 * `--workers`: what one scrape shows of every worker's registries. jetstream_* merges like
 * vllm:* (counters summed, gauges by their aggregator), and vllm:lora_requests_info is one
 * series describing the whole server.
 */
import { Gauge, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { parsePrometheusText } from '../../../client/scrape/prometheus-text.ts';
import { mergeWorkerMetrics, type MetricsJson } from '../../../server/cluster/merge-worker-metrics.ts';
import { JetstreamMetrics } from '../../../server/dialects/jetstream/jetstream-metrics.ts';

async function loraWorker(running: string, waiting: string, at: number): Promise<MetricsJson> {
  const registry = new Registry();
  const gauge = new Gauge({ name: 'vllm:lora_requests_info', help: 'Running stats on lora requests.', labelNames: ['max_lora', 'waiting_lora_adapters', 'running_lora_adapters'], registers: [registry], aggregator: 'max' });
  gauge.set({ max_lora: '1', waiting_lora_adapters: waiting, running_lora_adapters: running }, at);
  return registry.getMetricsAsJSON();
}

describe('mergeWorkerMetrics', () => {
  it('makes vllm:lora_requests_info one series: adapters united, the newest timestamp', async () => {
    const merged = await mergeWorkerMetrics([await loraWorker('b', '', 100), await loraWorker('a,b', 'c', 99), await loraWorker('', '', 98)]).metrics();
    const samples = parsePrometheusText(merged).get('vllm:lora_requests_info')?.samples ?? [];
    expect(samples).toHaveLength(1);
    expect(samples[0]?.value).toBe(100);
    expect(samples[0]?.labels).toEqual({ max_lora: '1', running_lora_adapters: 'b,a', waiting_lora_adapters: 'c' });
  });

  it('idle workers give one series with empty adapter lists', async () => {
    const merged = await mergeWorkerMetrics([await loraWorker('', '', 5), await loraWorker('', '', 7)]).metrics();
    const samples = parsePrometheusText(merged).get('vllm:lora_requests_info')?.samples ?? [];
    expect(samples.map((s) => [s.value, s.labels])).toEqual([[7, { max_lora: '1', running_lora_adapters: '', waiting_lora_adapters: '' }]]);
  });

  it('merges jetstream_* gauges: backlogs summed, slot share averaged, startup the slowest', async () => {
    const one = new JetstreamMetrics('vm', 2);
    const two = new JetstreamMetrics('vm', 3);
    one.usage({ prefillBacklog: 2, decoding: 4, slots: 4 });
    two.usage({ prefillBacklog: 0, decoding: 1, slots: 4 });
    const families = parsePrometheusText(await mergeWorkerMetrics([await one.registry.getMetricsAsJSON(), await two.registry.getMetricsAsJSON()]).metrics());
    const only = (name: string): number[] => (families.get(name)?.samples ?? []).map((s) => s.value);
    expect(only('jetstream_prefill_backlog_size')).toEqual([2]);
    expect(only('jetstream_slots_used_percentage')).toEqual([(1 + 0.25) / 2]);
    expect(only('jetstream_server_startup_latency')).toEqual([3]);
    expect(only('jetstream_request_success_count_total')).toEqual([]);
  });
});
