/**
 * When each token of a request is due, relative to its arrival. The isolated model makes every
 * request's timing a pure function of its own random stream, independent of load.
 */
import type { Rng } from '../../contracts/rng.ts';

export interface TimingModel {
  /** Milliseconds from arrival to the first token. */
  ttftMs: number;
  /** Milliseconds between consecutive tokens. */
  itlMs: number;
}

/** Due time of every token: the first at TTFT, each next one ITL later. */
export function tokenDueTimes(_rng: Rng, count: number, model: TimingModel): Float64Array {
  const due = new Float64Array(count);
  for (let i = 0; i < count; i++) due[i] = model.ttftMs + i * model.itlMs;
  return due;
}
