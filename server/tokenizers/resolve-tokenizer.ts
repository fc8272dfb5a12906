/** `--tokenizer NAME` → the tokenizer: `builtin` (default) or a bundled js-tiktoken encoding. */
import { builtinTokenizer } from './builtin-tokenizer.ts';
import type { ServerTokenizer } from './server-tokenizer.ts';
import { isTiktokenEncoding, TIKTOKEN_ENCODINGS, tiktokenTokenizer } from './tiktoken-tokenizer.ts';

export const TOKENIZER_NAMES: readonly string[] = Object.freeze(['builtin', ...TIKTOKEN_ENCODINGS]);

export function resolveTokenizer(name: string): ServerTokenizer {
  if (name === 'builtin') return builtinTokenizer;
  if (isTiktokenEncoding(name)) return tiktokenTokenizer(name);
  throw new Error(`expected one of ${TOKENIZER_NAMES.join(', ')}, got ${JSON.stringify(name)}`);
}
