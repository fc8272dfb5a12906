/**
 * The fields completions and chat share, read with vLLM's rules: pydantic field types first
 * (lax coercion, every error collected), then SamplingParams' own checks (BadRequestError).
 */
import { badRequest, type VllmError } from './errors.ts';
import { MAX_LOGPROBS } from './logprobs.ts';
import { pythonFloat } from './python-repr.ts';
import type { WirePolicy } from '../../wire/wire-policy.ts';
import { writesPerToken } from '../../wire/plan-cost.ts';
import { beforeValidatorError, FieldReader, isPlainObject, laxBool, validationError, type Parsed } from './request-fields.ts';

export interface StreamOptions {
  includeUsage: boolean;
  continuousUsageStats: boolean;
}

export interface SamplingFields {
  /** '' when the request names no model (vLLM then serves the base model). */
  model: string;
  stream: boolean;
  streamOptions: StreamOptions | null;
  ignoreEos: boolean;
  n: number;
  stop: string[];
  includeStopStrInOutput: boolean;
  /** vLLM 0.10.2+: fill `prompt_token_ids`/`token_ids` (0.10.1 has no such fields). */
  returnTokenIds: boolean;
  /** Sampling knobs: validated as SamplingParams does; the fake model's text ignores them. */
  sampling?: SamplingKnobs;
}

/** The SamplingParams fields vLLM checks, with its defaults for an absent (None) value. */
export interface SamplingKnobs {
  temperature: number;
  topP: number;
  topK: number;
  minP: number;
  presencePenalty: number;
  frequencyPenalty: number;
  repetitionPenalty: number;
  minTokens: number;
  seed: number | null;
}

export const DEFAULT_SAMPLING: Readonly<SamplingKnobs> = Object.freeze({
  temperature: 1,
  topP: 1,
  topK: 0,
  minP: 0,
  presencePenalty: 0,
  frequencyPenalty: 0,
  repetitionPenalty: 1,
  minTokens: 0,
  seed: null,
});

/** Python truthiness of a JSON value, as vLLM's `data.get(...)` checks see it. */
export function pyTruthy(value: unknown): boolean {
  if (value === undefined || value === null || value === false || value === 0 || value === '') return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === 'object') return Object.keys(value).length > 0;
  return true;
}

/** The largest n benchtruth plans (vLLM has no cap; a fake server needs one to stay up). */
export const MAX_CHOICES = 128;

/**
 * The most socket writes one request may plan (choices × tokens × writes per token under its
 * wire policy, server/wire/plan-cost.ts). Planning is synchronous: about 5–10 µs per planned
 * event, so this bound keeps one request's planning to about a second at worst, while one choice
 * filling a 131,072-token context (long-output benchmarks) still fits with vLLM's own wire.
 */
export const MAX_PLANNED_WRITES = 131_072;

/**
 * The most stop-string checks one request may cost: every output token of every choice looks
 * for every stop string (choices × tokens × stop strings), about 0.1 µs each.
 */
export const MAX_STOP_CHECKS = 4_000_000;

export interface PlanSize {
  choices: number;
  maxTokens: number;
  stream: boolean;
  wire: Readonly<WirePolicy>;
  stopStrings: number;
}

/** benchtruth's own guard (not vLLM's): a request whose planning would stall the server. */
export function planTooLarge(size: PlanSize): VllmError | null {
  const { choices, maxTokens } = size;
  const perToken = writesPerToken(size.wire, size.stream);
  const writes = choices * maxTokens * perToken;
  if (writes > MAX_PLANNED_WRITES) {
    const how = perToken === 1 ? '' : ` × ${perToken} writes per token under its wire policy`;
    return badRequest(
      `benchtruth plans at most ${MAX_PLANNED_WRITES} writes per request; this one would plan about ${writes} (${choices} choices × ${maxTokens} tokens${how}).`,
      'max_tokens',
    );
  }
  const checks = choices * maxTokens * size.stopStrings;
  if (checks > MAX_STOP_CHECKS) {
    return badRequest(
      `benchtruth checks at most ${MAX_STOP_CHECKS} stop strings per request; this one would check ${checks} (${choices} choices × ${maxTokens} tokens × ${size.stopStrings} stop strings).`,
      'stop',
    );
  }
  return null;
}

const numberAbove = (value: unknown, limit: number): boolean => typeof value === 'number' && value > limit;
const numberBelow = (value: unknown, limit: number): boolean => typeof value === 'number' && value < limit;

/**
 * vLLM's `model_validator(mode="before")` checks that both endpoints share: stream options need
 * a stream, prompt logprobs cannot stream, logprob counts cannot be negative.
 */
export function streamOptionsWithoutStream(body: Record<string, unknown>): Parsed<never> | null {
  const fail = (message: string): Parsed<never> => ({ ok: false, error: beforeValidatorError(message, body) });
  if (pyTruthy(body.stream_options) && !pyTruthy(body.stream)) return fail('Stream options can only be defined when `stream=True`.');
  if (pyTruthy(body.stream) && numberAbove(body.prompt_logprobs, 0)) return fail('`prompt_logprobs` are not available when `stream=True`.');
  if (numberBelow(body.prompt_logprobs, 0)) return fail('`prompt_logprobs` must be a positive value.');
  return null;
}

/** Chat's own before-validators (logprobs, tools, generation prompt). */
export function chatBeforeValidators(body: Record<string, unknown>): Parsed<never> | null {
  const fail = (message: string): Parsed<never> => ({ ok: false, error: beforeValidatorError(message, body) });
  if (numberBelow(body.top_logprobs, 0)) return fail('`top_logprobs` must be a positive value.');
  if (numberAbove(body.top_logprobs, 0) && !pyTruthy(body.logprobs)) return fail('when using `top_logprobs`, `logprobs` must be set to true.');
  if (pyTruthy(body.continue_final_message) && pyTruthy(body.add_generation_prompt ?? true)) {
    return fail('Cannot set both `continue_final_message` and `add_generation_prompt` to True.');
  }
  if (body.tool_choice !== undefined && body.tool_choice !== null && body.tool_choice !== 'none' && (body.tools === undefined || body.tools === null)) {
    return fail('When using `tool_choice`, `tools` must be set.');
  }
  return null;
}

/** Completions' own before-validator. */
export function completionBeforeValidators(body: Record<string, unknown>): Parsed<never> | null {
  if (numberBelow(body.logprobs, 0)) return { ok: false, error: beforeValidatorError('`logprobs` must be a positive value.', body) };
  return null;
}

/**
 * vLLM serves `tool_choice: "auto"` (the default once `tools` are given) only with
 * --enable-auto-tool-choice and a tool parser, which a fake model has not.
 */
export function autoToolChoiceRefused(body: Record<string, unknown>): VllmError | null {
  const tools = body.tools;
  const choice = body.tool_choice ?? (Array.isArray(tools) && tools.length > 0 ? 'auto' : 'none');
  return choice === 'auto' ? badRequest('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set') : null;
}

function readStreamOptions(reader: FieldReader): StreamOptions | null {
  const raw = reader.body.stream_options;
  if (raw === undefined || raw === null) return null;
  if (!isPlainObject(raw)) {
    reader.issues.push({ type: 'model_type', loc: ['stream_options'], msg: 'Input should be a valid dictionary or instance of StreamOptions', input: raw });
    return null;
  }
  // include_usage defaults to True in vLLM's StreamOptions; an explicit null reads as false.
  const field = (key: string, absent: boolean): boolean => {
    const value = raw[key];
    if (value === undefined) return absent;
    if (value === null) return false;
    const parsed = laxBool(value);
    if (typeof parsed === 'boolean') return parsed;
    reader.issues.push({ ...parsed, loc: ['stream_options', key], input: value });
    return false;
  };
  return { includeUsage: field('include_usage', true), continuousUsageStats: field('continuous_usage_stats', false) };
}

/** Reads the shared fields; type errors stay in `reader.issues` for the caller to report. */
export function readSamplingFields(reader: FieldReader): SamplingFields {
  return {
    model: reader.str('model') ?? '',
    stream: reader.bool('stream', false),
    streamOptions: readStreamOptions(reader),
    ignoreEos: reader.bool('ignore_eos', false),
    n: reader.int('n', 1),
    stop: reader.strings('stop'),
    includeStopStrInOutput: reader.bool('include_stop_str_in_output', false),
    returnTokenIds: reader.bool('return_token_ids', false),
    sampling: readSamplingKnobs(reader),
  };
}

function readSamplingKnobs(reader: FieldReader): SamplingKnobs {
  const d = DEFAULT_SAMPLING;
  return {
    frequencyPenalty: reader.float('frequency_penalty', d.frequencyPenalty),
    presencePenalty: reader.float('presence_penalty', d.presencePenalty),
    seed: reader.int('seed', null),
    temperature: reader.float('temperature', d.temperature),
    topP: reader.float('top_p', d.topP),
    topK: reader.int('top_k', d.topK),
    minP: reader.float('min_p', d.minP),
    repetitionPenalty: reader.float('repetition_penalty', d.repetitionPenalty),
    minTokens: reader.intNotNull('min_tokens', d.minTokens),
  };
}

/** vLLM's engine check on the number of logprobs asked for (--max-logprobs, default 20). */
export function checkLogprobs(count: number | null): VllmError | null {
  if (count === null || count <= MAX_LOGPROBS) return null;
  return badRequest(`Requested sample logprobs of ${count}, which is greater than max allowed: ${MAX_LOGPROBS}`);
}

/** Below this temperature vLLM samples greedily (`_SAMPLING_EPS`). */
const GREEDY_TEMPERATURE = 1e-5;

/**
 * SamplingParams' `_verify_args` (vLLM 0.11), in its order and with its messages, after the
 * types are known to be right; then the greedy check. `maxTokens` is the limit vLLM computes
 * (the request's, else the room left in the context); null skips the max_tokens checks.
 */
export function checkSampling(fields: Pick<SamplingFields, 'n' | 'stop' | 'sampling'>, maxTokens: number | null): VllmError | null {
  const k = fields.sampling ?? DEFAULT_SAMPLING;
  const f = pythonFloat;
  if (fields.n < 1) return badRequest(`n must be at least 1, got ${fields.n}.`);
  if (fields.n > MAX_CHOICES) return badRequest(`n must be at most ${MAX_CHOICES} on benchtruth, got ${fields.n}.`, 'n');
  if (!(k.presencePenalty >= -2 && k.presencePenalty <= 2)) return badRequest(`presence_penalty must be in [-2, 2], got ${f(k.presencePenalty)}.`);
  if (!(k.frequencyPenalty >= -2 && k.frequencyPenalty <= 2)) return badRequest(`frequency_penalty must be in [-2, 2], got ${f(k.frequencyPenalty)}.`);
  if (k.repetitionPenalty <= 0) return badRequest(`repetition_penalty must be greater than zero, got ${f(k.repetitionPenalty)}.`);
  if (k.temperature < 0) return badRequest(`temperature must be non-negative, got ${f(k.temperature)}.`);
  if (!(k.topP > 0 && k.topP <= 1)) return badRequest(`top_p must be in (0, 1], got ${f(k.topP)}.`);
  // -1 is quietly accepted as "disabled", as 0 is.
  if (k.topK < -1) return badRequest(`top_k must be 0 (disable), or at least 1, got ${k.topK}.`);
  if (!(k.minP >= 0 && k.minP <= 1)) return badRequest(`min_p must be in [0, 1], got ${f(k.minP)}.`);
  if (maxTokens !== null && maxTokens < 1) return badRequest(`max_tokens must be at least 1, got ${maxTokens}.`);
  if (k.minTokens < 0) return badRequest(`min_tokens must be greater than or equal to 0, got ${k.minTokens}.`);
  if (maxTokens !== null && k.minTokens > maxTokens) return badRequest(`min_tokens must be less than or equal to max_tokens=${maxTokens}, got ${k.minTokens}.`);
  if (fields.stop.includes('')) return badRequest('stop cannot contain an empty string.');
  if (k.temperature < GREEDY_TEMPERATURE && fields.n > 1) return badRequest(`n must be 1 when using greedy sampling, got ${fields.n}.`);
  return null;
}

export function typeErrors(reader: FieldReader): Parsed<never> | null {
  return reader.issues.length > 0 ? { ok: false, error: validationError(reader.issues) } : null;
}
