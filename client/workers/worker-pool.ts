/**
 * Runs a benchmark over worker threads, one share of the schedule each, and merges their raw
 * samples (never their percentiles). Lines arrive as requests finish and go straight to
 * requests.jsonl; an interrupt is relayed to every worker. A worker that dies loses no request:
 * the finished ones its last samples did not cover are rebuilt from their lines, and the ones
 * still in flight are reported as `worker_crashed` failures.
 */
import { Worker } from 'node:worker_threads';
import { realClock } from '../../contracts/clock.ts';
import type { RequestRecord } from '../record/request-record.ts';
import { EPOCH_TIMELINE, StageSamples, type StageSamplesJson } from '../record/stage-samples.ts';
import type { LiveCounters } from '../report/progress.ts';
import { recordFromLine, requestLine } from '../report/request-line.ts';
import { BenchError } from '../run/bench-error.ts';
import { LATE_START_NOTE_MS, lateStartNote } from '../run/start-at.ts';
import type { BenchOptions } from '../run/bench-options.ts';
import type { PackedEntries } from '../data/file-datasets.ts';
import type { StagePlan } from '../load/load-plan.ts';
import { closedCountOf, type StagePhase, type StageShare } from '../run/stage-runner.ts';
import { StageBarrier } from './stage-barrier.ts';
import type { IssuedInWorker, MainMessage, WorkerInput, WorkerMessage } from './worker-messages.ts';

const ENTRY = new URL('./worker-entry.mjs', import.meta.url);
/** How far ahead of its broadcast a shared start lies, so every worker gets it in time. */
const START_LEAD_MS = 25;

export interface WorkerRunInput {
  options: BenchOptions;
  /** A file dataset's entries, read once by the main thread (datasetForWorkers); null: each worker builds the dataset from the options. */
  dataset?: PackedEntries | null;
  shares: readonly StageShare[];
  /** The stage plans every worker rebuilds from the options (sizes the shared closed-loop budgets). */
  plans: readonly StagePlan[];
  /** Where this process's claims of a closed stage are numbered from (closedFirstOf; default 0: one process). */
  closedFirst?: (plan: { concurrency: number; count: number }) => number;
  signal: AbortSignal;
  /** Aborted after `signal`: no more grace, in-flight requests are cut off at once. */
  cutOff?: AbortSignal;
  counters: LiveCounters;
  onLine: (line: string) => void;
  onStage?: (stage: number, phase: 'start' | 'end') => void;
  /** A worker died; its requests are in the results anyway (default: one line on stderr). */
  onWorkerLost?: (message: string) => void;
}

export interface WorkerRunResult {
  samples: Map<number, StageSamples>;
  interrupted: boolean;
  /** Workers that died before finishing their share. */
  lostWorkers: number;
  /** The longest stall of any worker's event loop while it measured (ms). */
  maxStallMs: number;
}

/** Times of records rebuilt in the main thread are epoch milliseconds already. */

/** A request a dead worker still had in flight, as the failure it became. */
function crashedRecord(issued: IssuedInWorker, endEpochMs: number, message: string): RequestRecord {
  return {
    index: issued.index,
    requestId: issued.requestId,
    model: issued.model,
    stage: issued.stage,
    warmup: issued.warmup,
    scheduledMs: issued.scheduledEpochMs,
    startMs: issued.issuedEpochMs,
    firstByteMs: null,
    endMs: Math.max(endEpochMs, issued.issuedEpochMs),
    status: null,
    failure: { kind: 'worker_crashed', message },
    events: [],
    tokensPerEventSource: 'one_per_event',
    outputTokens: 0,
    outputTokensSource: 'events',
    tokenCountMismatch: false,
    promptTokens: issued.promptTokens,
    promptTokensSource: 'client',
    usage: null,
    finishReason: null,
    finishReasonMs: null,
    metrics: null,
  };
}

export async function runWorkers(input: WorkerRunInput): Promise<WorkerRunResult> {
  const samples = new Map<number, StageSamples>();
  const absorb = (pieces: ReadonlyArray<[number, StageSamplesJson]>): void => {
    for (const [stage, json] of pieces) {
      const part = StageSamples.fromJSON(json);
      const existing = samples.get(stage);
      samples.set(stage, existing === undefined ? part : existing.absorb(part));
    }
  };
  const fold = (record: RequestRecord): void => {
    if (record.warmup) return;
    let stage = samples.get(record.stage);
    if (stage === undefined) samples.set(record.stage, (stage = new StageSamples()));
    stage.add(record, EPOCH_TIMELINE);
  };
  // One budget per closed stage for all the workers: what these shares send of its count.
  const closedBudgets = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT * input.plans.length);
  const budgetCells = new Int32Array(closedBudgets);
  const closedCounts = input.plans.map((plan) => (plan.kind === 'closed' ? closedCountOf(plan, input.shares) : 0));
  closedCounts.forEach((count, position) => (budgetCells[position] = count));
  const closedFirsts = input.plans.map((plan) => (plan.kind === 'closed' ? (input.closedFirst?.(plan) ?? 0) : 0));
  let interrupted = false;
  let lostWorkers = 0;
  let maxStallMs = 0;
  const workers: Worker[] = [];
  const stopAll = (): void => {
    for (const worker of workers) worker.postMessage({ type: 'stop' });
  };
  const warn = input.onWorkerLost ?? ((message: string) => process.stderr.write(`benchtruth: ${message}\n`));
  // Every stage part (a warm-up, then the measured part) starts for all workers at once, once
  // all are ready (set up, what came before drained), on one epoch just ahead; a stage ends
  // when every worker has drained it. The measured part's start is the stage's start mark.
  let firstStartSent = false;
  const starts = new StageBarrier<string>(input.shares.length, (key) => {
    const [stage, phase] = key.split('/') as [string, StagePhase];
    // Never before the run's own start (--start-at), which shards on other machines share; and
    // the first part is anchored on it even when the set-up overran it, as one process anchors
    // its schedule: the overrun is the first sends' schedule_delay, never a shift of the schedule.
    const soonest = realClock.epochMs(realClock.now()) + START_LEAD_MS;
    const startAt = input.options.startAtEpochMs ?? null;
    const epochMs = startAt !== null && !firstStartSent ? startAt : soonest;
    // The first start only: a later stage starts when the one before it has drained.
    if (startAt !== null && !firstStartSent && soonest - startAt > LATE_START_NOTE_MS) lateStartNote(soonest - startAt);
    firstStartSent = true;
    const start: MainMessage = { type: 'start', stage: Number(stage), phase, epochMs };
    for (const worker of workers) worker.postMessage(start);
    if (phase === 'measured') input.onStage?.(Number(stage), 'start');
  });
  const ends = new StageBarrier<number>(input.shares.length, (stage) => input.onStage?.(stage, 'end'));
  const leave = (worker: number): void => {
    starts.leave(worker);
    ends.leave(worker);
  };
  const cutOffAll = (): void => {
    for (const worker of workers) worker.postMessage({ type: 'cutoff' } satisfies MainMessage);
  };
  input.signal.addEventListener('abort', stopAll, { once: true });
  input.cutOff?.addEventListener('abort', cutOffAll, { once: true });
  try {
    await Promise.all(
      input.shares.map(
        (share, i) =>
          new Promise<void>((resolve, reject) => {
            const worker = new Worker(ENTRY, { workerData: { options: input.options, dataset: input.dataset ?? null, share, closedBudgets, closedCounts, closedFirsts } satisfies WorkerInput });
            workers.push(worker);
            if (input.signal.aborted) worker.postMessage({ type: 'stop' });
            let done = false;
            const inFlight = new Map<number, IssuedInWorker>();
            // Lines of finished requests that no samples piece has covered yet.
            let uncovered: string[] = [];
            worker.on('message', (message: WorkerMessage) => {
              switch (message.type) {
                case 'ready':
                  starts.arrive(`${message.stage}/${message.phase}`, i);
                  break;
                case 'issued':
                  input.counters.issued++;
                  inFlight.set(message.request.index, message.request);
                  break;
                case 'record':
                  inFlight.delete(message.index);
                  uncovered.push(message.line);
                  input.counters.finish(message.ok, message.ttftMs, message.reached);
                  input.onLine(message.line);
                  break;
                case 'stage':
                  if (message.phase === 'end') ends.arrive(message.stage, i);
                  break;
                case 'samples':
                  absorb(message.samples);
                  uncovered = [];
                  break;
                case 'done':
                  done = true;
                  interrupted ||= message.interrupted;
                  maxStallMs = Math.max(maxStallMs, message.maxStallMs);
                  absorb(message.samples);
                  uncovered = [];
                  break;
                case 'failed':
                  done = true;
                  // The others must not wait for it at a start barrier: the run stops.
                  leave(i);
                  stopAll();
                  reject(new BenchError(`worker ${i}: ${message.message}`));
                  break;
              }
            });
            let cause = 'exited before finishing';
            worker.on('error', (error) => (cause = error.message));
            worker.on('exit', () => {
              leave(i);
              if (done) return resolve();
              lostWorkers++;
              const message = `worker thread ${i} died (${cause})`;
              for (const line of uncovered) fold(recordFromLine(line));
              const now = realClock.epochMs(realClock.now());
              for (const issued of inFlight.values()) {
                const record = crashedRecord(issued, now, message);
                fold(record);
                // In flight when its thread died: it had connected or was connecting; say it had.
                input.counters.finish(false, null, true);
                input.onLine(requestLine(record, 0, 0));
              }
              warn(`${message}: its ${inFlight.size} in-flight requests are reported as worker_crashed failures, ${uncovered.length} finished ones were read back from their lines, and the rest of its share was not sent (of a closed loop's count, the other workers' lanes send what it left)`);
              resolve();
            });
          }),
      ),
    );
  } finally {
    input.signal.removeEventListener('abort', stopAll);
    input.cutOff?.removeEventListener('abort', cutOffAll);
  }
  return { samples, interrupted, lostWorkers, maxStallMs };
}

