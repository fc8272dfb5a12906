/**
 * Scrapes a Prometheus endpoint at an interval during the run, plus once where each stage's
 * measured part starts and where the stage ends, and summarises each stage's scrapes. The run's
 * summary is built from the stages' scrapes only: a scrape taken before the first stage, during
 * a warm-up or during a sweep's probe sees traffic no report measures. A failed scrape is
 * counted, never fatal: server metrics are context, not the measurement.
 */
import { request } from 'undici';
import { realClock, type Clock } from '../../contracts/clock.ts';
import { summarizeScrapes, type Scrape, type ServerMetricsSummary } from './metric-summary.ts';
import { parsePrometheusText } from './prometheus-text.ts';

export interface ServerMetricsReport {
  url: string;
  failed_scrapes: number;
  /** Over every stage's scrapes (none taken outside a stage's measured part). */
  summary: ServerMetricsSummary;
  stages: Map<number, ServerMetricsSummary>;
  /** The summary over exactly these stages' scrapes (say, the stages of one LPG file). */
  over(stages: readonly number[]): ServerMetricsSummary;
}

export interface StageScraper {
  /** Scrapes now for `stage`; settles (never rejects) once that scrape is recorded or failed. */
  mark(stage: number, phase: 'start' | 'end'): Promise<void>;
  stop(): Promise<ServerMetricsReport>;
}

/** What the scraper touches outside itself (tests pass a fake endpoint, a virtual clock and a hand-driven timer). */
export interface ScraperDeps {
  clock?: Clock;
  /** The exposition text at `url`; rejects on any failure. */
  fetchMetrics?: (url: string) => Promise<string>;
  /** Calls `tick` every `ms` until the returned function is called. */
  every?: (ms: number, tick: () => void) => () => void;
}

async function fetchOverHttp(url: string): Promise<string> {
  const response = await request(url, { headersTimeout: 5000, bodyTimeout: 5000 });
  const text = await response.body.text();
  if (response.statusCode !== 200) throw new Error(`status ${response.statusCode}`);
  return text;
}

function everyWithTimer(ms: number, tick: () => void): () => void {
  const timer = setInterval(tick, ms);
  timer.unref();
  return () => clearInterval(timer);
}

export function startStageScraper(url: string, intervalMs: number, deps: ScraperDeps = {}): StageScraper {
  const clock = deps.clock ?? realClock;
  const fetchMetrics = deps.fetchMetrics ?? fetchOverHttp;
  const byStage = new Map<number, Scrape[]>();
  const inFlight = new Set<Promise<void>>();
  /** The stage whose measured part is running (between its start and end marks). */
  let current: number | null = null;
  let failed = 0;
  let stopped: Promise<ServerMetricsReport> | null = null;

  /** `stage`: the mark's stage; null: an interval scrape, kept only if it lies inside one stage's marks. */
  const scrape = (stage: number | null): Promise<void> => {
    const during = current;
    const job = (async () => {
      try {
        const families = parsePrometheusText(await fetchMetrics(url));
        const entry: Scrape = { atEpochMs: clock.epochMs(clock.now()), families };
        // An interval scrape that outlived its stage's end mark may have seen what came after.
        const owner = stage ?? (during !== null && current === during ? during : null);
        if (owner === null) return;
        let list = byStage.get(owner);
        if (list === undefined) byStage.set(owner, (list = []));
        list.push(entry);
      } catch {
        failed++;
      }
    })();
    inFlight.add(job);
    void job.finally(() => inFlight.delete(job));
    return job;
  };

  const stopTimer = (deps.every ?? everyWithTimer)(intervalMs, () => void scrape(null));
  return {
    mark(stage, phase) {
      if (phase === 'end') current = null;
      const job = scrape(stage);
      if (phase === 'start') current = stage;
      return job;
    },
    stop() {
      stopped ??= (async () => {
        stopTimer();
        await Promise.all([...inFlight]);
        const order = (list: readonly Scrape[]): Scrape[] => [...list].sort((a, b) => a.atEpochMs - b.atEpochMs);
        const stages = new Map<number, ServerMetricsSummary>();
        for (const [stage, list] of [...byStage.entries()].sort((a, b) => a[0] - b[0])) stages.set(stage, summarizeScrapes(order(list)));
        const over = (wanted: readonly number[]): ServerMetricsSummary => summarizeScrapes(order([...new Set(wanted.flatMap((stage) => byStage.get(stage) ?? []))]));
        return { url, failed_scrapes: failed, summary: over([...byStage.keys()]), stages, over };
      })();
      return stopped;
    },
  };
}
