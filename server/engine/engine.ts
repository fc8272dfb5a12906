/**
 * The engine seam every route goes through: admit a request (or refuse it when the waiting
 * queue is full), tell the planner how to time its tokens, then hand over the planned record
 * and its player so the engine can follow the request to its end.
 */
import type { TruthRecord } from '../../contracts/truth.ts';
import type { PlayedResponse } from '../transport/response-executor.ts';
import type { EngineListener, EngineRequest } from './engine-events.ts';
import type { SchedulerKind } from './engine-options.ts';
import type { PlanTiming } from './plan.ts';

export type { PlayedResponse };

export type { PlanTiming };

export interface Admitted {
  ok: true;
  timing: PlanTiming;
  /**
   * The route may plan later in the turn's gaps (EmissionScheduler.defer) rather than at once:
   * true when nothing the engine decided at admission can change before `run`.
   */
  plansLater: boolean;
  /**
   * What the engine does to a response's plan rendered again (PlannedResponse.replan) before it
   * takes the dropped one's place: its own preparation of the record at `run`; absent when
   * there is none. An engine that reads a sleeping record asks its player to render first
   * (PlayedResponse.render).
   */
  replanned?: (fresh: TruthRecord) => void;
  /**
   * Called once with the planned record and a function that starts playing it (the route's
   * call into the executor, returning the player): the engine prepares the record's timing,
   * starts the player and follows the request until the truth store reports its end.
   */
  run(record: TruthRecord, play: () => PlayedResponse): void;
  /** The route will not call `run` (its planning failed): the engine stops counting the request. */
  abandon(): void;
}

export interface Refused {
  ok: false;
  /** 429: the waiting queue is full; 400: the request can never fit the KV cache. */
  status: 429 | 400;
  message: string;
}

export interface EngineState {
  running: number;
  waiting: number;
  /** 0–1 share of KV-cache blocks in use. */
  kvUsage: number;
  runningLoras: string[];
  waitingLoras: string[];
  preemptions: number;
}

export interface Engine {
  readonly kind: SchedulerKind;
  admit(request: EngineRequest): Admitted | Refused;
  subscribe(listener: EngineListener): () => void;
  state(): EngineState;
  close(): void;
}
