/**
 * Scrapes a Prometheus endpoint at an interval during the run, plus once at each stage's start
 * and end, and summarises each stage's scrapes (and the whole run's). A failed scrape is
 * counted, never fatal: server metrics are context, not the measurement.
 */
import { request } from 'undici';
import { summarizeScrapes, type Scrape, type ServerMetricsSummary } from './metric-summary.ts';
import { parsePrometheusText } from './prometheus-text.ts';

export interface ServerMetricsReport {
  url: string;
  failed_scrapes: number;
  summary: ServerMetricsSummary;
  stages: Map<number, ServerMetricsSummary>;
}

export interface StageScraper {
  /** Scrapes now for `stage`; settles (never rejects) once that scrape is recorded or failed. */
  mark(stage: number, phase: 'start' | 'end'): Promise<void>;
  stop(): Promise<ServerMetricsReport>;
}

export function startStageScraper(url: string, intervalMs: number): StageScraper {
  const all: Scrape[] = [];
  const byStage = new Map<number, Scrape[]>();
  const inFlight = new Set<Promise<void>>();
  let current: number | null = null;
  let failed = 0;
  let stopped: Promise<ServerMetricsReport> | null = null;

  const scrape = (stages: number[]): Promise<void> => {
    const job = (async () => {
      try {
        const response = await request(url, { headersTimeout: 5000, bodyTimeout: 5000 });
        const text = await response.body.text();
        if (response.statusCode !== 200) throw new Error(`status ${response.statusCode}`);
        const entry: Scrape = { atEpochMs: performance.timeOrigin + performance.now(), families: parsePrometheusText(text) };
        all.push(entry);
        for (const stage of stages) {
          let list = byStage.get(stage);
          if (list === undefined) byStage.set(stage, (list = []));
          list.push(entry);
        }
      } catch {
        failed++;
      }
    })();
    inFlight.add(job);
    void job.finally(() => inFlight.delete(job));
    return job;
  };

  const timer = setInterval(() => void scrape(current === null ? [] : [current]), intervalMs);
  timer.unref();
  return {
    mark(stage, phase) {
      if (phase === 'start') current = stage;
      const job = scrape([stage]);
      if (phase === 'end') current = null;
      return job;
    },
    stop() {
      stopped ??= (async () => {
        clearInterval(timer);
        await Promise.all([...inFlight]);
        const order = (list: Scrape[]): Scrape[] => list.sort((a, b) => a.atEpochMs - b.atEpochMs);
        const stages = new Map<number, ServerMetricsSummary>();
        for (const [stage, list] of [...byStage.entries()].sort((a, b) => a[0] - b[0])) stages.set(stage, summarizeScrapes(order(list)));
        return { url, failed_scrapes: failed, summary: summarizeScrapes(order(all)), stages };
      })();
      return stopped;
    },
  };
}
