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
  /**
   * The tokens the step's event carries for a reader (DESIGN §4: an empty text carries none):
   * its own, plus those of its choice's steps before it whose text was empty (held back behind
   * a possible stop string), which reach the reader only with this text; 0 for such a step. A
   * choice's finish step always carries what is still held. A range of the token list.
   */
  eventTokenStart: number;
  eventTokenCount: number;
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
    into.push({ choice, tokenStart: start, tokenCount: size, eventTokenStart: start, eventTokenCount: size, text, finish: end === tokens.length, completionTokens: end, ordinal, dueMs: (tokens[end - 1] as PlannedToken).dueMs });
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
    let heldFrom = -1;
    for (const step of steps) {
      if (isHeld(step)) {
        if (heldFrom < 0) heldFrom = step.tokenStart;
        step.eventTokenCount = 0;
      } else if (heldFrom >= 0) {
        step.eventTokenCount += step.eventTokenStart - heldFrom;
        step.eventTokenStart = heldFrom;
        heldFrom = -1;
      }
    }
    return { steps, tokens: only.tokens };
  }
  for (const choice of choices) choiceSteps(choice, groups, steps);
  // Same-time steps go out step by step, each step in choice order, as vLLM's engine loop does.
  steps.sort((a, b) => a.dueMs - b.dueMs || a.ordinal - b.ordinal || a.choice.index - b.choice.index);
  // The token list in the order events carry them: a held step's tokens go in with the step
  // that releases them, so every event's tokens stay one range.
  const tokens: PlannedToken[] = [];
  const held = new Map<PlannedChoice, StreamStep[]>();
  const place = (step: StreamStep): void => {
    const from = step.completionTokens - step.tokenCount;
    step.tokenStart = tokens.length;
    for (let i = 0; i < step.tokenCount; i++) tokens.push(step.choice.tokens[from + i] as PlannedToken);
  };
  for (const step of steps) {
    if (isHeld(step)) {
      const waiting = held.get(step.choice);
      if (waiting === undefined) held.set(step.choice, [step]);
      else waiting.push(step);
      step.eventTokenStart = tokens.length;
      step.eventTokenCount = 0;
      continue;
    }
    const start = tokens.length;
    for (const waiting of held.get(step.choice) ?? []) place(waiting);
    held.delete(step.choice);
    place(step);
    step.eventTokenStart = start;
    step.eventTokenCount = tokens.length - start;
  }
  return { steps, tokens };
}

/** A step whose text is empty and that does not end its choice: its tokens wait for the next text. */
function isHeld(step: StreamStep): boolean {
  return step.text === '' && !step.finish;
}

/** The ids a step released, as vLLM's `token_ids` renders them (compact JSON). */
export function stepTokenIds(step: StreamStep): string {
  const from = step.completionTokens - step.tokenCount;
  return JSON.stringify(step.choice.tokens.slice(from, step.completionTokens).map((t) => t.id));
}
