/** The messages between the run's main thread and its worker threads. */
import type { StageSamplesJson } from '../record/stage-samples.ts';
import type { PackedEntries } from '../data/file-datasets.ts';
import type { BenchOptions } from '../run/bench-options.ts';
import type { StagePhase, StageShare } from '../run/stage-runner.ts';

export interface WorkerInput {
  options: BenchOptions;
  /**
   * A file dataset's entries in request order, read once by the main thread and shared (its
   * SharedArrayBuffers are not copied); null: the worker builds the dataset from `options`.
   */
  dataset: PackedEntries | null;
  share: StageShare;
  /**
   * Int32 cells over a SharedArrayBuffer, one per stage plan (in plan order): a closed stage's
   * measured sends still unclaimed by any worker of the run (see `sharedBudget`).
   */
  closedBudgets: SharedArrayBuffer;
  /** Per stage plan: the closed stage's count for this process, and the number its claims start at. */
  closedCounts: number[];
  closedFirsts: number[];
}

/** A request handed to the worker's sender; times as epoch milliseconds. */
export interface IssuedInWorker {
  index: number;
  requestId: string;
  stage: number;
  warmup: boolean;
  scheduledEpochMs: number;
  issuedEpochMs: number;
  promptTokens: number;
  model: string;
}

/**
 * Samples travel in pieces (`samples` every second, the rest with `done`), each covering the
 * records whose lines came before it, so a worker that dies loses no finished request: the main
 * thread rebuilds the uncovered ones from their lines.
 */
export type WorkerMessage =
  /** Set up (or done with what came before) and waiting for this stage part's shared start. */
  | { type: 'ready'; stage: number; phase: StagePhase }
  | { type: 'issued'; request: IssuedInWorker }
  | { type: 'record'; index: number; line: string; ok: boolean; ttftMs: number | null; reached: boolean }
  | { type: 'stage'; stage: number; phase: 'start' | 'end' }
  | { type: 'samples'; samples: Array<[number, StageSamplesJson]> }
  | { type: 'done'; samples: Array<[number, StageSamplesJson]>; interrupted: boolean; maxStallMs: number }
  | { type: 'failed'; message: string };

/**
 * `start`: every worker anchors this stage part's schedule on `epochMs` (a moment just ahead).
 * `cutoff`: a second interrupt; in-flight requests are cut off at once.
 */
export type MainMessage = { type: 'stop' } | { type: 'cutoff' } | { type: 'start'; stage: number; phase: StagePhase; epochMs: number };
