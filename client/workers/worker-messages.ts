/** The messages between the run's main thread and its worker threads. */
import type { StageSamplesJson } from '../record/stage-samples.ts';
import type { BenchOptions } from '../run/bench-options.ts';
import type { StageShare } from '../run/stage-runner.ts';

export interface WorkerInput {
  options: BenchOptions;
  share: StageShare;
}

export type WorkerMessage =
  | { type: 'issued' }
  | { type: 'record'; line: string; ok: boolean; ttftMs: number | null }
  | { type: 'stage'; stage: number; phase: 'start' | 'end' }
  | { type: 'done'; samples: Array<[number, StageSamplesJson]>; interrupted: boolean }
  | { type: 'failed'; message: string };

export type MainMessage = { type: 'stop' };
