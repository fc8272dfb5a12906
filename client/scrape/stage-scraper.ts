/**
 * Scrapes a Prometheus endpoint at an interval during the run, plus once where each stage's
 * measured part starts and where the stage ends, and summarises each stage's scrapes. The run's
 * summary is built from the stages' scrapes only: a scrape taken before the first stage, during
 * a warm-up or during a sweep's probe sees traffic no report measures. A failed scrape is
 * counted, never fatal: server metrics are context, not the measurement.
 */
import { request } from 'undici';
import { realClock, type Clock } from '../../contracts/clock.ts';
import { SegmentAccumulator, summarizeAccumulated, type HistogramGrouping, type ServerMetricsSummary } from './metric-summary.ts';
import { parsePrometheusTextInSlices } from './prometheus-text.ts';

export interface ServerMetricsReport {
  url: string;
  failed_scrapes: number;
  /** Over every stage's scrapes (none taken outside a stage's measured part). */
  summary: ServerMetricsSummary;
  stages: Map<number, ServerMetricsSummary>;
  /**
   * The summary over exactly these stages' scrapes (say, the stages of one LPG file);
   * `histogramsBy: 'name'` sums every series of a histogram by `le`, as the LPG's queries do.
   */
  over(stages: readonly number[], histogramsBy?: HistogramGrouping): ServerMetricsSummary;
}

export interface StageScraper {
  /** Scrapes now for `stage`; settles (never rejects) once that scrape is recorded or failed. */
  mark(stage: number, phase: 'start' | 'end'): Promise<void>;
  stop(): Promise<ServerMetricsReport>;
}

/** What the scraper touches outside itself (tests pass a fake endpoint, a virtual clock and a hand-driven timer). */
export interface ScraperDeps {
  clock?: Clock;
  /** The exposition text at `url`; rejects on any failure (and may stop once `signal` aborts). */
  fetchMetrics?: (url: string, signal: AbortSignal) => Promise<string>;
  /** Calls `tick` every `ms` until the returned function is called. */
  every?: (ms: number, tick: () => void) => () => void;
}

/**
 * A whole scrape, headers to last byte: an endpoint that trickles bytes (each within undici's idle
 * timeouts) must not hold the run's reports, which wait for every scrape.
 */
const SCRAPE_DEADLINE_MS = 5000;

async function fetchOverHttp(url: string, signal: AbortSignal): Promise<string> {
  const response = await request(url, { headersTimeout: SCRAPE_DEADLINE_MS, bodyTimeout: SCRAPE_DEADLINE_MS, signal: AbortSignal.any([signal, AbortSignal.timeout(SCRAPE_DEADLINE_MS)]) });
  const text = await response.body.text();
  if (response.statusCode !== 200) throw new Error(`status ${response.statusCode}`);
  // A login page or a proxy's error page answered 200 is not a scrape of the server.
  const type = String(response.headers['content-type'] ?? '');
  if (/^\s*text\/html\b/i.test(type)) throw new Error(`content-type ${type}`);
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
  /** Each stage's scrapes, folded in as they are answered (one at a time: see `scrape`, so in order). */
  const byStage = new Map<number, SegmentAccumulator>();
  const inFlight = new Set<Promise<void>>();
  /** The stage whose measured part is running (between its start and end marks). */
  let current: number | null = null;
  let failed = 0;
  const failedByStage = new Map<number, number>();
  let stopped: Promise<ServerMetricsReport> | null = null;
  /** The interval scrape in flight, which a stage mark supersedes. */
  let interval: { controller: AbortController; job: Promise<void> } | null = null;
  /** The last stage mark's scrape: a mark waits for the one before it (a stage's end for its start). */
  let markInFlight: Promise<void> | null = null;
  /** The scrape being folded into its stage's accumulator: the next one waits for it. */
  let folding: Promise<void> = Promise.resolve();

  /**
   * `stage`: the mark's stage; null: an interval scrape, which belongs to the stage it was sent
   * in (none outside one). Scrapes of one stage never overlap, as Prometheus never overlaps a
   * target's: two overlapping ones can be answered from counts read in either order (a busy
   * server reads them late), and a lower count after a higher would read as a reset. So an
   * interval scrape due while another scrape is in flight is skipped, and a stage mark, which the
   * run waits for, abandons the interval scrape in flight and goes out once the mark before it
   * has been answered (a run waits at most a second for a start mark, which may still be out
   * when its stage ends).
   */
  const scrape = (stage: number | null): Promise<void> => {
    if (stage === null && inFlight.size > 0) return Promise.resolve();
    if (stage !== null && interval !== null) {
      interval.controller.abort();
      inFlight.delete(interval.job);
      interval = null;
    }
    const during = current;
    const controller = new AbortController();
    const failedIn = (at: number | null): void => {
      failed++;
      if (at !== null) failedByStage.set(at, (failedByStage.get(at) ?? 0) + 1);
    };
    const before = stage === null ? null : markInFlight;
    const job = (async () => {
      if (before !== null) await before;
      const sentAtEpochMs = clock.epochMs(clock.now());
      try {
        const text = await fetchMetrics(url, controller.signal);
        if (controller.signal.aborted) return;
        // Read between other work: in one process this thread also stamps the run's reads.
        const families = await parsePrometheusTextInSlices(text);
        if (controller.signal.aborted) return;
        // Text without one sample (an empty body, a page of something else) is no scrape.
        if (families.size === 0) throw new Error('no Prometheus samples');
        const at = stage ?? during;
        if (at === null) return;
        let segment = byStage.get(at);
        if (segment === undefined) byStage.set(at, (segment = new SegmentAccumulator()));
        // Folded in slices too, one scrape after another (in the order they were answered).
        const scraped = segment;
        const fold = folding.then(() => scraped.addInSlices({ atEpochMs: sentAtEpochMs, families }));
        folding = fold.catch(() => {});
        await fold;
      } catch {
        // An abandoned scrape is no failure: a mark took its place.
        if (!controller.signal.aborted) failedIn(stage ?? during);
      }
    })();
    if (stage === null) interval = { controller, job };
    else markInFlight = job;
    inFlight.add(job);
    void job.finally(() => {
      inFlight.delete(job);
      if (interval?.job === job) interval = null;
      if (markInFlight === job) markInFlight = null;
    });
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
        // Each stage is a segment of its own: no change is taken across what ran between stages.
        const over = (wanted: readonly number[], histogramsBy: HistogramGrouping = 'series'): ServerMetricsSummary => {
          const chosen = [...new Set(wanted)].sort((a, b) => a - b);
          const failures = chosen.reduce((n, stage) => n + (failedByStage.get(stage) ?? 0), 0);
          return summarizeAccumulated(chosen.map((stage) => byStage.get(stage) ?? new SegmentAccumulator()), failures, histogramsBy);
        };
        const stages = new Map<number, ServerMetricsSummary>();
        const seen = [...new Set([...byStage.keys(), ...failedByStage.keys()])].sort((a, b) => a - b);
        for (const stage of seen) stages.set(stage, over([stage]));
        return { url, failed_scrapes: failed, summary: over(seen), stages, over };
      })();
      return stopped;
    },
  };
}
