/**
 * From engine token plans to what each choice releases: vLLM's stop-string handling (the first
 * stop string found, in request order, ends the choice; the text is cut before it, or after it
 * with include_stop_str_in_output) and its stream hold-back (while a choice runs, the last
 * `longest stop − 1` characters stay unsent, so a stop string is never half-streamed).
 */
import type { PlannedToken } from '../../../contracts/truth.ts';

export type FinishReason = 'length' | 'stop';

export interface StopRule {
  stop: readonly string[];
  includeStopStrInOutput: boolean;
  /**
   * `min_tokens`: vLLM checks no stop string until the choice has more tokens than this (a stop
   * string wholly inside the first min_tokens tokens never fires; one that ends after them does).
   */
  minTokens?: number;
}

export interface PlannedChoice {
  index: number;
  /** The tokens the choice really produced (a stop string cuts the engine's plan short). */
  tokens: PlannedToken[];
  /** The text released with each token (same length as tokens; may be '' under hold-back). */
  deltas: string[];
  /** The choice's whole visible text. */
  text: string;
  finishReason: FinishReason;
  /** The stop string that ended the choice; null for length, EOS or echo end. */
  stopReason: string | null;
}

const isHigh = (c: number): boolean => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number): boolean => c >= 0xdc00 && c <= 0xdfff;

/** UTF-16 index left after dropping `count` code points from the end (vLLM counts code points). */
function dropCodePoints(text: string, count: number): number {
  let i = text.length;
  while (count > 0 && i > 0) {
    i--;
    if (i > 0 && isLow(text.charCodeAt(i)) && isHigh(text.charCodeAt(i - 1))) i--;
    count--;
  }
  return i;
}

function findStop(text: string, from: number, stops: readonly string[]): { stop: string; at: number } | null {
  for (const stop of stops) {
    const at = text.indexOf(stop, Math.max(0, from - stop.length + 1));
    if (at >= 0) return { stop, at };
  }
  return null;
}

/**
 * `engineFinish` is why the engine's plan ends when no stop string fires: 'length' at the
 * token limit, 'stop' for an EOS (echo end, or the natural end of an unlimited request).
 */
export function planChoice(index: number, planned: readonly PlannedToken[], engineFinish: FinishReason, rule: StopRule): PlannedChoice {
  if (rule.stop.length === 0) {
    const deltas = planned.map((t) => t.text);
    return { index, tokens: [...planned], deltas, text: deltas.join(''), finishReason: engineFinish, stopReason: null };
  }
  // A loop, not Math.max(...lengths): a list of 100k+ stop strings would overflow the call stack.
  let longestStop = 0;
  for (const s of rule.stop) longestStop = Math.max(longestStop, [...s].length);
  const holdBack = rule.includeStopStrInOutput ? 0 : longestStop - 1;
  const deltas: string[] = [];
  let output = '';
  let sent = 0;
  for (let k = 0; k < planned.length; k++) {
    const before = output.length;
    output += (planned[k] as PlannedToken).text;
    const hit = k + 1 > (rule.minTokens ?? 0) ? findStop(output, before, rule.stop) : null;
    const last = hit !== null || k === planned.length - 1;
    if (hit !== null) output = output.slice(0, rule.includeStopStrInOutput ? hit.at + hit.stop.length : hit.at);
    const visibleEnd = last ? output.length : dropCodePoints(output, holdBack);
    deltas.push(visibleEnd > sent ? output.slice(sent, visibleEnd) : '');
    sent = Math.max(sent, visibleEnd);
    if (hit !== null) {
      return { index, tokens: planned.slice(0, k + 1), deltas, text: output, finishReason: 'stop', stopReason: hit.stop };
    }
  }
  return { index, tokens: [...planned], deltas, text: output, finishReason: engineFinish, stopReason: null };
}
