/**
 * Runs a benchmark over worker threads, one share of the schedule each, and merges their raw
 * samples (never their percentiles). Lines arrive as requests finish and go straight to
 * requests.jsonl; an interrupt is relayed to every worker.
 */
import { Worker } from 'node:worker_threads';
import { StageSamples } from '../record/stage-samples.ts';
import type { LiveCounters } from '../report/progress.ts';
import { BenchError } from '../run/bench-error.ts';
import type { BenchOptions } from '../run/bench-options.ts';
import type { StageShare } from '../run/stage-runner.ts';
import type { WorkerInput, WorkerMessage } from './worker-messages.ts';

const ENTRY = new URL('./worker-entry.mjs', import.meta.url);

export interface WorkerRunInput {
  options: BenchOptions;
  shares: readonly StageShare[];
  signal: AbortSignal;
  counters: LiveCounters;
  onLine: (line: string) => void;
  onStage?: (stage: number, phase: 'start' | 'end') => void;
}

export async function runWorkers(input: WorkerRunInput): Promise<{ samples: Map<number, StageSamples>; interrupted: boolean }> {
  const samples = new Map<number, StageSamples>();
  let interrupted = false;
  const workers: Worker[] = [];
  const stopAll = (): void => {
    for (const worker of workers) worker.postMessage({ type: 'stop' });
  };
  input.signal.addEventListener('abort', stopAll, { once: true });
  try {
    await Promise.all(
      input.shares.map(
        (share, i) =>
          new Promise<void>((resolve, reject) => {
            const worker = new Worker(ENTRY, { workerData: { options: input.options, share } satisfies WorkerInput });
            workers.push(worker);
            if (input.signal.aborted) worker.postMessage({ type: 'stop' });
            let done = false;
            worker.on('message', (message: WorkerMessage) => {
              switch (message.type) {
                case 'issued':
                  input.counters.issued++;
                  break;
                case 'record':
                  input.counters.finish(message.ok, message.ttftMs);
                  input.onLine(message.line);
                  break;
                case 'stage':
                  // The first worker's stage boundaries stand for the run's (they start together).
                  if (i === 0) input.onStage?.(message.stage, message.phase);
                  break;
                case 'done':
                  done = true;
                  interrupted ||= message.interrupted;
                  for (const [stage, json] of message.samples) {
                    const part = StageSamples.fromJSON(json);
                    const existing = samples.get(stage);
                    samples.set(stage, existing === undefined ? part : existing.absorb(part));
                  }
                  break;
                case 'failed':
                  done = true;
                  reject(new BenchError(`worker ${i}: ${message.message}`));
                  break;
              }
            });
            worker.on('error', (error) => reject(new BenchError(`worker ${i}: ${error.message}`)));
            worker.on('exit', () => (done ? resolve() : reject(new BenchError(`worker ${i} exited before finishing`))));
          }),
      ),
    );
  } finally {
    input.signal.removeEventListener('abort', stopAll);
  }
  return { samples, interrupted };
}
