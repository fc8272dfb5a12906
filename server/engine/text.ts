/** Deterministic generated text: token ids and texts drawn from a request's own stream. */
import type { Rng } from '../../contracts/rng.ts';
import { FIRST_MULTIBYTE_ID, VOCABULARY } from './vocabulary.ts';

export interface GeneratedToken {
  id: number;
  text: string;
}

export interface TextOptions {
  /** Probability that a token is a multi-byte UTF-8 code point (CJK, emoji …). */
  multibyteRate: number;
}

export function generateTokens(rng: Rng, count: number, options: TextOptions): GeneratedToken[] {
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
