/**
 * Deterministic generated text. `random` mode draws token ids and texts from a request's own
 * stream, with a configurable share of multi-byte UTF-8 tokens; `echo` mode hands back the
 * tokens of the prompt (or last chat message), as llm-d-inference-sim's echo mode does.
 */
import type { Rng } from '../../contracts/rng.ts';
import { EOS_ID, FIRST_MULTIBYTE_ID, VOCABULARY } from './vocabulary.ts';

export interface GeneratedToken {
  id: number;
  text: string;
}

export type TextMode = 'random' | 'echo';

export interface TextOptions {
  /** Probability that a token is a multi-byte UTF-8 code point (CJK, emoji …). */
  multibyteRate: number;
  /**
   * Echo mode: the tokens to give back, in order; generation ends when they run out (an EOS
   * after the echo) or at the token limit, whichever comes first.
   */
  echo?: readonly GeneratedToken[];
  /**
   * `min_tokens`: the model's EOS is masked until this many tokens exist, so an echo shorter
   * than it goes on with random text (its EOS stand-in dropped) up to it, within `count`.
   */
  minTokens?: number;
}

export function generateTokens(rng: Rng, count: number, options: TextOptions): GeneratedToken[] {
  if (options.echo !== undefined) {
    const least = Math.min(count, options.minTokens ?? 0);
    const echoed = options.echo.slice(0, count).filter((token) => !(token.id === EOS_ID && least > 0));
    return echoed.length >= least ? echoed : [...echoed, ...randomTokens(rng, least - echoed.length, options.multibyteRate)];
  }
  return randomTokens(rng, count, options.multibyteRate);
}

function randomTokens(rng: Rng, count: number, multibyteRate: number): GeneratedToken[] {
  const tokens: GeneratedToken[] = new Array(count);
  const asciiCount = FIRST_MULTIBYTE_ID;
  const multibyteCount = VOCABULARY.length - FIRST_MULTIBYTE_ID;
  for (let i = 0; i < count; i++) {
    const id = rng.chance(multibyteRate)
      ? FIRST_MULTIBYTE_ID + rng.int(0, multibyteCount - 1)
      : rng.int(0, asciiCount - 1);
    tokens[i] = { id, text: VOCABULARY[id] as string };
  }
  return tokens;
}
