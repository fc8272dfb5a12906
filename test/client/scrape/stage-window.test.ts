/**
 * The server-metrics windows a run reports, without sockets: runLocal drives a fake sender whose
 * requests finish when the test's microtask turns say (each finish moves a virtual clock and a
 * fake server's counters), and the scraper reads that fake server's /metrics. A stage's window
 * must hold its measured requests only: no warm-up request (the stage-start scrape comes once
 * the warm-up has drained), and the run summary no scrape taken before the first stage or
 * during a sweep's probe.
 */
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../contracts/clock.ts';
import type { StagePlan } from '../../../client/load/load-plan.ts';
import type { RequestRecord } from '../../../client/record/request-record.ts';
import { DEFAULT_BENCH_OPTIONS } from '../../../client/run/bench-options.ts';
import { runLocal } from '../../../client/run/local-run.ts';
import type { RequestSender, SendJob } from '../../../client/run/request-sender.ts';
import type { ServerMetricsSummary } from '../../../client/scrape/metric-summary.ts';
import { startStageScraper } from '../../../client/scrape/stage-scraper.ts';
import { failedRecord } from '../helpers/failed-record.ts';

const E2E = 'vllm:e2e_request_latency_seconds{model_name="m"}';
const RUNNING = 'vllm:num_requests_running{model_name="m"}';

/** A model server reduced to what it exports: requests running and a latency histogram of finished ones. */
class FakeServer {
  running = 0;
  finished = 0;
  exposition(): string {
    return [
      '# TYPE vllm:num_requests_running gauge',
      `vllm:num_requests_running{model_name="m"} ${this.running}`,
      '# TYPE vllm:e2e_request_latency_seconds histogram',
      `vllm:e2e_request_latency_seconds_bucket{le="1",model_name="m"} ${this.finished}`,
      `vllm:e2e_request_latency_seconds_bucket{le="+Inf",model_name="m"} ${this.finished}`,
      `vllm:e2e_request_latency_seconds_sum{model_name="m"} ${0.5 * this.finished}`,
      `vllm:e2e_request_latency_seconds_count{model_name="m"} ${this.finished}`,
      '',
    ].join('\n');
  }
}


/** Everything one run needs; `onSend` lets a test fire an interval scrape at a chosen moment. */
function harness(onSend: (job: SendJob) => void = () => {}) {
  const clock = new VirtualClock();
  const server = new FakeServer();
  const ticks: Array<() => void> = [];
  const scraper = startStageScraper('fake://metrics', 1000, {
    clock,
    fetchMetrics: () => Promise.resolve(server.exposition()),
    every: (_ms, tick) => {
      ticks.push(tick);
      return () => ticks.splice(0);
    },
  });
  const intervalScrape = (): void => ticks.forEach((tick) => tick());
  const sender: RequestSender = {
    async send(job) {
      const startMs = clock.now();
      server.running++;
      onSend(job);
      // Requests finish in an order of their own, so warm-up ones overlap measured-looking turns.
      for (let i = 0; i < 1 + ((job.index * 3) % 5); i++) await Promise.resolve();
      clock.advance(1);
      server.running--;
      server.finished++;
      return failedRecord(job, startMs, clock.now());
    },
    discoverModel: () => Promise.resolve('m'),
    ready: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
  const run = (plans: StagePlan[], indexBase = 0) =>
    runLocal({
      options: { ...DEFAULT_BENCH_OPTIONS, url: 'http://127.0.0.1:1', seed: 1 },
      plans,
      dataset: { name: 'fake', item: () => ({ prompt: 'x', promptTokens: 1, maxTokens: 1 }) },
      model: 'm',
      sender,
      clock,
      share: { worker: 0, workers: 1 },
      signal: new AbortController().signal,
      indexBase,
      // As run-bench wires it: a sweep's probe (stage -1) is never marked.
      onStage: (stage, phase) => (stage >= 0 ? scraper.mark(stage, phase) : undefined),
    });
  return { server, scraper, run, intervalScrape };
}

const counted = (summary: ServerMetricsSummary | undefined): number | undefined => summary?.histograms[E2E]?.count;
const measuredIn = (records: readonly RequestRecord[], stage: number): number => records.filter((r) => r.stage === stage && !r.warmup).length;

describe('server-metrics windows cover exactly the measured requests', () => {
  it('open loop with warm-up: the stage window starts after the warm-up drained; pre-run and warm-up interval scrapes stay out', async () => {
    let firedDuringWarmup = false;
    let firedDuringMeasured = false;
    const h = harness((job) => {
      if (job.warmup && !firedDuringWarmup) {
        firedDuringWarmup = true;
        h.intervalScrape();
      }
      if (!job.warmup && !firedDuringMeasured) {
        firedDuringMeasured = true;
        h.intervalScrape();
      }
    });
    h.intervalScrape(); // before the first stage
    const sends = Array.from({ length: 9 }, (_, i) => ({ offsetMs: 0, warmup: i < 4 }));
    const result = await h.run([
      { stage: 0, kind: 'open', loadType: 'constant', intendedRate: 10, sends },
      { stage: 1, kind: 'closed', loadType: 'concurrency', concurrency: 2, count: 4, warmupMs: 0 },
    ]);
    const report = await h.scraper.stop();
    expect(h.server.finished).toBe(13);
    expect(counted(report.stages.get(0))).toBe(measuredIn(result.records, 0));
    expect(counted(report.stages.get(0))).toBe(5);
    expect(counted(report.stages.get(1))).toBe(4);
    // Start mark, the interval scrape in the measured part, end mark; the warm-up's was dropped.
    expect(report.stages.get(0)?.scrapes).toBe(3);
    expect(report.stages.get(0)?.gauges[RUNNING]?.min).toBe(0);
    expect(counted(report.summary)).toBe(9);
    expect(report.summary.scrapes).toBe(5);
  });

  it('closed loop with warm-up: every lane finishes its warm-up before the window opens', async () => {
    const h = harness();
    const result = await h.run([{ stage: 0, kind: 'closed', loadType: 'concurrency', concurrency: 3, count: 6, warmupMs: 4 }]);
    const report = await h.scraper.stop();
    expect(result.records.filter((r) => r.warmup).length).toBeGreaterThan(0);
    expect(counted(report.stages.get(0))).toBe(6);
    expect(counted(report.summary)).toBe(6);
  });

  it("a sweep's probe is outside every window, interval scrapes during it included", async () => {
    let fired = false;
    const h = harness((job) => {
      if (job.stage === -1 && !fired) {
        fired = true;
        h.intervalScrape();
      }
    });
    await h.run([{ stage: -1, kind: 'closed', loadType: 'concurrency', concurrency: 2, count: 5, warmupMs: 0 }]);
    await h.run([{ stage: 0, kind: 'open', loadType: 'constant', intendedRate: 10, sends: Array.from({ length: 3 }, () => ({ offsetMs: 0, warmup: false })) }], 5);
    const report = await h.scraper.stop();
    expect(h.server.finished).toBe(8);
    expect([...report.stages.keys()]).toEqual([0]);
    expect(counted(report.summary)).toBe(3);
    expect(report.summary.scrapes).toBe(2);
  });
});
