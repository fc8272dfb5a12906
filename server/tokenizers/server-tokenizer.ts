/**
 * What the server needs of a tokenizer: counting prompt tokens for usage and context checks,
 * `/tokenize` and `/detokenize`, and the pieces echo mode gives back. Tokenizing happens when a
 * request is planned, never while bytes are being emitted.
 */
import type { GeneratedToken } from '../engine/text.ts';

export interface ServerTokenizer {
  /** `builtin` or the js-tiktoken encoding name. */
  readonly name: string;
  count(text: string): number;
  encode(text: string): number[];
  /** The largest token id (vLLM V1 refuses prompt ids above its tokenizer's `max_token_id`). */
  readonly maxTokenId: number;
  /** The text of token ids; null when an id is outside the vocabulary. Pure: planning uses it (echo). */
  decode(ids: readonly number[]): string | null;
  /**
   * `/detokenize`'s reading: decode, plus whatever this tokenizer remembers of ids it handed out
   * (the built-in one's hashed words). Never used to plan a response, which stays a pure function
   * of (seed, request).
   */
  detokenize(ids: readonly number[]): string | null;
  /** The text split into tokens whose texts concatenate to the input. */
  pieces(text: string): GeneratedToken[];
}
