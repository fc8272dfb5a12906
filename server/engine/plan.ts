/**
 * The engine's plan for one request: which tokens, and when each is due. Pure: the same
 * (seed, request key, request, load at arrival) always gives the same plan.
 */
import { requestRng, type Rng } from '../../contracts/rng.ts';
import type { PlannedToken } from '../../contracts/truth.ts';
import { generateTokens, type TextOptions } from './text.ts';
import { simpleTiming, tokenDueTimes, type TimingModel } from './timing.ts';

/** The two-number model older callers pass; read as fixed TTFT and ITL. */
export interface SimpleTiming {
  ttftMs: number;
  itlMs: number;
}

/**
 * Spacing of the placeholder due times of a deferred plan (the batching scheduler decides the
 * real ones later). Wide enough that any wire delay or stall planned after a token stays
 * attributable to that token: a write's due = its anchor token's due + an offset below this.
 */
export const NOMINAL_TOKEN_SPACING_MS = 1e9;

/** How the engine times a request's tokens (chosen by its scheduler at admission). */
export type PlanTiming =
  | { deferred: false; model: TimingModel; running: number }
  /** The batching scheduler decides later: placeholder times (see token-availability.ts). */
  | { deferred: true; model: TimingModel };

export interface PlanInput {
  seed: number;
  /** The client's x-request-id when sent, else a per-server counter. */
  requestKey: string;
  maxTokens: number;
  timing: TimingModel | SimpleTiming | PlanTiming;
  text: TextOptions;
  /** Prompt length, for the prefill cost (default 0). */
  promptTokens?: number;
  /** Requests running at arrival, itself included, for the load factor (default 1). */
  running?: number;
  /** Token i gets the placeholder due (i + 1) × NOMINAL_TOKEN_SPACING_MS; see token-availability.ts. */
  deferred?: boolean;
  /**
   * Engine steps after the last token that make none (JetStream's EOS step): `endDueMs` is when
   * the last of them is done. Default 0: the plan ends with its last token.
   */
  stepsAfter?: number;
}

export interface TokenPlan {
  tokens: PlannedToken[];
  /** When the engine's last step for this request is done (the last token's due, or the last of `stepsAfter`). */
  endDueMs: number;
  finishReason: 'length' | 'stop';
  /** The request's stream after planning tokens, for later stages (ids, wire cuts, faults). */
  rng: Rng;
}

function timingModel(timing: TimingModel | SimpleTiming | PlanTiming): TimingModel {
  if ('deferred' in timing) return timing.model;
  return 'ttft' in timing ? timing : simpleTiming(timing.ttftMs, timing.itlMs);
}

export function planTokens(input: PlanInput): TokenPlan {
  const rng = requestRng(input.seed, input.requestKey);
  const textRng = rng.derive('text');
  const timingRng = rng.derive('timing');
  const generated = generateTokens(textRng, input.maxTokens, input.text);
  const timing = input.timing;
  const deferred = input.deferred === true || ('deferred' in timing && timing.deferred);
  const running = 'deferred' in timing && !timing.deferred ? timing.running : (input.running ?? 1);
  const steps = generated.length + (input.stepsAfter ?? 0);
  // Due times are drawn in order, so steps after the last token leave the tokens' own times as they were.
  const due = deferred ? null : tokenDueTimes(timingRng, steps, timingModel(timing), { promptTokens: input.promptTokens ?? 0, running });
  const dueOf = (step: number): number => (due === null ? (step + 1) * NOMINAL_TOKEN_SPACING_MS : (due[step] as number));
  const tokens = generated.map((token, i): PlannedToken => ({ id: token.id, text: token.text, dueMs: dueOf(i) }));
  return { tokens, endDueMs: steps === 0 ? 0 : dueOf(steps - 1), finishReason: 'length', rng };
}
