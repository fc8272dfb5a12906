/** Picks the scheduler named by --scheduler. */
import type { Clock } from '../../contracts/clock.ts';
import type { ServerOptions } from '../options.ts';
import type { EmissionScheduler } from '../transport/emission-scheduler.ts';
import type { TruthStore } from '../truth/truth-store.ts';
import { BatchingEngine } from './batching-engine.ts';
import type { Engine } from './engine.ts';
import { IsolatedEngine } from './isolated-engine.ts';

export function createEngine(options: ServerOptions, clock: Clock, truth: TruthStore, scheduler: EmissionScheduler): Engine {
  return options.scheduler === 'batching' ? new BatchingEngine(options, clock, truth, scheduler) : new IsolatedEngine(options, clock, truth);
}
