/**
 * Validation of JetStream's request bodies, pydantic-style: every issue found is reported, each
 * naming its location and the value received.
 *
 * - Native `/v1/generate` (JetStream's DecodeRequest model, `extra = "forbid"`): `max_tokens`
 *   (int, required), exactly one of `text_content: {text}` / `token_content: {token_ids}`,
 *   optional `metadata: {start_time}`. Unknown fields are 422 `extra_forbidden`.
 * - ai-on-gke proxy `/generate` (its GenerateRequest model): every field optional — `prompt`
 *   defaults to "This is an example prompt", `max_tokens` to 100, `stream` to false; a null
 *   prompt reaches the DecodeRequest as an unset (empty) text, a null max_tokens as 0. Extra
 *   fields are ignored.
 * Values are read as pydantic v2's lax mode reads them (integer strings and integral floats for
 * ints, "true"/1 for bools, numeric strings for floats). Integers must fit the proto's int32:
 * beyond it protobuf refuses them (a 500 upstream; a 422 here, bad input is never a 500).
 */
import { validationError, type JetstreamError, type ValidationIssue } from './fastapi-errors.ts';
import { isJsonObject, type JsonObject } from '../../../contracts/json.ts';
import { laxBool as pydanticBool, laxFloat as pydanticFloat, laxInt as pydanticInt, type IssueHead } from '../pydantic-lax.ts';

export type GenerateContent = { kind: 'text'; text: string } | { kind: 'tokens'; tokenIds: number[] };

export interface NativeGenerateRequest {
  maxTokens: number;
  content: GenerateContent;
}

export interface ProxyGenerateRequest {
  prompt: string;
  maxTokens: number;
  stream: boolean;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: JetstreamError };

const missing = (loc: Array<string | number>, input: unknown): ValidationIssue => ({ type: 'missing', loc, msg: 'Field required', input });

export const PROXY_DEFAULT_PROMPT = 'This is an example prompt';
export const PROXY_DEFAULT_MAX_TOKENS = 100;

const INT32_MAX = 2 ** 31 - 1;
const INT32_MIN = -(2 ** 31);

/** The proto's int32: what protobuf accepts once pydantic has passed a (Python, unbounded) int. */
function int32(value: number, loc: Array<string | number>, input: unknown, issues: ValidationIssue[]): number | null {
  if (value > INT32_MAX) {
    issues.push({ type: 'less_than_equal', loc, msg: `Input should be less than or equal to ${INT32_MAX}`, input, ctx: { le: INT32_MAX } });
    return null;
  }
  if (value < INT32_MIN) {
    issues.push({ type: 'greater_than_equal', loc, msg: `Input should be greater than or equal to ${INT32_MIN}`, input, ctx: { ge: INT32_MIN } });
    return null;
  }
  return value;
}

/** A lax reading's value, or null with its failure collected at `loc`. */
function collected<T extends number | boolean>(result: T | IssueHead, loc: Array<string | number>, input: unknown, issues: ValidationIssue[]): T | null {
  if (typeof result !== 'object') return result;
  // pydantic's key order (type, loc, msg, input): FastAPI writes the dict as it comes.
  issues.push({ type: result.type, loc, msg: result.msg, input });
  return null;
}

/** pydantic's lax int (integers, integral floats, integer strings, bools), bounded to int32. */
function laxInt(value: unknown, loc: Array<string | number>, issues: ValidationIssue[]): number | null {
  const int = collected(pydanticInt(value), loc, value, issues);
  return int === null ? null : int32(int, loc, value, issues);
}

const laxBool = (value: unknown, loc: Array<string | number>, issues: ValidationIssue[]): boolean | null => collected(pydanticBool(value), loc, value, issues);

const laxFloat = (value: unknown, loc: Array<string | number>, issues: ValidationIssue[]): number | null => collected(pydanticFloat(value), loc, value, issues);

/** An Optional[str] field: absent or null is fine, anything but a string is not (lax mode does not stringify). */
function optionalString(body: JsonObject, key: string, issues: ValidationIssue[]): string | null {
  const value = body[key];
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return value;
  issues.push({ type: 'string_type', loc: ['body', key], msg: 'Input should be a valid string', input: value });
  return null;
}

function forbidExtra(body: JsonObject, allowed: readonly string[], prefix: Array<string | number>, issues: ValidationIssue[]): void {
  for (const key of Object.keys(body)) {
    if (!allowed.includes(key)) issues.push({ type: 'extra_forbidden', loc: [...prefix, key], msg: 'Extra inputs are not permitted', input: body[key] });
  }
}

function modelType(value: unknown, loc: Array<string | number>, issues: ValidationIssue[]): value is JsonObject {
  if (isJsonObject(value)) return true;
  issues.push({ type: 'model_attributes_type', loc, msg: 'Input should be a valid dictionary or object to extract fields from', input: value });
  return false;
}

/**
 * benchtruth's refusal of a step budget below 1 (neither real model bounds it: JetStream would
 * enqueue the request). An integer gets the `ge` issue a `Field(ge=1)` would give; the proxy's
 * null (which reaches the DecodeRequest as 0) a value_error, since pydantic never checks a bound
 * on None.
 */
function maxTokensBelowOne(input: unknown): JetstreamError {
  if (input === null) return validationError([{ type: 'value_error', loc: ['body', 'max_tokens'], msg: 'Value error, max_tokens must be at least 1 (null is 0 to JetStream)', input }]);
  return validationError([{ type: 'greater_than_equal', loc: ['body', 'max_tokens'], msg: 'Input should be greater than or equal to 1', input, ctx: { ge: 1 } }]);
}

export function parseNativeGenerateRequest(body: unknown): Parsed<NativeGenerateRequest> {
  const issues: ValidationIssue[] = [];
  if (!isJsonObject(body)) {
    return { ok: false, error: validationError([{ type: 'model_attributes_type', loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', input: body }]) };
  }
  const maxTokens = body.max_tokens === undefined ? (issues.push(missing(['body', 'max_tokens'], body)), null) : laxInt(body.max_tokens, ['body', 'max_tokens'], issues);
  let content: GenerateContent | null = null;
  const text = body.text_content;
  const tokens = body.token_content;
  if (text !== undefined && text !== null && modelType(text, ['body', 'text_content'], issues)) {
    if (typeof text.text === 'string') content = { kind: 'text', text: text.text };
    else if (text.text === undefined) issues.push(missing(['body', 'text_content', 'text'], text));
    else issues.push({ type: 'string_type', loc: ['body', 'text_content', 'text'], msg: 'Input should be a valid string', input: text.text });
  }
  if (tokens !== undefined && tokens !== null && modelType(tokens, ['body', 'token_content'], issues)) {
    const ids = tokens.token_ids;
    if (ids === undefined) issues.push(missing(['body', 'token_content', 'token_ids'], tokens));
    else if (!Array.isArray(ids)) issues.push({ type: 'list_type', loc: ['body', 'token_content', 'token_ids'], msg: 'Input should be a valid list', input: ids });
    else {
      const parsed = ids.map((id, i) => laxInt(id, ['body', 'token_content', 'token_ids', i], issues));
      if (parsed.every((id): id is number => id !== null)) content = { kind: 'tokens', tokenIds: parsed };
    }
  }
  if (body.metadata !== undefined && body.metadata !== null && modelType(body.metadata, ['body', 'metadata'], issues)) {
    // Metadata's start_time is a required float.
    const start = body.metadata.start_time;
    if (start === undefined) issues.push(missing(['body', 'metadata', 'start_time'], body.metadata));
    else laxFloat(start, ['body', 'metadata', 'start_time'], issues);
  }
  // Only DecodeRequest forbids extra keys (and its whitespace stripping has no str field to act
  // on): TextContent, TokenContent and Metadata are plain models, which drop unknown keys.
  // pydantic reports extra keys after every field's errors.
  forbidExtra(body, ['max_tokens', 'text_content', 'token_content', 'metadata'], ['body'], issues);
  if (issues.length > 0) return { ok: false, error: validationError(issues) };
  // The proto has a oneof: JetStream's orchestrator cannot prefill without content.
  if (content === null) {
    return { ok: false, error: validationError([{ type: 'value_error', loc: ['body'], msg: 'Value error, exactly one of text_content or token_content is required', input: body }]) };
  }
  if (text !== undefined && text !== null && tokens !== undefined && tokens !== null) {
    return { ok: false, error: validationError([{ type: 'value_error', loc: ['body'], msg: 'Value error, text_content and token_content are mutually exclusive (a proto oneof)', input: body }]) };
  }
  if (maxTokens === null || maxTokens < 1) return { ok: false, error: maxTokensBelowOne(body.max_tokens) };
  return { ok: true, value: { maxTokens, content } };
}

export function parseProxyGenerateRequest(body: unknown): Parsed<ProxyGenerateRequest> {
  const issues: ValidationIssue[] = [];
  if (!isJsonObject(body)) {
    return { ok: false, error: validationError([{ type: 'model_attributes_type', loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', input: body }]) };
  }
  // In the model's field order (server, port, session_cache, prompt, priority, max_tokens,
  // stream), which is the order pydantic reports their errors in. The fields the proxy ignores
  // here are read (and can fail) all the same.
  for (const key of ['server', 'port', 'session_cache']) optionalString(body, key, issues);
  // A null prompt passes pydantic and becomes an unset proto field: the empty text.
  const prompt = body.prompt === undefined ? PROXY_DEFAULT_PROMPT : (optionalString(body, 'prompt', issues) ?? '');
  if (body.priority !== undefined && body.priority !== null) laxInt(body.priority, ['body', 'priority'], issues);
  const maxTokens = body.max_tokens === undefined ? PROXY_DEFAULT_MAX_TOKENS : body.max_tokens === null ? 0 : laxInt(body.max_tokens, ['body', 'max_tokens'], issues);
  const stream = body.stream === undefined || body.stream === null ? false : laxBool(body.stream, ['body', 'stream'], issues);
  if (issues.length > 0 || maxTokens === null || stream === null) return { ok: false, error: validationError(issues) };
  if (maxTokens < 1) return { ok: false, error: maxTokensBelowOne(body.max_tokens) };
  return { ok: true, value: { prompt, maxTokens, stream } };
}
