/**
 * Deterministic stand-ins for vLLM's logprobs: each sampled token gets a logprob from a hash
 * of (request, choice, position) and ranks first; its alternatives are other vocabulary
 * entries with lower logprobs. Values are never integral, so JavaScript prints them exactly as
 * pydantic does. Shapes: completions' CompletionLogProbs and chat's ChatCompletionLogProbs.
 */
import { hashString } from '../../../contracts/rng.ts';
import type { PlannedToken } from '../../../contracts/truth.ts';
import { FIRST_MULTIBYTE_ID, VOCABULARY } from '../../engine/vocabulary.ts';

export interface LogprobSpec {
  /** Alternatives per position (completions `logprobs`, chat `top_logprobs`). */
  top: number;
  /** Per-request salt (a hash of the request key). */
  salt: number;
  /** `return_tokens_as_token_ids`: every token, sampled or alternative, is `token_id:<id>`. */
  asTokenIds?: boolean;
}

/** vLLM's default --max-logprobs. */
export const MAX_LOGPROBS = 20;

const q = JSON.stringify;

interface Ranked {
  /** The token as logprobs name it: its text, or `token_id:<id>` (return_tokens_as_token_ids). */
  text: string;
  logprob: number;
}

/** The sampled token first, then `count − 1` other vocabulary entries, logprobs decreasing. */
function ranked(spec: LogprobSpec, choice: number, position: number, token: PlannedToken, count: number): Ranked[] {
  const h = hashString(`${choice}:${position}`, spec.salt);
  const first = -((h % 9000) + 0.5) / 1000;
  const asIds = spec.asTokenIds === true;
  const out: Ranked[] = [{ text: asIds ? `token_id:${token.id}` : token.text, logprob: first }];
  const seen = new Set([token.text]);
  let candidate = (h >>> 8) % FIRST_MULTIBYTE_ID;
  while (out.length < count) {
    candidate = (candidate + 37) % FIRST_MULTIBYTE_ID;
    const text = VOCABULARY[candidate] as string;
    if (seen.has(text)) continue;
    seen.add(text);
    // The built-in tokenizer's id of a vocabulary entry is its place in the vocabulary.
    out.push({ text: asIds ? `token_id:${candidate}` : text, logprob: first - 0.75 * out.length });
  }
  return out;
}

const codePoints = (text: string): number => {
  let n = 0;
  for (const _ of text) n++;
  return n;
};

/**
 * CompletionLogProbs for tokens[from, to) of a choice: `text_offset` counts code points from
 * `initialOffset`; `top_logprobs` maps token text → logprob for the sampled token and its
 * alternatives (max(top, 1) entries, as vLLM's dict holds the sampled token plus top-k).
 */
export function completionLogprobsJson(spec: LogprobSpec, choice: number, tokens: readonly PlannedToken[], from: number, to: number, initialOffset: number): string {
  const offsets: number[] = [];
  const values: number[] = [];
  const texts: string[] = [];
  const tops: string[] = [];
  let offset = initialOffset;
  for (let i = from; i < to; i++) {
    const token = tokens[i] as PlannedToken;
    const entries = ranked(spec, choice, i, token, Math.max(spec.top, 1));
    const named = (entries[0] as Ranked).text;
    offsets.push(offset);
    // vLLM advances the offset by len() of the token as it names it, `token_id:<id>` included.
    offset += codePoints(named);
    values.push((entries[0] as Ranked).logprob);
    texts.push(named);
    tops.push(`{${entries.map((e) => `${q(e.text)}:${e.logprob}`).join(',')}}`);
  }
  return `{"text_offset":${q(offsets)},"token_logprobs":${q(values)},"tokens":${q(texts)},"top_logprobs":[${tops.join(',')}]}`;
}

const bytesOf = (text: string): string => q([...Buffer.from(text, 'utf8')]);

/** ChatCompletionLogProbs for tokens[from, to) of a choice (`top_logprobs` = `top` entries). */
export function chatLogprobsJson(spec: LogprobSpec, choice: number, tokens: readonly PlannedToken[], from: number, to: number): string {
  const content: string[] = [];
  for (let i = from; i < to; i++) {
    const token = tokens[i] as PlannedToken;
    const entries = ranked(spec, choice, i, token, Math.max(spec.top, 1));
    const top = entries.slice(0, spec.top).map((e) => `{"token":${q(e.text)},"logprob":${e.logprob},"bytes":${bytesOf(e.text)}}`);
    const first = entries[0] as Ranked;
    // The sampled token's bytes are its decoded text's, even named `token_id:<id>` (vLLM's
    // _create_chat_logprobs encodes `decoded_token`); only the top entries' are their names'.
    content.push(`{"token":${q(first.text)},"logprob":${first.logprob},"bytes":${bytesOf(token.text)},"top_logprobs":[${top.join(',')}]}`);
  }
  return `{"content":[${content.join(',')}]}`;
}
