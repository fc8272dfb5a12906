/**
 * Validation of a `/v1/completions` body with vLLM's rules and messages. Unknown fields are
 * tolerated, as vLLM does.
 */
import { beforeValidatorError, bodyNotObject, FieldReader, isPlainObject, type Parsed } from './request-fields.ts';
import { laxInt } from '../pydantic-lax.ts';
import { DEFAULT_VLLM_VERSION, type VllmVersion } from './dialect-version.ts';
import { beamSearchLimit, completionBeforeValidators, readSamplingFields, typeErrors, type SamplingFields, type SamplingKnobs, type StreamOptions } from './sampling-request.ts';

export type { Parsed } from './request-fields.ts';
export type { StreamOptions } from './sampling-request.ts';

export interface CompletionRequest {
  model: string;
  prompt: string | string[] | number[] | number[][];
  /** Output token limit per choice; Infinity when the request sent `max_tokens: null`. */
  maxTokens: number;
  stream: boolean;
  /**
   * A `stream: true` request vLLM does not stream (beam search; a best_of ≠ n is refused): it generates the
   * whole answer, then sends it as one event of the non-streamed body and `[DONE]`
   * (serving_completion.py's fake_stream_generator).
   */
  oneEventStream?: boolean;
  streamOptions: StreamOptions | null;
  ignoreEos: boolean;
  /** Choices per prompt (default 1). */
  n?: number;
  stop?: string[];
  includeStopStrInOutput?: boolean;
  returnTokenIds?: boolean;
  /** `logprobs`: alternatives per position, or null/absent for none. */
  logprobs?: number | null;
  /** `echo`: each choice's text starts with its prompt. */
  echo?: boolean;
  sampling?: SamplingKnobs;
  /** `use_beam_search` (see SamplingFields). */
  useBeamSearch?: boolean;
  /** `truncate_prompt_tokens` (see SamplingFields). */
  truncatePromptTokens?: number | null;
  /** `suffix` was sent (not null): vLLM refuses it once the model is known. */
  suffix?: boolean;
}

/** A lax integer list (pydantic's list[int] in lax mode: bools, integral floats and digit strings too), or null. */
function laxIntList(value: unknown): number[] | null {
  if (!Array.isArray(value)) return null;
  const ints: number[] = [];
  for (const item of value) {
    const int = laxInt(item);
    if (typeof int !== 'number') return null;
    ints.push(int);
  }
  return ints;
}

/**
 * `prompt: Optional[Union[list[int], list[list[int]], str, list[str]]]` as pydantic's smart
 * union reads it: every member strictly first (so `["1"]` stays text), then each member in lax
 * mode (so `[true]` is the token prompt `[1]` and `[1, "2"]` is `[1, 2]`); null when none fits.
 */
function readPrompt(value: unknown): CompletionRequest['prompt'] | null {
  if (typeof value === 'string') return value;
  if (!Array.isArray(value)) return null;
  // Empty lists pass pydantic (list[int], list[list[int]]); vLLM's renderer refuses them later.
  if (value.every((v) => Number.isInteger(v))) return value as number[];
  if (value.every((v) => Array.isArray(v) && v.every((t) => Number.isInteger(t)))) return value as number[][];
  if (value.every((v) => typeof v === 'string')) return value as string[];
  const ints = laxIntList(value);
  if (ints !== null) return ints;
  const lists = value.map(laxIntList);
  return lists.every((list) => list !== null) ? (lists as number[][]) : null;
}

/** The prompts of a request, one entry per prompt (a batch gives several). */
export function promptList(prompt: CompletionRequest['prompt']): Array<string | number[]> {
  if (typeof prompt === 'string') return [prompt];
  const first = prompt[0];
  if (typeof first === 'number') return [prompt as number[]];
  return prompt as Array<string | number[]>;
}

/** `prompt_embeds: Optional[Union[bytes, list[bytes]]]`: pydantic reads text as bytes. */
function readPromptEmbeds(reader: FieldReader): void {
  const raw = reader.body.prompt_embeds;
  if (raw === undefined || raw === null || typeof raw === 'string') return;
  if (Array.isArray(raw)) {
    raw.forEach((item: unknown, i) => {
      if (typeof item !== 'string') reader.issues.push({ type: 'bytes_type', loc: ['prompt_embeds', 'list[bytes]', i], msg: 'Input should be a valid bytes', input: item });
    });
    return;
  }
  reader.issues.push(
    { type: 'bytes_type', loc: ['prompt_embeds', 'bytes'], msg: 'Input should be a valid bytes', input: raw },
    { type: 'list_type', loc: ['prompt_embeds', 'list[bytes]'], msg: 'Input should be a valid list', input: raw },
  );
}

/**
 * CompletionRequest's `validate_prompt_and_prompt_embeds`: 0.11 refuses a prompt that is absent
 * or the empty text (with no embeddings, or an empty list of them) before the engine sees it;
 * 0.10.1 only an absent one (its "" reaches the engine, which refuses an empty prompt).
 */
function promptMissing(body: Record<string, unknown>, version: VllmVersion): string | null {
  const absent = (value: unknown): boolean => value === undefined || value === null;
  if (version === '0.10.1') return absent(body.prompt) && absent(body.prompt_embeds) ? 'At least one of `prompt` or `prompt_embeds` must be set.' : null;
  const noPrompt = absent(body.prompt) || body.prompt === '';
  const noEmbeds = absent(body.prompt_embeds) || (Array.isArray(body.prompt_embeds) && body.prompt_embeds.length === 0);
  return noPrompt && noEmbeds ? 'Either prompt or prompt_embeds must be provided and non-empty.' : null;
}

export function parseCompletionRequest(body: unknown, defaultMaxTokens: number, version: VllmVersion = DEFAULT_VLLM_VERSION): Parsed<CompletionRequest> {
  if (!isPlainObject(body)) {
    return { ok: false, error: bodyNotObject(body) };
  }
  const early = completionBeforeValidators(body, version, (checked) => promptMissing(checked, version));
  if (early !== null) return early;
  const reader = new FieldReader(body);
  const fields: SamplingFields = readSamplingFields(reader, false);
  // Completions' own types: `request_id: str`, `add_special_tokens: bool = True`.
  reader.strNotNull('request_id');
  reader.boolNotNull('add_special_tokens', true);
  readPromptEmbeds(reader);
  const explicitNull = body.max_tokens === null;
  const maxTokens = beamSearchLimit(fields, reader.int('max_tokens', defaultMaxTokens));
  const logprobs = reader.int('logprobs', null);
  const echo = reader.bool('echo', false);
  const suffix = reader.str('suffix') !== null;
  const prompt = body.prompt === undefined || body.prompt === null ? null : readPrompt(body.prompt);
  if (body.prompt !== undefined && body.prompt !== null && prompt === null) {
    reader.issues.push({ type: 'string_type', loc: ['prompt', 'str'], msg: 'Input should be a valid string', input: body.prompt });
  }
  const typeFailure = typeErrors(reader);
  if (typeFailure !== null) return typeFailure;
  if (prompt === null) {
    return { ok: false, error: beforeValidatorError('benchtruth does not serve prompt_embeds; send `prompt`.', body) };
  }
  return {
    ok: true,
    value: {
      model: fields.model,
      prompt,
      maxTokens: explicitNull ? Number.POSITIVE_INFINITY : (maxTokens as number),
      stream: fields.stream,
      streamOptions: fields.streamOptions,
      ignoreEos: fields.ignoreEos,
      n: fields.n,
      stop: fields.stop,
      includeStopStrInOutput: fields.includeStopStrInOutput,
      returnTokenIds: fields.returnTokenIds,
      ...(fields.sampling === undefined ? {} : { sampling: fields.sampling }),
      ...(fields.useBeamSearch === true ? { useBeamSearch: true } : {}),
      truncatePromptTokens: fields.truncatePromptTokens ?? null,
      logprobs,
      echo,
      suffix,
    },
  };
}
