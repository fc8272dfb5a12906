/**
 * Every choice of a request from the engine's token plans: one plan per choice (prompt × n),
 * each with its own random stream so choice 0 is exactly the single-choice plan, then vLLM's
 * stop-string handling. The one place both endpoints ask the engine for tokens.
 */
import type { Rng } from '../../../contracts/rng.ts';
import { planTokens, type PlanTiming } from '../../engine/plan.ts';
import type { GeneratedToken } from '../../engine/text.ts';
import type { ServerOptions } from '../../options.ts';
import { planChoice, type PlannedChoice, type StopRule } from './choices.ts';

export interface ChoicesInput {
  /** `planTiming` (set by the engine at admission) replaces the fixed TTFT/ITL when present. */
  options: Pick<ServerOptions, 'seed' | 'ttftMs' | 'itlMs' | 'multibyteRate'> & { planTiming?: PlanTiming };
  requestKey: string;
  /** Per prompt: the tokens echo mode gives back, or null for random text. */
  echoes: ReadonlyArray<readonly GeneratedToken[] | null>;
  /** Choices per prompt. */
  n: number;
  /** Token limit per choice (finite). */
  maxTokens: number;
  /** The limit stands for the model's EOS (the request set none), so reaching it is a 'stop'. */
  naturalStop: boolean;
  stop: StopRule;
  promptTokens: number;
}

export interface PlannedChoices {
  choices: PlannedChoice[];
  /** Choice 0's stream after planning, for the wire layer's cuts and faults. */
  rng: Rng;
}

export const choiceKey = (requestKey: string, index: number): string => (index === 0 ? requestKey : `${requestKey}#choice-${index}`);

export function planChoices(input: ChoicesInput): PlannedChoices {
  const choices: PlannedChoice[] = [];
  let rng: Rng | null = null;
  input.echoes.forEach((echo, p) => {
    for (let i = 0; i < input.n; i++) {
      const index = p * input.n + i;
      const plan = planTokens({
        seed: input.options.seed,
        requestKey: choiceKey(input.requestKey, index),
        maxTokens: input.maxTokens,
        timing: input.options.planTiming ?? { ttftMs: input.options.ttftMs, itlMs: input.options.itlMs },
        text: echo === null ? { multibyteRate: input.options.multibyteRate } : { multibyteRate: 0, echo, minTokens: input.stop.minTokens ?? 0 },
        promptTokens: input.promptTokens,
      });
      rng ??= plan.rng;
      const ranOut = plan.tokens.length < input.maxTokens;
      const engineFinish = ranOut || input.naturalStop ? 'stop' : plan.finishReason;
      choices.push(planChoice(index, plan.tokens, engineFinish, input.stop));
    }
  });
  return { choices, rng: rng as unknown as Rng };
}
