/**
 * A benchmark run: options → dataset and stage plans → sends (in this thread or over worker
 * threads) → every finished request written to requests.jsonl and folded into compact
 * per-stage samples → reports. Interrupting stops scheduling and still writes every report.
 */
import { realClock, type Clock } from '../../contracts/clock.ts';
import { MAX_CLIENT_DURATION_MS, MAX_PLANNED_SENDS } from '../config/config-schema.ts';
import { LATE_START_NOTE_MS, lateStartNote, READY_LEAD_MS, sleepUntilEpoch, WORKERS_SETUP_LEAD_MS } from './start-at.ts';
import { API_ADAPTERS } from '../apis/index.ts';
import { buildDataset, datasetForWorkers, workerDataset, type DataSpec } from '../data/data-spec.ts';
import type { Dataset } from '../data/dataset.ts';
import { DatasetError, type PackedEntries } from '../data/file-datasets.ts';
import { planStages, planTrace, sweepProbe, sweepRates, type LoadSpec, type StagePlan } from '../load/load-plan.ts';
import { reachedServer, type RequestRecord } from '../record/request-record.ts';
import { StageSamples } from '../record/stage-samples.ts';
import type { LifecycleReport } from '../report/lifecycle-report.ts';
import { LiveCounters, startProgress } from '../report/progress.ts';
import { requestLine } from '../report/request-line.ts';
import { openRunOutput, type RunOutput } from '../report/run-output.ts';
import { saturationRate } from '../load/saturation-probe.ts';
import { buildRunReports, rawSamplesFile, type StageContext } from '../report/run-reports.ts';
import { runIdentity } from '../report/run-identity.ts';
import { startStageScraper, type ServerMetricsReport } from '../scrape/stage-scraper.ts';
import { lpgStageRates, writeLpgReports } from '../report/lpg-output.ts';
import { runWorkers } from '../workers/worker-pool.ts';
import { BenchError } from './bench-error.ts';
import { DEFAULT_ADAPTER_REPORTS, type BenchOptions } from './bench-options.ts';
import { defaultMetricsUrl, httpRequestSender } from './http-request-sender.ts';
import { runLocal } from './local-run.ts';
import { senderFactoryFor } from './request-sender.ts';
import { watchStalls } from '../measure/stall-watch.ts';
import { closedCountOf, closedFirstOf, localBudget, shardShares, shareOf, type StageShare } from './stage-runner.ts';

export { BenchError } from './bench-error.ts';

export interface BenchResult {
  /** Every record (only when `keepRecords` is not false). */
  records: RequestRecord[];
  report: LifecycleReport;
  stageReports: Map<number, LifecycleReport>;
  samples: Map<number, StageSamples>;
  serverMetrics: ServerMetricsReport | null;
  model: string;
  originMs: number;
  originEpochMs: number;
  interrupted: boolean;
  /** `--workers` threads that died mid-run (their requests are still in the reports). */
  lostWorkers: number;
  /** Some request, warm-up and sweep probe included, got past connecting to the server. */
  reachedServer: boolean;
  /**
   * The longest stall (event-loop delay or GC pause) of a measuring thread during the run, in ms:
   * every arrival stamp taken inside a stall is late by up to its length.
   */
  clientMaxStallMs: number;
  /** The first write into --output that failed (RunOutput.failure), as one line; null when all were written. */
  outputFailure: string | null;
}

export interface BenchDeps {
  clock?: Clock;
  /** Aborting stops scheduling; in-flight requests get the grace period, then fail as timeouts. */
  signal?: AbortSignal;
  /** Aborting after `signal` ends the grace period at once (a second Ctrl-C): in-flight requests fail now. */
  cutOff?: AbortSignal;
  onRecord?: (record: RequestRecord) => void;
  /** A `--workers` thread died (default: one line on stderr); its requests are still reported. */
  onWorkerLost?: (message: string) => void;
}

export function loadSpecOf(options: BenchOptions): LoadSpec {
  return (
    options.load ?? {
      type: 'stages',
      arrival: { kind: 'constant' },
      stages: [{ kind: 'rate', rate: options.rate, durationSec: options.durationSec }],
      warmupSec: options.warmupSec,
    }
  );
}

export function dataSpecOf(options: BenchOptions): DataSpec {
  return options.data ?? { type: 'synthetic', input: { kind: 'fixed', value: options.promptTokens }, output: { kind: 'fixed', value: options.maxTokens } };
}

/** Stage plans known before the run (a sweep's come after its probe). */
export function planLoad(load: LoadSpec, seed: number): StagePlan[] {
  if (load.type === 'stages') return planStages(load.stages, load.arrival, load.warmupSec, seed);
  if (load.type === 'trace') return [planTrace(load.offsetsMs, load.warmupSec)];
  return [sweepProbe(load.sweep)];
}

export function stageContext(plan: StagePlan): StageContext {
  return plan.kind === 'open'
    ? { loadType: plan.loadType, intendedRate: plan.intendedRate, concurrency: null }
    : { loadType: 'concurrency', intendedRate: null, concurrency: plan.concurrency };
}

function plannedTotal(plans: readonly StagePlan[]): number {
  return plans.reduce((n, p) => n + (p.kind === 'open' ? p.sends.length : p.count), 0);
}

/** A dataset mistake (a bad file, an impossible length) as the run's one-line error. */
function asBenchError<T>(build: () => T): T {
  try {
    return build();
  } catch (error) {
    if (error instanceof DatasetError || error instanceof RangeError) throw new BenchError(error.message);
    throw error;
  }
}

export function datasetFor(options: BenchOptions): Dataset {
  return asBenchError(() => buildDataset(dataSpecOf(options), options.seed));
}

/**
 * A `--workers` run's dataset, read once here (datasetForWorkers): a file is read, checked and
 * tokenized in this thread only, before any request, and its entries reach every worker in
 * shared memory; null for a dataset each worker generates from the options.
 */
export function datasetForWorkerThreads(options: BenchOptions): PackedEntries | null {
  return asBenchError(() => datasetForWorkers(dataSpecOf(options), options.seed));
}

/** A worker thread's dataset: item for item what `datasetFor` gives in one process. */
export function datasetInWorker(options: BenchOptions, packed: PackedEntries | null): Dataset {
  return asBenchError(() => workerDataset(dataSpecOf(options), options.seed, packed));
}

export async function runBench(options: BenchOptions, deps: BenchDeps = {}): Promise<BenchResult> {
  const clock = deps.clock ?? realClock;
  let base: URL;
  try {
    base = new URL(options.url);
  } catch {
    throw new BenchError(`--url must be an absolute http URL, got ${JSON.stringify(options.url)}`);
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new BenchError(`--url must be http or https, got ${base.protocol}`);
  const api = API_ADAPTERS[options.api];
  if (api === undefined) throw new BenchError(`unknown API ${JSON.stringify(options.api)}`);
  const startAheadMs = (options.startAtEpochMs ?? -Infinity) - clock.epochMs(clock.now());
  if (startAheadMs > MAX_CLIENT_DURATION_MS) throw new BenchError(`the start (--start-at) is ${(startAheadMs / 3_600_000).toFixed(1)} h ahead; it may be at most 24 h ahead`);
  const sender = senderFactoryFor(api.name, httpRequestSender)({ base, api, clock, options });
  const controller = new AbortController();
  const relayAbort = (): void => controller.abort();
  if (deps.signal?.aborted) controller.abort();
  deps.signal?.addEventListener('abort', relayAbort, { once: true });
  let scraper: ReturnType<typeof startStageScraper> | null = null;
  try {
    // An interrupt during discovery leaves no model, and nothing will be sent: the run then
    // ends as any interrupted run does (empty reports, exit 130).
    const model = options.model ?? (await sender.discoverModel(controller.signal)) ?? '';
    const workers = options.workers ?? 1;
    // Read once, here, whatever the number of workers: with several, a file dataset reaches them
    // packed in shared memory (and this thread keeps no copy of its own); else this thread sends.
    const packed = workers > 1 ? datasetForWorkerThreads(options) : null;
    const dataset = workers > 1 ? null : datasetFor(options);
    const load = loadSpecOf(options);
    const shard = options.shard ?? { index: 0, count: 1 };
    if (load.type === 'sweep' && (workers > 1 || shard.count > 1)) throw new BenchError('a sweep probes saturation in one process: use --workers 1 and no --shard');
    let plans = planLoad(load, options.seed);
    // A warm-up asked for that plans no send (shorter than one gap at the first stage's rate) says so.
    const firstPlan = plans[0];
    if (load.warmupSec > 0 && firstPlan?.kind === 'open' && !firstPlan.sends.some((send) => send.warmup)) {
      process.stderr.write(`benchtruth: note: the ${load.warmupSec} s warm-up is shorter than one gap between sends at the first stage's rate, so it sends no request\n`);
    }
    const contexts = new Map<number, StageContext>();
    for (const plan of plans) contexts.set(plan.stage, stageContext(plan));

    const output: RunOutput | null = options.outputDir !== null ? openRunOutput(options.outputDir, options.perRequestReport === true) : null;
    const startAt = options.startAtEpochMs ?? null;
    const passedAtLaunch = startAt !== null && startAt < clock.epochMs(clock.now());
    if (passedAtLaunch) process.stderr.write(`benchtruth: note: the start (--start-at) was ${((clock.epochMs(clock.now()) - startAt) / 1000).toFixed(3)} s ago; starting now\n`);
    // Waiting for a start: the first use (or the workers' set-up, which makes theirs) comes a
    // moment before it, not at once, or its connection idles out before the first request.
    if (startAt !== null) await sleepUntilEpoch(clock, startAt - (workers === 1 ? READY_LEAD_MS : WORKERS_SETUP_LEAD_MS), controller.signal);
    // The transport's first use (a connection, undici's parser) before the origin, not in a TTFT;
    // with --workers each worker's own sender makes it (this process sends nothing measured).
    if (workers === 1) await sender.ready(controller.signal);
    // Worker threads anchor their first start on it themselves (worker-pool.ts).
    let originMs = clock.now();
    if (startAt !== null && workers === 1) {
      await sleepUntilEpoch(clock, startAt, controller.signal);
      const now = clock.now();
      const lateMs = clock.epochMs(now) - startAt;
      if (lateMs > LATE_START_NOTE_MS && !passedAtLaunch && !controller.signal.aborted) lateStartNote(lateMs);
      // The schedule is anchored on the start itself, as worker threads anchor theirs: the timer's
      // wake-up a few ms after it is then the first sends' schedule_delay, not a shift of the
      // whole schedule against the other shards'. A start already past at launch anchors on now.
      originMs = passedAtLaunch ? now : now - Math.max(0, lateMs);
    }
    const originEpochMs = clock.epochMs(originMs);
    const counters = new LiveCounters();
    const progress = startProgress(counters, load.type === 'sweep' ? null : plannedTotal(plans), options.progress ?? 'off');
    // The generator's server_metrics come from scrapes during the run: lpg scrapes by default.
    let scrape = (options.scrape ?? null) === null && options.reportFormat === 'lpg' ? { url: null, intervalMs: 1000 } : options.scrape;
    // A gRPC channel's port serves no HTTP: JetStream's Prometheus port is another one.
    if (scrape && scrape.url === null && api.name === 'jetstream-grpc') {
      process.stderr.write('benchtruth: note: no server metrics are scraped: --api jetstream-grpc talks to a gRPC port, which serves no /metrics; give JetStream\'s Prometheus port with --metrics-url\n');
      scrape = null;
    }
    if (scrape) scraper = startStageScraper(scrape.url ?? defaultMetricsUrl(base), scrape.intervalMs);
    const onStage = (stage: number, phase: 'start' | 'end'): Promise<void> | undefined => (stage >= 0 ? scraper?.mark(stage, phase) : undefined);
    const probeRecords: RequestRecord[] = [];
    const onLocalRecord = (record: RequestRecord): void => {
      if (record.stage < 0) probeRecords.push(record);
      counters.finish(record.failure === null, record.metrics?.ttftMs ?? null, reachedServer(record));
      output?.writeLine(requestLine(record, originMs, originEpochMs));
      deps.onRecord?.(record);
    };

    let samples: Map<number, StageSamples>;
    let records: RequestRecord[] = [];
    let interrupted: boolean;
    let lostWorkers = 0;
    let clientMaxStallMs = 0;
    /** Set when a sweep's probe found no saturation: raised once the (empty) reports are written. */
    let sweepFailure: BenchError | null = null;
    const stalls = watchStalls();
    try {
      if (workers > 1) {
        const shares = shardShares(shard, workers);
        const result = await runWorkers({ options: { ...options, model, keepRecords: false, progress: 'off', scrape: null, outputDir: null, startAtEpochMs: passedAtLaunch ? null : startAt }, dataset: packed, shares, plans, closedFirst: (plan) => closedFirstOf(plan, shard, workers), signal: controller.signal, ...(deps.cutOff === undefined ? {} : { cutOff: deps.cutOff }), counters, onLine: (line) => output?.writeLine(line), onStage, ...(deps.onWorkerLost === undefined ? {} : { onWorkerLost: deps.onWorkerLost }) });
        samples = result.samples;
        interrupted = result.interrupted;
        lostWorkers = result.lostWorkers;
        clientMaxStallMs = result.maxStallMs;
      } else {
        const share = { worker: shard.index, workers: shard.count };
        // A shard's closed-loop claims are numbered after the shards before it (closedFirstOf).
        const measuredBudget = (stagePlans: readonly StagePlan[]) => (position: number) => {
          const plan = stagePlans[position];
          return plan?.kind === 'closed' ? localBudget(closedCountOf(plan, [share]), closedFirstOf(plan, shard, 1)) : undefined;
        };
        // With --start-at the first stage's schedule starts at the start itself (the run's origin),
        // as every shard's does; every later part, and every part of a run without one, when it begins.
        let anchored = startAt === null || passedAtLaunch;
        const stageOrigin = (): Promise<number | undefined> => {
          const origin = anchored ? undefined : originMs;
          anchored = true;
          return Promise.resolve(origin);
        };
        if (dataset === null) throw new Error('no dataset for the run in this thread');
        const common = { options, dataset, model, sender, clock, share, signal: controller.signal, ...(deps.cutOff === undefined ? {} : { cutOff: deps.cutOff }), onIssue: () => counters.issued++, onRecord: onLocalRecord, onStage, stageOrigin };
        const firstPlans = plans;
        const first = await runLocal({ ...common, plans: firstPlans, measuredBudget: measuredBudget(firstPlans) });
        samples = first.samples;
        records = first.records;
        interrupted = first.interrupted;
        const probed = load.type === 'sweep' && !interrupted;
        const saturation = probed ? saturationRate(probeRecords, load.sweep.probeConcurrency) : null;
        if (probed && saturation === null) sweepFailure = new BenchError('the sweep probe finished no request successfully; cannot find the saturation rate');
        const rates = load.type === 'sweep' && saturation !== null ? sweepRates(saturation, load.sweep) : [];
        // Only the probe tells a sweep's size: its stages are held to the run's cap here, not before.
        const probeSends = firstPlans.reduce((n, p) => n + (p.kind === 'open' ? p.sends.length : p.count), 0);
        const sweepSends = load.type !== 'sweep' ? 0 : rates.reduce((n, rate, i) => n + Math.ceil(rate * (load.sweep.stageDurationSec + (i === 0 ? load.warmupSec : 0))), probeSends);
        if (sweepSends > MAX_PLANNED_SENDS) {
          sweepFailure = new BenchError(`the sweep's stages up to the measured saturation (${saturation?.toFixed(2) ?? ''} req/s) would plan ${sweepSends} requests with the probe's; at most ${MAX_PLANNED_SENDS} per run (fix: a shorter load.sweep.stage_duration or fewer load.sweep.num_stages)`);
        } else if (load.type === 'sweep' && saturation !== null) {
          // inference-perf logs it too: the stage rates are only as good as this figure.
          process.stderr.write(`benchtruth: sweep: the probe measured saturation at ${saturation.toFixed(2)} req/s; stages at ${rates.map((rate) => rate.toFixed(2)).join(', ')} req/s\n`);
          plans = planStages(
            rates.map((rate) => ({ kind: 'rate' as const, rate, durationSec: load.sweep.stageDurationSec })),
            load.arrival,
            // The warm-up runs before the first measured stage, at its rate (the probe is in no report anyway).
            load.warmupSec,
            options.seed,
          );
          for (const plan of plans) contexts.set(plan.stage, stageContext(plan));
          // The stages number their requests after the probe's (its whole planned count, the same in every shard).
          const rest = await runLocal({ ...common, plans, indexBase: probeSends, measuredBudget: measuredBudget(plans) });
          for (const [stage, s] of rest.samples) samples.set(stage, s);
          records = [...records, ...rest.records];
          interrupted = rest.interrupted;
        }
      }
    } finally {
      // With --workers the workers measure, and each watched its own thread.
      const ownStallMs = stalls.stop();
      if (workers === 1) clientMaxStallMs = ownStallMs;
      progress.stop();
    }
    const serverMetrics = scraper !== null ? await scraper.stop() : null;
    scraper = null;
    const slo = options.slo ?? null;
    // A shard's reports state its own share of the load; raw_samples.json keeps the whole run's, for merge.
    const ownContexts = shard.count > 1 ? new Map([...contexts].map(([stage, context]) => [stage, shardContext(context, shard, workers)])) : contexts;
    const reports = buildRunReports(samples, ownContexts, slo, options.reportPercentiles ?? []);
    const adapterSwitches = options.adapterReports ?? DEFAULT_ADAPTER_REPORTS;
    if (output !== null) {
      const rawSamples = {
        ...rawSamplesFile(samples, contexts, slo, runIdentity(options, load, dataSpecOf(options), model), options.reportPercentiles ?? []),
        ...(options.reportFormat === 'lpg' ? { lpg: { api: api.name, stream: options.stream, model, startEpochMs: originEpochMs } } : {}),
        client: { max_stall_ms: clientMaxStallMs },
        adapter_reports: adapterSwitches,
      };
      await output.writeReports({ summary: reports.summary, stages: reports.stages, rawSamples, adapters: { reports: reports.adapters, ...adapterSwitches }, serverMetrics });
      if (options.reportFormat === 'lpg') output.attempt('the latency profile generator report', () => writeLpgReports(options.outputDir as string, { api: api.name, stream: options.stream, model, startEpochMs: originEpochMs, stages: samples, stageRates: lpgStageRates(ownContexts), serverMetricsOver: serverMetrics === null ? null : (stages) => serverMetrics.over(stages, 'name') }));
    }
    // Its requests.jsonl has company: a directory any tool (and merge) can read, then the one line.
    if (sweepFailure !== null) throw sweepFailure;
    return { records, report: reports.summary, stageReports: reports.stages, samples, serverMetrics, model, originMs, originEpochMs, interrupted, lostWorkers, clientMaxStallMs, reachedServer: counters.reached > 0, outputFailure: output?.failure() ?? null };
  } finally {
    deps.signal?.removeEventListener('abort', relayAbort);
    if (scraper !== null) await scraper.stop();
    await sender.close();
  }
}


/**
 * What shard `index` of `count` sends of a stage: every count-th request of the schedule (its
 * rate / count) and, of a closed loop, its workers' shares of the concurrency.
 */
function shardContext(context: StageContext, shard: { index: number; count: number }, workers: number): StageContext {
  const ownConcurrency = (total: number): number => shardShares(shard, workers).reduce((sum, share) => sum + shareOf(total, share), 0);
  return {
    ...context,
    intendedRate: context.intendedRate === null ? null : context.intendedRate / shard.count,
    concurrency: context.concurrency === null ? null : ownConcurrency(context.concurrency),
  };
}
