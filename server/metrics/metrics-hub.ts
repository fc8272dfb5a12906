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
 * merged on scrape (cluster/cluster-worker.ts), joined registries too: counters and histograms
 * are summed, and so are gauges unless they declare another `aggregator` (ratios 'average').
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

  readonly #joined: Registry[] = [];

  /** Every registry /metrics shows, this hub's first; a cluster worker merges each across workers. */
  registries(): readonly Registry[] {
    return [this.registry, ...this.#joined];
  }

  /** This process's exposition text: every registry, one after the other. */
  async localText(): Promise<string> {
    return (await Promise.all(this.registries().map((r) => r.metrics()))).join('');
  }

  /** What /metrics serves; a cluster worker replaces it to merge its peers' metrics. */
  text: () => Promise<string> = () => this.localText();

  /**
   * Joins a registry kept elsewhere (a dialect's own metrics port serves it alone); prefer `add`
   * on this registry. Its families must not share names with this one's.
   */
  join(registry: Registry): void {
    this.#joined.push(registry);
  }

  add(set: MetricSet): void {
    const detach = set(this.#context);
    if (typeof detach === 'function') this.#detach.push(detach);
  }

  close(): void {
    for (const detach of this.#detach.splice(0)) detach();
  }
}
