/**
 * One worker thread of a `--workers N` run: rebuilds the same plans from the options (pure
 * functions of them) and the same dataset (a file dataset over the entries the main thread read
 * once and shares with every worker; any other from the options), runs its share, streams each
 * finished request's line to the main thread, and hands back its raw samples at the end. Before each stage it
 * reports ready and waits for the main thread's shared start epoch, so every worker's share
 * is anchored on the same moment and the shares interleave as one schedule.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { realClock } from '../../contracts/clock.ts';
import { API_ADAPTERS } from '../apis/index.ts';
import { requestLine } from '../report/request-line.ts';
import { httpRequestSender } from '../run/http-request-sender.ts';
import { runLocal } from '../run/local-run.ts';
import { senderFactoryFor } from '../run/request-sender.ts';
import { sharedBudget, type StagePhase } from '../run/stage-runner.ts';
import type { StageSamples, StageSamplesJson } from '../record/stage-samples.ts';
import { reachedServer } from '../record/request-record.ts';
import { datasetInWorker, loadSpecOf, planLoad } from '../run/run-bench.ts';
import type { MainMessage, WorkerInput, WorkerMessage } from './worker-messages.ts';
import { watchStalls } from '../measure/stall-watch.ts';

const port = parentPort;
if (port === null) throw new Error('bench-worker must run in a worker thread');
const { options, dataset: packed, share, closedBudgets, closedCounts, closedFirsts } = workerData as WorkerInput;
const budgetCells = new Int32Array(closedBudgets);
const post = (message: WorkerMessage): void => port.postMessage(message);
/** How often finished requests' samples go to the main thread (what a crash could cost). */
const SAMPLES_EVERY_MS = 1000;
// Test hook: the worker with this share index dies after finishing this many requests.
const crashAfter = process.env.BENCHTRUTH_TEST_WORKER_CRASH?.split(':').map(Number);
const controller = new AbortController();
const cutOff = new AbortController();
const clock = realClock;
// Stage parts waiting for their shared start: resolve with the start as a clock reading, or null.
const waitingStarts = new Map<string, (originMs: number | null) => void>();
const partKey = (stage: number, phase: StagePhase): string => `${stage}/${phase}`;
port.on('message', (message: MainMessage) => {
  if (message.type === 'stop') {
    controller.abort();
    for (const resolve of waitingStarts.values()) resolve(null);
    waitingStarts.clear();
  } else if (message.type === 'cutoff') {
    cutOff.abort();
  } else {
    const nowMs = clock.now();
    const key = partKey(message.stage, message.phase);
    waitingStarts.get(key)?.(nowMs + message.epochMs - clock.epochMs(nowMs));
    waitingStarts.delete(key);
  }
});
const stageOrigin = (stage: number, phase: StagePhase): Promise<number | null> =>
  new Promise((resolve) => {
    if (controller.signal.aborted) return resolve(null);
    waitingStarts.set(partKey(stage, phase), resolve);
    post({ type: 'ready', stage, phase });
  });

try {
  const api = API_ADAPTERS[options.api];
  const sender = senderFactoryFor(api.name, httpRequestSender)({ base: new URL(options.url), api, clock, options });
  const plans = planLoad(loadSpecOf(options), options.seed);
  const dataset = datasetInWorker(options, packed);
  // Before this worker says it is ready for the first stage (the barrier starts every stage).
  await sender.ready(controller.signal);
  // Lines are stamped relative to the first shared start, so every worker's lines share it.
  let originMs = 0;
  let originEpochMs = clock.epochMs(0);
  let anchored = false;
  const anchoredOrigin = async (stage: number, phase: StagePhase): Promise<number | null> => {
    const origin = await stageOrigin(stage, phase);
    if (origin !== null && !anchored) {
      anchored = true;
      originMs = origin;
      originEpochMs = clock.epochMs(origin);
    }
    return origin;
  };
  // Samples not yet handed over; emptied at each hand-over (runLocal adds new stages as needed).
  const samples = new Map<number, StageSamples>();
  const handOver = (): Array<[number, StageSamplesJson]> => {
    const pieces: Array<[number, StageSamplesJson]> = [...samples].map(([stage, s]) => [stage, s.toJSON()]);
    samples.clear();
    return pieces;
  };
  const flusher = setInterval(() => {
    if (samples.size > 0) post({ type: 'samples', samples: handOver() });
  }, SAMPLES_EVERY_MS);
  let finished = 0;
  try {
    const stalls = watchStalls();
    const result = await runLocal({
      options,
      plans,
      dataset,
      stageOrigin: anchoredOrigin,
      measuredBudget: (position) => (plans[position]?.kind === 'closed' ? sharedBudget(budgetCells, position, closedCounts[position] ?? 0, closedFirsts[position] ?? 0) : undefined),
      model: options.model as string,
      sender,
      clock,
      share,
      signal: controller.signal,
      cutOff: cutOff.signal,
      samples,
      onIssue: (issued) =>
        post({
          type: 'issued',
          request: { ...issued, scheduledEpochMs: clock.epochMs(issued.scheduledMs), issuedEpochMs: clock.epochMs(issued.issuedMs) },
        }),
      onRecord: (record) => {
        post({ type: 'record', index: record.index, line: requestLine(record, originMs, originEpochMs), ok: record.failure === null, ttftMs: record.metrics?.ttftMs ?? null, reached: reachedServer(record) });
        if (crashAfter !== undefined && crashAfter[0] === share.worker && ++finished === crashAfter[1]) process.exit(1);
      },
      onStage: (stage, phase) => {
        post({ type: 'stage', stage, phase });
        return undefined;
      },
    });
    post({ type: 'done', samples: handOver(), interrupted: result.interrupted, maxStallMs: stalls.stop() });
  } finally {
    clearInterval(flusher);
    await sender.close();
  }
} catch (error) {
  post({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
}
port.close();
