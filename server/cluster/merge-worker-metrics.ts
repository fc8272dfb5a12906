/**
 * `--workers`: one exposition from every worker's metrics. prom-client's cluster aggregation
 * sums counters and histograms and applies each gauge's `aggregator`, series by series (one
 * label set at a time). `vllm:lora_requests_info` cannot go that way: its labels carry the
 * state (which adapters run and wait), so per-worker label sets would come out as separate
 * series and the newest (the one consumers read) would describe one worker only. It becomes
 * one series for the whole server: the union of the adapters, the newest timestamp.
 */
import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue, type Registry } from 'prom-client';

export type MetricsJson = Array<MetricObjectWithValues<MetricValue<string>>>;

const LORA_INFO = 'vllm:lora_requests_info';

function adapterUnion(lists: readonly string[]): string {
  const names = new Set<string>();
  for (const list of lists) for (const name of list.split(',')) if (name !== '') names.add(name);
  return [...names].join(',');
}

/** The LoRA info series of every worker as one (newest first, so its adapters lead). */
export function mergeLoraInfo(values: ReadonlyArray<MetricValue<string>>): MetricValue<string> | null {
  const newestFirst = [...values].sort((a, b) => b.value - a.value);
  const newest = newestFirst[0];
  if (newest === undefined) return null;
  const label = (v: MetricValue<string>, name: string): string => String(v.labels[name] ?? '');
  return {
    value: newest.value,
    labels: {
      max_lora: label(newest, 'max_lora'),
      waiting_lora_adapters: adapterUnion(newestFirst.map((v) => label(v, 'waiting_lora_adapters'))),
      running_lora_adapters: adapterUnion(newestFirst.map((v) => label(v, 'running_lora_adapters'))),
    },
  };
}

/** Every worker's metrics (each `getMetricsAsJSON()` of its registries) as one registry. */
export function mergeWorkerMetrics(perWorker: readonly MetricsJson[]): Registry {
  const loraValues: Array<MetricValue<string>> = [];
  for (const metrics of perWorker) for (const m of metrics) if (m.name === LORA_INFO) loraValues.push(...m.values);
  const merged = mergeLoraInfo(loraValues);
  let kept = false;
  const rewritten = perWorker.map((metrics) =>
    metrics.flatMap((m) => {
      if (m.name !== LORA_INFO) return [m];
      if (kept || merged === null) return [];
      kept = true;
      return [{ ...m, values: [merged] }];
    }),
  );
  return AggregatorRegistry.aggregate(rewritten);
}
