/** Reading one sample out of a parsed /metrics page, for tests that hold metrics against truth. */
import type { MetricFamily } from '../../client/scrape/prometheus-text.ts';

/** The value of `sample` (a family name, or one with its _bucket/_sum/_count suffix) with these labels; throws when absent. */
export function sampleValue(families: Map<string, MetricFamily>, sample: string, labels: Record<string, string>): number {
  const family = families.get(sample.replace(/_(bucket|sum|count)$/, '')) ?? families.get(sample);
  const found = family?.samples.find((s) => s.name === sample && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found === undefined) throw new Error(`no sample ${sample}`);
  return found.value;
}
