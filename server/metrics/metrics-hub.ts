/**
 * One Prometheus registry per server process, served at GET /metrics (see metrics-route.ts).
 *
 * Hook for dialects: a metric set is a function that receives the registry and the engine,
 * creates its prom-client metrics with `registers: [registry]`, and subscribes to the
 * engine's events (queued, scheduled, firstToken, token, preempted, finished) to feed them:
 *
 *   hub.add(({ registry, engine }) => {
 *     const done = new Counter({ name: 'jetstream_request_success_count_total', help: '…', registers: [registry] });
 *     return engine.subscribe({ finished: () => done.inc() });
 *   });
 *
 * Gauges that mirror engine state should read `engine.state()` in their `collect()` so a
 * scrape sees the present, not the last event. With --workers, each worker's registry is
 * merged on scrape (cluster/peer-metrics.ts); gauges that are ratios must declare
 * `aggregator: 'average'`.
 */
import { Registry } from 'prom-client';
import type { Engine } from '../engine/engine.ts';
import type { ServerOptions } from '../options.ts';

export interface MetricSetContext {
  registry: Registry;
  engine: Engine;
  options: ServerOptions;
}

/** Registers metrics; may return a function that detaches its listeners. */
export type MetricSet = (context: MetricSetContext) => void | (() => void);

export class MetricsHub {
  readonly registry = new Registry();
  readonly #context: MetricSetContext;
  readonly #detach: Array<() => void> = [];

  constructor(engine: Engine, options: ServerOptions) {
    this.#context = { registry: this.registry, engine, options };
  }

  readonly #extraTexts: Array<() => Promise<string>> = [];

  /** This process's exposition text: the registry plus any separately kept metric texts. */
  async localText(): Promise<string> {
    return (await this.registry.metrics()) + (await this.extraText());
  }

  /** The separately kept metric texts alone (not merged across cluster workers). */
  async extraText(): Promise<string> {
    return (await Promise.all(this.#extraTexts.map((t) => t()))).join('');
  }

  /** What /metrics serves; a cluster worker replaces it to merge its peers' metrics. */
  text: () => Promise<string> = () => this.localText();

  /** Joins a metric text kept in another registry (prefer `add` on this registry). */
  addText(source: () => Promise<string>): void {
    this.#extraTexts.push(source);
  }

  add(set: MetricSet): void {
    const detach = set(this.#context);
    if (typeof detach === 'function') this.#detach.push(detach);
  }

  close(): void {
    for (const detach of this.#detach.splice(0)) detach();
  }
}
