/**
 * The engine's plan for one request: which tokens, and when each is due. Pure: the same
 * (seed, request key, request) always gives the same plan.
 */
import { requestRng, type Rng } from '../../contracts/rng.ts';
import type { PlannedToken } from '../../contracts/truth.ts';
import { generateTokens, type TextOptions } from './text.ts';
import { tokenDueTimes, type TimingModel } from './timing.ts';

export interface PlanInput {
  seed: number;
  /** The client's x-request-id when sent, else a per-server counter. */
  requestKey: string;
  maxTokens: number;
  timing: TimingModel;
  text: TextOptions;
}

export interface TokenPlan {
  tokens: PlannedToken[];
  finishReason: 'length' | 'stop';
  /** The request's stream after planning tokens, for later stages (ids, wire cuts, faults). */
  rng: Rng;
}

export function planTokens(input: PlanInput): TokenPlan {
  const rng = requestRng(input.seed, input.requestKey);
  const textRng = rng.derive('text');
  const timingRng = rng.derive('timing');
  const generated = generateTokens(textRng, input.maxTokens, input.text);
  const due = tokenDueTimes(timingRng, generated.length, input.timing);
  const tokens = generated.map((token, i): PlannedToken => ({ id: token.id, text: token.text, dueMs: due[i] as number }));
  return { tokens, finishReason: 'length', rng };
}
