/**
 * The default tokenizer: contracts/tokenizer.ts's split (the one the client shares), with ids
 * that are the generator's vocabulary index where the piece is a vocabulary entry, a code-point
 * id for any other single character, and a stable hash for other words (not reversible).
 */
import { hashString } from '../../contracts/rng.ts';
import { countTokens, splitTokens } from '../../contracts/tokenizer.ts';
import type { GeneratedToken } from '../engine/text.ts';
import { VOCABULARY } from '../engine/vocabulary.ts';
import type { ServerTokenizer } from './server-tokenizer.ts';

const CODE_POINT_BASE = 0x1000;
const CODE_POINT_END = CODE_POINT_BASE + 0x110000;
const HASHED_BASE = 0x200000;

const VOCABULARY_IDS: ReadonlyMap<string, number> = new Map(VOCABULARY.map((text, id) => [text, id]));

function pieceId(piece: string): number {
  const known = VOCABULARY_IDS.get(piece);
  if (known !== undefined) return known;
  const cp = piece.codePointAt(0) as number;
  if (piece.length === String.fromCodePoint(cp).length) return CODE_POINT_BASE + cp;
  return HASHED_BASE + (hashString(piece) % HASHED_BASE);
}

function decodeId(id: number): string | null {
  if (!Number.isInteger(id) || id < 0) return null;
  if (id < VOCABULARY.length) return VOCABULARY[id] as string;
  if (id >= CODE_POINT_BASE && id < CODE_POINT_END) {
    const cp = id - CODE_POINT_BASE;
    return cp >= 0xd800 && cp <= 0xdfff ? null : String.fromCodePoint(cp);
  }
  return null;
}

export const builtinTokenizer: ServerTokenizer = Object.freeze({
  name: 'builtin',
  maxTokenId: 2 * HASHED_BASE - 1,
  count: countTokens,
  encode: (text: string): number[] => splitTokens(text).map(pieceId),
  decode(ids: readonly number[]): string | null {
    let out = '';
    for (const id of ids) {
      const text = decodeId(id);
      if (text === null) return null;
      out += text;
    }
    return out;
  },
  pieces: (text: string): GeneratedToken[] => splitTokens(text).map((piece) => ({ id: pieceId(piece), text: piece })),
});
