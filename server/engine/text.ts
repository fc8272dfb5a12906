/**
 * Deterministic generated text. `random` mode draws token ids and texts from a request's own
 * stream, with a configurable share of multi-byte UTF-8 tokens; `echo` mode hands back the
 * tokens of the prompt (or last chat message), as llm-d-inference-sim's echo mode does.
 */
import type { Rng } from '../../contracts/rng.ts';
import { FIRST_MULTIBYTE_ID, VOCABULARY } from './vocabulary.ts';

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
}

export function generateTokens(rng: Rng, count: number, options: TextOptions): GeneratedToken[] {
  if (options.echo !== undefined) return options.echo.slice(0, count);
  const tokens: GeneratedToken[] = new Array(count);
  const asciiCount = FIRST_MULTIBYTE_ID;
  const multibyteCount = VOCABULARY.length - FIRST_MULTIBYTE_ID;
  for (let i = 0; i < count; i++) {
    const id = rng.chance(options.multibyteRate)
      ? FIRST_MULTIBYTE_ID + rng.int(0, multibyteCount - 1)
      : rng.int(0, asciiCount - 1);
    tokens[i] = { id, text: VOCABULARY[id] as string };
  }
  return tokens;
}
