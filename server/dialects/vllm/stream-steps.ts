/**
 * The order in which a response's chunks leave: every choice's tokens grouped into steps (one
 * token per step as vLLM streams it, or the wire policy's grouping), merged across choices by
 * due time (choice index breaks ties, as vLLM emits a step's outputs in index order).
 */
import type { PlannedToken } from '../../../contracts/truth.ts';
import type { PlannedChoice } from './choices.ts';

export interface StreamStep {
  choice: PlannedChoice;
  /** Index of the step's first token in the response's token list. */
  tokenStart: number;
  tokenCount: number;
  text: string;
  /** This step ends its choice (it carries the finish reason). */
  finish: boolean;
  /** The choice's tokens so far, this step included (continuous usage). */
  completionTokens: number;
  /** The step's number within its choice (0 = the choice's first chunk). */
  ordinal: number;
  dueMs: number;
}

export interface MergedSteps {
  steps: StreamStep[];
  /** Every choice's tokens in the order the steps release them. */
  tokens: PlannedToken[];
}

function choiceSteps(choice: PlannedChoice, groups: readonly number[] | undefined, into: StreamStep[]): void {
  const { tokens, deltas } = choice;
  let start = 0;
  let ordinal = 0;
  while (start < tokens.length) {
    const size = groups === undefined ? 1 : Math.max(1, Math.min(groups[ordinal] ?? 1, tokens.length - start));
    const end = start + size;
    let text = deltas[start] as string;
    for (let i = start + 1; i < end; i++) text += deltas[i] as string;
    into.push({ choice, tokenStart: start, tokenCount: size, text, finish: end === tokens.length, completionTokens: end, ordinal, dueMs: (tokens[end - 1] as PlannedToken).dueMs });
    start = end;
    ordinal++;
  }
}

export function mergeSteps(choices: readonly PlannedChoice[], groups?: readonly number[]): MergedSteps {
  const steps: StreamStep[] = [];
  const only = choices.length === 1 ? choices[0] : undefined;
  if (only !== undefined) {
    // One choice: its steps are already in order and its token list is the response's.
    choiceSteps(only, groups, steps);
    return { steps, tokens: only.tokens };
  }
  for (const choice of choices) choiceSteps(choice, groups, steps);
  // Same-time steps go out step by step, each step in choice order, as vLLM's engine loop does.
  steps.sort((a, b) => a.dueMs - b.dueMs || a.ordinal - b.ordinal || a.choice.index - b.choice.index);
  const tokens: PlannedToken[] = [];
  for (const step of steps) {
    const from = step.completionTokens - step.tokenCount;
    step.tokenStart = tokens.length;
    for (let i = 0; i < step.tokenCount; i++) tokens.push(step.choice.tokens[from + i] as PlannedToken);
  }
  return { steps, tokens };
}

/** The ids a step released, as vLLM's `token_ids` renders them (compact JSON). */
export function stepTokenIds(step: StreamStep): string {
  const from = step.completionTokens - step.tokenCount;
  return JSON.stringify(step.choice.tokens.slice(from, step.completionTokens).map((t) => t.id));
}
