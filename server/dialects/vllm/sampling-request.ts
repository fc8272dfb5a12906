/**
 * The fields completions and chat share, read with vLLM's rules: pydantic field types first
 * (lax coercion, every error collected), then SamplingParams' own checks (BadRequestError).
 */
import { badRequest, preprocessingError, VllmError } from './errors.ts';
import { MAX_LOGPROBS } from './logprobs.ts';
import { pythonFloat } from './python-repr.ts';
import type { WirePolicy } from '../../wire/wire-policy.ts';
import { writesPerToken } from '../../wire/plan-cost.ts';
import { DEFAULT_VLLM_VERSION, type VllmVersion } from './dialect-version.ts';
import { beforeValidatorError, FieldReader, isPlainObject, laxBool, literalIssue, validationError, type FieldIssue, type Parsed } from './request-fields.ts';
import { isPythonIntLiteral, pythonInt } from './python-int.ts';
import { pythonRepr } from './python-repr.ts';

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
  /** `truncate_prompt_tokens`: keep the prompt's last N tokens (−1: the context length). */
  truncatePromptTokens?: number | null;
  /**
   * `use_beam_search`: vLLM then builds BeamSearchParams (beam width n), never the request's
   * SamplingParams, so none of their checks apply; n choices are still answered.
   */
  useBeamSearch?: boolean;
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
  /** `best_of` (null when absent): SamplingParams makes it the `n`; vLLM V1 refuses any above 1. */
  bestOf: number | null;
  /** A non-empty `logits_processors` was sent: refused without `--logits-processor-pattern`. */
  logitsProcessors: boolean;
  /** `allowed_token_ids` (null when absent): the engine refuses an empty or out-of-vocabulary list. */
  allowedTokenIds: readonly number[] | null;
  /** The first `logit_bias` key Python's `int()` refuses (SamplingParams converts every key), else null. */
  logitBiasBadKey: string | null;
  /** The `logit_bias` keys as the integers SamplingParams makes of them, in order (the engine checks their range). */
  logitBiasTokenIds: readonly bigint[];
  /** `prompt_logprobs` (null when absent): the engine caps it as it caps `logprobs`. */
  promptLogprobs: number | null;
  /** `return_tokens_as_token_ids`: logprobs name each token `token_id:<id>`, not by its text. */
  tokensAsIds: boolean;
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
  bestOf: null,
  logitsProcessors: false,
  allowedTokenIds: null,
  logitBiasBadKey: null,
  logitBiasTokenIds: [],
  promptLogprobs: null,
  tokensAsIds: false,
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
  /** What the request's options add to each streamed event (requestEventBytes: logprobs, running usage). */
  eventBytes?: number;
}

/** benchtruth's own guard (not vLLM's): a request whose planning would stall the server. */
export function planTooLarge(size: PlanSize): VllmError | null {
  const { choices, maxTokens } = size;
  const perToken = writesPerToken(size.wire, size.stream, size.eventBytes ?? 0);
  const writes = choices * maxTokens * perToken;
  if (writes > MAX_PLANNED_WRITES) {
    const how = perToken === 1 ? '' : ` × ${perToken} writes per token under its wire policy`;
    return badRequest(
      `benchtruth plans at most ${MAX_PLANNED_WRITES} writes per request; this one would plan about ${writes} (${choices} choices × ${maxTokens} tokens${how}).`,
      // What to change: the wire policy when the answer would fit with one write per token.
      choices * maxTokens > MAX_PLANNED_WRITES ? 'max_tokens' : 'x-benchtruth-wire',
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
 * A logprob count of −1 ("the whole vocabulary") passes vLLM 0.11's request checks and reaches
 * the engine, which reads it as the vocabulary's size; 0.10.1 refuses every negative count.
 */
const allVocabulary = (value: unknown, version: VllmVersion): boolean => value === -1 && version !== '0.10.1';

/** `validate_stream_options` (both endpoints). */
function streamOptionsError(body: Record<string, unknown>): string | null {
  return pyTruthy(body.stream_options) && !pyTruthy(body.stream) ? 'Stream options can only be defined when `stream=True`.' : null;
}

/**
 * `check_logprobs` (both endpoints): prompt logprobs cannot stream, and no logprob count may be
 * negative (but −1, from 0.11); completions' `logprobs`, chat's `top_logprobs` (which needs
 * `logprobs`).
 */
function logprobsError(body: Record<string, unknown>, version: VllmVersion, chat: boolean): string | null {
  const allPrompt = allVocabulary(body.prompt_logprobs, version);
  if (pyTruthy(body.stream) && (numberAbove(body.prompt_logprobs, 0) || allPrompt)) return '`prompt_logprobs` are not available when `stream=True`.';
  if (numberBelow(body.prompt_logprobs, 0) && !allPrompt) return version === '0.10.1' ? '`prompt_logprobs` must be a positive value.' : '`prompt_logprobs` must be a positive value or -1.';
  if (!chat) return numberBelow(body.logprobs, 0) ? '`logprobs` must be a positive value.' : null;
  const all = allVocabulary(body.top_logprobs, version);
  if (numberBelow(body.top_logprobs, 0) && !all) return version === '0.10.1' ? '`top_logprobs` must be a positive value.' : '`top_logprobs` must be a positive value or -1.';
  if ((numberAbove(body.top_logprobs, 0) || all) && !pyTruthy(body.logprobs)) return 'when using `top_logprobs`, `logprobs` must be set to true.';
  return null;
}

/**
 * The first of a request's `model_validator(mode="before")` checks to fail. pydantic runs
 * before-validators last-defined first, so this is the reverse of their order in vLLM's
 * protocol.py; a validator sees (and an error echoes as `input`) the body as the ones before
 * it left it.
 */
function firstFailing(checks: ReadonlyArray<(body: Record<string, unknown>) => string | VllmError | null>, body: Record<string, unknown>): Parsed<never> | null {
  for (const check of checks) {
    const failure = check(body);
    if (failure instanceof VllmError) return { ok: false, error: failure };
    if (failure !== null) return { ok: false, error: beforeValidatorError(failure, body) };
  }
  return null;
}

/** Completions' before-validators, as they run (`promptMissing`: validate_prompt_and_prompt_embeds, per version). */
export function completionBeforeValidators(body: Record<string, unknown>, version: VllmVersion, promptMissing: (body: Record<string, unknown>) => string | null): Parsed<never> | null {
  return firstFailing([cacheSaltError, promptMissing, streamOptionsError, (b) => logprobsError(b, version, false), structuredOutputError], body);
}

/** Chat's before-validators, as they run; `check_tool_usage` may rewrite the body the later ones see. */
export function chatBeforeValidators(body: Record<string, unknown>, version: VllmVersion = DEFAULT_VLLM_VERSION): Parsed<never> | null {
  const early = firstFailing([cacheSaltError, generationPromptConflict, toolUsageError], body);
  if (early !== null) return early;
  return firstFailing([structuredOutputError, (b) => logprobsError(b, version, true), streamOptionsError], afterToolUsage(body));
}

/**
 * The body as `check_tool_usage` leaves it: tools without a `tool_choice` get "auto" (added
 * last, as to a Python dict); "required" with an empty tool list becomes "none", the tools gone.
 */
function afterToolUsage(body: Record<string, unknown>): Record<string, unknown> {
  if (!('tool_choice' in body) && pyTruthy(body.tools)) return { ...body, tool_choice: 'auto' };
  if (body.tool_choice === 'required' && Array.isArray(body.tools) && body.tools.length === 0) {
    const { tools: _dropped, ...rest } = body;
    return { ...rest, tool_choice: 'none' };
  }
  return body;
}

const isSet = (value: unknown): boolean => value !== undefined && value !== null;

/**
 * Structured-output requests vLLM refuses (the fake model follows none of them, but a request
 * vLLM refuses is refused here too): a `json_schema` response format without its schema (vLLM's
 * `validate_response_format`; 0.10 and 0.11 failed an assert there instead, a 500), and more than
 * one kind of constraint (0.10's `check_guided_decoding_count`, 0.11's
 * `check_structured_outputs_count`).
 */
function structuredOutputError(body: Record<string, unknown>): string | null {
  const format = body.response_format;
  if (isPlainObject(format) && format.type === 'json_schema' && !isSet(format.json_schema)) {
    return "When response_format type is 'json_schema', the 'json_schema' field must be provided.";
  }
  if (['guided_json', 'guided_regex', 'guided_choice'].filter((key) => isSet(body[key])).length > 1) {
    return "You can only use one kind of guided decoding ('guided_json', 'guided_regex' or 'guided_choice').";
  }
  const structured = body.structured_outputs;
  if (isPlainObject(structured) && ['json', 'regex', 'choice'].filter((key) => isSet(structured[key])).length > 1) {
    return "You can only use one kind of constraints for structured outputs ('json', 'regex' or 'choice').";
  }
  return null;
}

/**
 * The chat and tokenize request models' `check_generation_prompt` before-validator, on the raw
 * body: `data.get("add_generation_prompt")` is None when the field is absent, though it defaults
 * to True, so only both sent and truthy is refused here.
 */
export function generationPromptConflict(body: Record<string, unknown>): VllmError | null {
  if (!pyTruthy(body.continue_final_message) || !pyTruthy(body.add_generation_prompt)) return null;
  return beforeValidatorError('Cannot set both `continue_final_message` and `add_generation_prompt` to True.', body);
}

/**
 * What transformers' `apply_chat_template` then raises, on the validated values: continuing the
 * final message with the default add_generation_prompt.
 */
export function chatTemplateError(continueFinalMessage: boolean, addGenerationPrompt: boolean): VllmError | null {
  if (!continueFinalMessage || !addGenerationPrompt) return null;
  return preprocessingError(
    'continue_final_message and add_generation_prompt are not compatible. Use continue_final_message when you want the model to continue the final message, and add_generation_prompt when you want to add a header that will prompt it to start a new assistant message instead.',
  );
}

/** Python's `str()` of a JSON value, as vLLM's f-strings print it (a string bare, the rest as repr). */
const pyStr = (value: unknown): string => (typeof value === 'string' ? value : pythonRepr(value));

const CORRECT_TOOL_CHOICE = 'Correct usage: `{"type": "function", "function": {"name": "my_function"}}`';

/**
 * vLLM's `check_tool_usage` before-validator, in its order. An absent `tool_choice` defaults to
 * "auto" when tools are given; an explicit null does not (the key is present), and is served.
 */
function toolUsageError(body: Record<string, unknown>): string | null {
  const choice = body.tool_choice === undefined && pyTruthy(body.tools) ? 'auto' : body.tool_choice;
  if (choice === undefined || choice === null || choice === 'none') return null;
  if (body.tools === undefined || body.tools === null) return 'When using `tool_choice`, `tools` must be set.';
  if (choice !== 'auto' && choice !== 'required' && !isPlainObject(choice)) {
    return `Invalid value for \`tool_choice\`: ${pyStr(choice)}! Only named tools, "none", "auto" or "required" are supported.`;
  }
  // "required" with an empty tool list: vLLM drops the tools and serves as "none".
  if (!isPlainObject(choice)) return null;
  const fn = choice.function;
  if (!isPlainObject(fn)) return `Invalid value for \`function\`: \`${pyStr(fn)}\` in \`tool_choice\`! ${CORRECT_TOOL_CHOICE}`;
  if (!('name' in fn)) return `Expected field \`name\` in \`function\` in \`tool_choice\`! ${CORRECT_TOOL_CHOICE}`;
  const name = fn.name;
  if (typeof name !== 'string' || name.length === 0) return `Invalid \`name\` in \`function\`: \`${pyStr(name)}\` in \`tool_choice\`! ${CORRECT_TOOL_CHOICE}`;
  const tools = Array.isArray(body.tools) ? body.tools : [];
  const named = tools.some((tool: unknown) => isPlainObject(tool) && isPlainObject(tool.function) && tool.function.name === name);
  return named ? null : 'The tool specified in `tool_choice` does not match any of the specified `tools`';
}

/**
 * vLLM serves `tool_choice: "auto"` (the default once `tools` are given) only with
 * --enable-auto-tool-choice and a tool parser, which a fake model has not.
 */
export function autoToolChoiceRefused(body: Record<string, unknown>): VllmError | null {
  const tools = body.tools;
  // Only an absent tool_choice defaults to "auto"; an explicit null is served (it is not "auto").
  const choice = body.tool_choice !== undefined ? body.tool_choice : Array.isArray(tools) && tools.length > 0 ? 'auto' : 'none';
  return choice === 'auto' ? badRequest('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set') : null;
}

/**
 * vLLM 0.11's refusal of a chat request that carries its own template (`chat_template`, or one in
 * `chat_template_kwargs`) unless the server trusts them (GHSA-6fvq-23cw-5628), after the model
 * and "auto" tool checks and before the template is rendered. 0.10.1 had no such check.
 */
export function untrustedChatTemplate(body: Record<string, unknown>): VllmError | null {
  const kwargs = body.chat_template_kwargs;
  const inKwargs = isPlainObject(kwargs) && isSet(kwargs.chat_template);
  if (!isSet(body.chat_template) && !inKwargs) return null;
  return badRequest('Chat template is passed with request, but --trust-request-chat-template is not set. Refused request with untrusted chat template.');
}

/**
 * A nested model's field given something else than a mapping: FastAPI validates the body with
 * `from_attributes=True`, so pydantic says `model_attributes_type`, not `model_type`.
 */
const NOT_A_MODEL = { type: 'model_attributes_type', msg: 'Input should be a valid dictionary or object to extract fields from' } as const;
const notAModel = (loc: Array<string | number>, input: unknown): FieldIssue => ({ ...NOT_A_MODEL, loc, input });

function readStreamOptions(reader: FieldReader): StreamOptions | null {
  const raw = reader.body.stream_options;
  if (raw === undefined || raw === null) return null;
  if (!isPlainObject(raw)) {
    reader.issues.push(notAModel(['stream_options'], raw));
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

const RESPONSE_FORMAT_TYPES = ['text', 'json_object', 'json_schema'] as const;

/**
 * `response_format`: vLLM's union of ResponseFormat (type text / json_object / json_schema) and
 * the structural-tag formats; a failure is reported as ResponseFormat's (one error, not one per
 * union member, as for `prompt`).
 */
function readResponseFormat(reader: FieldReader): void {
  const raw = reader.body.response_format;
  if (raw === undefined || raw === null) return;
  if (!isPlainObject(raw)) {
    // Each member of Union[ResponseFormat, StructuralTagResponseFormat] fails alike.
    for (const member of ['ResponseFormat', 'StructuralTagResponseFormat']) reader.issues.push(notAModel(['response_format', member], raw));
    return;
  }
  const type = raw.type;
  if (type === undefined) reader.issues.push({ type: 'missing', loc: ['response_format', 'type'], msg: 'Field required', input: raw });
  else if (type !== 'structural_tag' && !(typeof type === 'string' && (RESPONSE_FORMAT_TYPES as readonly string[]).includes(type))) {
    reader.issues.push(literalIssue(['response_format', 'type'], RESPONSE_FORMAT_TYPES, type));
  }
}

/** `logits_processors`: a list of qualified names or constructor objects; true when non-empty. */
function readLogitsProcessors(reader: FieldReader): boolean {
  const raw = reader.body.logits_processors;
  if (raw === undefined || raw === null) return false;
  if (!Array.isArray(raw)) {
    reader.issues.push({ type: 'list_type', loc: ['logits_processors'], msg: 'Input should be a valid list', input: raw });
    return false;
  }
  raw.forEach((item: unknown, i) => {
    if (typeof item !== 'string' && !isPlainObject(item)) reader.issues.push({ type: 'string_type', loc: ['logits_processors', i, 'str'], msg: 'Input should be a valid string', input: item });
  });
  return raw.length > 0;
}

/**
 * Fields both endpoints type-check though the fake model has no use for their values: a value
 * of the wrong type is vLLM's 400, never silently served.
 */
function readTypedOnlyFields(reader: FieldReader): void {
  reader.str('user');
  readResponseFormat(reader);
  reader.intList('stop_token_ids');
  reader.boolNotNull('skip_special_tokens', true);
  reader.boolNotNull('spaces_between_special_tokens', true);
  reader.intNotNull('priority', 0);
  reader.floatNotNull('length_penalty', 1);
  // Structured output (the fake model follows none of it) and pass-through parameters.
  reader.strOrDict('guided_json');
  for (const key of ['guided_regex', 'guided_grammar', 'guided_decoding_backend', 'guided_whitespace_pattern']) reader.str(key);
  reader.strList('guided_choice', true);
  // 0.11's StructuredOutputsParams, a dataclass: anything but an object is refused (vLLM's own
  // before-validator would fail on it with a 500; a client mistake is a 400 here).
  const structured = reader.body.structured_outputs;
  if (isSet(structured) && !isPlainObject(structured)) {
    reader.issues.push({ type: 'dataclass_type', loc: ['structured_outputs'], msg: 'Input should be a dictionary or an instance of StructuredOutputsParams', input: structured, ctx: { class_name: 'StructuredOutputsParams' } });
  }
  reader.dict('vllm_xargs');
  reader.dict('kv_transfer_params');
}

/**
 * The chat template fields of ChatCompletionRequest and TokenizeChatRequest, and `tools`
 * (`Optional[list[ChatCompletionToolsParam]]`: each a function with a string name).
 */
export function readChatTemplateFields(reader: FieldReader): void {
  reader.str('chat_template');
  reader.dict('chat_template_kwargs');
  reader.dict('mm_processor_kwargs');
  reader.objects('tools', { type: NOT_A_MODEL.type, msg: NOT_A_MODEL.msg }, (tool, i) => {
    if (tool.type !== undefined && tool.type !== 'function') reader.issues.push(literalIssue(['tools', i, 'type'], ['function'], tool.type));
    const fn = tool.function;
    if (fn === undefined) reader.issues.push({ type: 'missing', loc: ['tools', i, 'function'], msg: 'Field required', input: tool });
    else if (!isPlainObject(fn)) reader.issues.push(notAModel(['tools', i, 'function'], fn));
    else if (fn.name === undefined) reader.issues.push({ type: 'missing', loc: ['tools', i, 'function', 'name'], msg: 'Field required', input: fn });
    else if (typeof fn.name !== 'string') reader.issues.push({ type: 'string_type', loc: ['tools', i, 'function', 'name'], msg: 'Input should be a valid string', input: fn.name });
  });
}

/** vLLM's `check_cache_salt_support` before-validator (both endpoints). */
function cacheSaltError(body: Record<string, unknown>): string | null {
  const salt = body.cache_salt;
  if (salt === undefined || salt === null) return null;
  return typeof salt === 'string' && salt !== '' ? null : "Parameter 'cache_salt' must be a non-empty string if provided.";
}

/**
 * Reads the shared fields; type errors stay in `reader.issues` for the caller to report.
 * `nullableN`: chat's `n: Optional[int]` (None means 1); completions' `n: int` refuses null.
 */
export function readSamplingFields(reader: FieldReader, nullableN: boolean): SamplingFields {
  readTypedOnlyFields(reader);
  return {
    model: reader.str('model') ?? '',
    stream: reader.bool('stream', false),
    streamOptions: readStreamOptions(reader),
    ignoreEos: reader.boolNotNull('ignore_eos', false),
    n: nullableN ? reader.int('n', 1) : reader.intNotNull('n', 1),
    stop: reader.strings('stop'),
    includeStopStrInOutput: reader.boolNotNull('include_stop_str_in_output', false),
    returnTokenIds: reader.bool('return_token_ids', false),
    sampling: readSamplingKnobs(reader),
    useBeamSearch: reader.boolNotNull('use_beam_search', false),
    // Only the type is checked: its accepted range differs between vLLM releases.
    truncatePromptTokens: reader.int('truncate_prompt_tokens', null),
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
    bestOf: reader.int('best_of', null),
    logitsProcessors: readLogitsProcessors(reader),
    allowedTokenIds: reader.intList('allowed_token_ids'),
    ...readLogitBias(reader),
    promptLogprobs: reader.int('prompt_logprobs', null),
    tokensAsIds: reader.bool('return_tokens_as_token_ids', false) === true,
  };
}

function readLogitBias(reader: FieldReader): Pick<SamplingKnobs, 'logitBiasBadKey' | 'logitBiasTokenIds'> {
  const keys = reader.floatDict('logit_bias');
  const bad = keys.find((key) => !isPythonIntLiteral(key));
  return { logitBiasBadKey: bad ?? null, logitBiasTokenIds: bad === undefined ? keys.map((key) => pythonInt(key) as bigint) : [] };
}

/**
 * Beam search runs `for _ in range(max_tokens)`: a limit below 0 runs no step, as 0 does (no
 * SamplingParams refuses it on that path).
 */
export function beamSearchLimit<T extends number | null>(fields: Pick<SamplingFields, 'useBeamSearch'>, maxTokens: T): T | 0 {
  return fields.useBeamSearch === true && maxTokens !== null && maxTokens < 0 ? 0 : maxTokens;
}

/**
 * How many prompt tokens `truncate_prompt_tokens` keeps (vLLM tokenizes with truncation from the
 * left: the last N stay), or null for the whole prompt: −1 is the context length; values below
 * 1 otherwise truncate nothing here (their handling differs between releases).
 */
export function promptTokensKept(truncate: number | null | undefined, maxModelLen: number): number | null {
  if (truncate === -1) return maxModelLen;
  return truncate !== null && truncate !== undefined && truncate >= 1 ? truncate : null;
}

/**
 * vLLM's engine check on the number of logprobs asked for (--max-logprobs, default 20): the
 * sample logprobs, then the prompt logprobs (Processor._validate_logprobs), −1 counting as the
 * whole vocabulary (`vocabSize`).
 */
export function checkLogprobs(asked: number | null, promptAsked: number | null = null, vocabSize = Infinity): VllmError | null {
  const count = asked === -1 ? vocabSize : asked;
  const promptCount = promptAsked === -1 ? vocabSize : promptAsked;
  if (count !== null && count > MAX_LOGPROBS) return badRequest(`Requested sample logprobs of ${count}, which is greater than max allowed: ${MAX_LOGPROBS}`);
  if (promptCount !== null && promptCount > MAX_LOGPROBS) return badRequest(`Requested prompt logprobs of ${promptCount}, which is greater than max allowed: ${MAX_LOGPROBS}`);
  return null;
}

/**
 * vLLM raises a temperature in (0, 0.01) to 0.01 (`_MAX_TEMP`) before its greedy check
 * (below `_SAMPLING_EPS`), so only a temperature of 0 samples greedily.
 */
const isGreedy = (temperature: number): boolean => temperature === 0;

/**
 * SamplingParams' `_verify_args` (vLLM 0.11), in its order and with its messages, after the
 * types are known to be right; then the greedy check. `maxTokens` is the limit vLLM computes
 * (the request's, else the room left in the context); null skips the max_tokens checks.
 */
export function checkSampling(fields: Pick<SamplingFields, 'n' | 'stop' | 'sampling' | 'useBeamSearch' | 'stream'>, maxTokens: number | null): VllmError | null {
  if (fields.useBeamSearch === true) return checkBeamSearch(fields.n);
  const k = fields.sampling ?? DEFAULT_SAMPLING;
  const f = pythonFloat;
  // to_sampling_params builds the logits processors before SamplingParams exists.
  if (k.logitsProcessors) {
    return badRequest('The `logits_processors` argument is not supported by this server. See --logits-processor-pattern engine argugment for more information.');
  }
  // SamplingParams.from_optional: `{int(token): …}` over logit_bias, a ValueError → 400.
  if (k.logitBiasBadKey !== null) return badRequest(`invalid literal for int() with base 10: ${pythonRepr(k.logitBiasBadKey)}`);
  // SamplingParams.__post_init__: a (truthy) best_of must cover n, and then becomes the n checked.
  const bestOf = k.bestOf !== null && k.bestOf !== 0 ? k.bestOf : null;
  if (bestOf !== null && bestOf < fields.n) return badRequest(`best_of must be greater than or equal to n, got n=${fields.n} and best_of=${bestOf}.`);
  const n = bestOf ?? fields.n;
  if (n < 1) return badRequest(`n must be at least 1, got ${n}.`);
  // A best_of of 0 skipped __post_init__ (falsy) but not _verify_args.
  if (k.bestOf === 0) return badRequest('best_of must be at least 1, got 0');
  // benchtruth's own: best_of 1 lifts no n below 1 into a choice (vLLM would).
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
  // A stream asks for RequestOutputKind.DELTA, which needs best_of = n: a best_of ≠ n that
  // vLLM would not stream (the one-event stream) is refused before any stream starts.
  if (fields.stream && bestOf !== null && bestOf !== fields.n) return badRequest('best_of must equal n to use output_kind=DELTA');
  if (isGreedy(k.temperature) && n > 1) return badRequest(`n must be 1 when using greedy sampling, got ${n}.`);
  return null;
}

/** Beam search before the engine: benchtruth's own bounds on choices (the engine's: engineRefusal). */
function checkBeamSearch(n: number): VllmError | null {
  if (n < 1) return badRequest(`n must be at least 1, got ${n}.`);
  if (n > MAX_CHOICES) return badRequest(`n must be at most ${MAX_CHOICES} on benchtruth, got ${n}.`, 'n');
  return null;
}

/**
 * The V1 engine's own checks on SamplingParams (vllm/v1/engine/processor.py), raised when the
 * request's generator is first iterated: a 400 for a whole body, an error event after the 200
 * for a stream (as the out-of-vocabulary prompt). Checked before the prompt's token ids.
 */
export function engineRefusal(fields: Pick<SamplingFields, 'sampling' | 'useBeamSearch' | 'n'> & { logprobs?: number | null }, maxTokenId: number): VllmError | null {
  // Beam search never builds the request's SamplingParams: the engine searches with
  // SamplingParams(logprobs = 2 × beam width), whose logprobs it caps (--max-logprobs).
  if (fields.useBeamSearch === true) return checkLogprobs(2 * fields.n);
  const k = fields.sampling ?? DEFAULT_SAMPLING;
  // Processor._validate_logprobs, the first of the engine's checks (the OpenAI layer checks only
  // the sign): so a streamed request over the cap has its 200 before its error event.
  const logprobs = checkLogprobs(fields.logprobs ?? null, k.promptLogprobs, maxTokenId + 1);
  if (logprobs !== null) return logprobs;
  // Processor._validate_logit_bias, before the allowed ids: every key out of the vocabulary, in order.
  const vocabulary = BigInt(maxTokenId) + 1n;
  const outside = k.logitBiasTokenIds.filter((id) => id < 0n || id >= vocabulary);
  if (outside.length > 0) return badRequest(`token_id(s) [${outside.join(', ')}] in logit_bias contain out-of-vocab token ids. Vocabulary size: ${vocabulary}`);
  const allowed = k.allowedTokenIds;
  if (allowed !== null) {
    if (allowed.length === 0) return badRequest('allowed_token_ids is not None and empty!');
    if (allowed.some((id) => id < 0 || id > maxTokenId)) return badRequest('allowed_token_ids contains out-of-vocab token id!');
  }
  if (k.bestOf !== null && k.bestOf > 1) return badRequest('vLLM V1 does not yet support best_of.');
  return null;
}

export function typeErrors(reader: FieldReader): Parsed<never> | null {
  return reader.issues.length > 0 ? { ok: false, error: validationError(reader.issues) } : null;
}
