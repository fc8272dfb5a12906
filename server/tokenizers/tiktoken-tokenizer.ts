/**
 * A real BPE tokenizer, offline: js-tiktoken's bundled encodings (OpenAI's published ranks,
 * shipped inside the npm package), loaded synchronously on first use so `buildServer` stays
 * synchronous. With it `usage.prompt_tokens` equals what a tiktoken-counting client computes.
 */
import { createRequire } from 'node:module';
import type { Tiktoken, TiktokenBPE } from 'js-tiktoken/lite';
import type { GeneratedToken } from '../engine/text.ts';
import type { ServerTokenizer } from './server-tokenizer.ts';

export const TIKTOKEN_ENCODINGS = ['cl100k_base', 'o200k_base', 'p50k_base', 'p50k_edit', 'r50k_base', 'gpt2'] as const;

export type TiktokenEncodingName = (typeof TIKTOKEN_ENCODINGS)[number];

const require = createRequire(import.meta.url);
const loaded = new Map<TiktokenEncodingName, ServerTokenizer>();

export function isTiktokenEncoding(name: string): name is TiktokenEncodingName {
  return (TIKTOKEN_ENCODINGS as readonly string[]).includes(name);
}

/** The largest id of the ranks (each line of `bpe_ranks` is `! <first id> <token> <token> …`) and specials. */
function maxIdOf(ranks: TiktokenBPE): number {
  let max = -1;
  for (const id of Object.values(ranks.special_tokens)) max = Math.max(max, id);
  for (const line of ranks.bpe_ranks.split('\n')) {
    const parts = line.split(' ');
    const first = Number(parts[1]);
    if (parts.length > 2 && Number.isInteger(first)) max = Math.max(max, first + parts.length - 3);
  }
  return max;
}

function load(name: TiktokenEncodingName): { encoding: Tiktoken; maxTokenId: number } {
  const { Tiktoken: TiktokenClass } = require('js-tiktoken/lite') as { Tiktoken: new (ranks: TiktokenBPE) => Tiktoken };
  const loadedRanks = require(`js-tiktoken/ranks/${name}`) as TiktokenBPE | { default: TiktokenBPE };
  const ranks = 'default' in loadedRanks ? loadedRanks.default : loadedRanks;
  return { encoding: new TiktokenClass(ranks), maxTokenId: maxIdOf(ranks) };
}

export function tiktokenTokenizer(name: TiktokenEncodingName): ServerTokenizer {
  const cached = loaded.get(name);
  if (cached !== undefined) return cached;
  const { encoding, maxTokenId } = load(name);
  // Special-token text is read as the special token, as a Hugging Face tokenizer does for vLLM.
  const encode = (text: string): number[] => encoding.encode(text, 'all');
  const decode = (ids: readonly number[]): string | null => {
    // js-tiktoken skips ids it does not know; every real token decodes to at least one byte.
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0 || encoding.decode([id]) === '') return null;
    }
    return encoding.decode([...ids]);
  };
  const tokenizer: ServerTokenizer = Object.freeze({
    name,
    maxTokenId,
    count: (text: string): number => encode(text).length,
    encode,
    decode,
    // A BPE decodes every id it has: nothing to remember.
    detokenize: decode,
    pieces(text: string): GeneratedToken[] {
      // A character split over several tokens shows up with the token that completes it.
      const ids = encode(text);
      const out: GeneratedToken[] = [];
      let pending: number[] = [];
      for (const id of ids) {
        pending.push(id);
        const piece = encoding.decode(pending);
        if (piece.endsWith('\uFFFD') && pending.length < 4) {
          out.push({ id, text: '' });
          continue;
        }
        out.push({ id, text: piece });
        pending = [];
      }
      return out;
    },
  });
  loaded.set(name, tokenizer);
  return tokenizer;
}
