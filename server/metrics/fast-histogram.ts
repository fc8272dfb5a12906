/**
 * A one-series Prometheus histogram for values observed once per token (inter-token gaps).
 * prom-client's observe() hashes the label set and allocates on every call; at tens of
 * thousands of tokens a second that is a visible share of the server's CPU, so this keeps
 * plain counters and renders them only when scraped. Registered on the same registry, it
 * exports (and merges across cluster workers) exactly like a prom-client Histogram.
 */
import type { Registry } from 'prom-client';

export interface FastHistogramConfig {
  name: string;
  help: string;
  buckets: readonly number[];
  labels: Readonly<Record<string, string>>;
  registry: Registry;
}

export class FastHistogram {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly #buckets: readonly number[];
  readonly #labels: Readonly<Record<string, string>>;
  readonly #counts: Float64Array;
  #sum = 0;
  #count = 0;

  constructor(config: FastHistogramConfig) {
    this.name = config.name;
    this.help = config.help;
    this.#buckets = config.buckets;
    this.#labels = config.labels;
    this.#counts = new Float64Array(config.buckets.length);
    config.registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  observe(value: number): void {
    const buckets = this.#buckets;
    for (let i = 0; i < buckets.length; i++) {
      if (value <= (buckets[i] as number)) {
        this.#counts[i] = (this.#counts[i] as number) + 1;
        break;
      }
    }
    this.#sum += value;
    this.#count++;
  }

  /** prom-client's metric protocol: cumulative buckets, then +Inf, sum and count. */
  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Array<{ labels: Record<string, string | number>; value: number; metricName: string }> }> {
    const values: Array<{ labels: Record<string, string | number>; value: number; metricName: string }> = [];
    let cumulative = 0;
    this.#buckets.forEach((le, i) => {
      cumulative += this.#counts[i] as number;
      values.push({ labels: { ...this.#labels, le }, value: cumulative, metricName: `${this.name}_bucket` });
    });
    values.push({ labels: { ...this.#labels, le: '+Inf' }, value: this.#count, metricName: `${this.name}_bucket` });
    values.push({ labels: { ...this.#labels }, value: this.#sum, metricName: `${this.name}_sum` });
    values.push({ labels: { ...this.#labels }, value: this.#count, metricName: `${this.name}_count` });
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.#counts.fill(0);
    this.#sum = 0;
    this.#count = 0;
  }
}
