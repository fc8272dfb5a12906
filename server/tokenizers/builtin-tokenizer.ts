/**
 * The default tokenizer: contracts/tokenizer.ts's split (the one the client shares), with ids
 * that are the generator's vocabulary index where the piece is a vocabulary entry, a code-point
 * id for any other single character, and a stable hash for other words. A hash is not reversible
 * by itself, so the words behind the hashed ids the server hands out are remembered (a bounded
 * table) for `/detokenize`: `/tokenize` then `/detokenize` gives the text back, as a real
 * tokenizer's would. Planning never reads that table (echo decodes purely), so a response stays
 * a function of (seed, request), whatever was tokenized before.
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

/** Words behind the hashed ids handed out; emptied when it holds this many (echoed prompts bring any text). */
const REMEMBERED_WORDS = 65_536;
const hashedWords = new Map<number, string>();

function pieceId(piece: string): number {
  const known = VOCABULARY_IDS.get(piece);
  if (known !== undefined) return known;
  const cp = piece.codePointAt(0) as number;
  if (piece.length === String.fromCodePoint(cp).length) return CODE_POINT_BASE + cp;
  const id = HASHED_BASE + (hashString(piece) % HASHED_BASE);
  if (hashedWords.get(id) !== piece) {
    if (hashedWords.size >= REMEMBERED_WORDS) hashedWords.clear();
    hashedWords.set(id, piece);
  }
  return id;
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

function decodeWith(ids: readonly number[], remembered: boolean): string | null {
  let out = '';
  for (const id of ids) {
    const text = decodeId(id) ?? (remembered ? (hashedWords.get(id) ?? null) : null);
    if (text === null) return null;
    out += text;
  }
  return out;
}

export const builtinTokenizer: ServerTokenizer = Object.freeze({
  name: 'builtin',
  maxTokenId: 2 * HASHED_BASE - 1,
  count: countTokens,
  encode: (text: string): number[] => splitTokens(text).map(pieceId),
  decode: (ids: readonly number[]): string | null => decodeWith(ids, false),
  detokenize: (ids: readonly number[]): string | null => decodeWith(ids, true),
  pieces: (text: string): GeneratedToken[] => splitTokens(text).map((piece) => ({ id: pieceId(piece), text: piece })),
});
