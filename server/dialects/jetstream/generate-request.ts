/**
 * Validation of JetStream's request bodies, pydantic-style: every issue found is reported, each
 * naming its location and the value received.
 *
 * - Native `/v1/generate` (JetStream's DecodeRequest model, `extra = "forbid"`): `max_tokens`
 *   (int, required), exactly one of `text_content: {text}` / `token_content: {token_ids}`,
 *   optional `metadata: {start_time}`. Unknown fields are 422 `extra_forbidden`.
 * - ai-on-gke proxy `/generate`: `{prompt, max_tokens, stream?}`; extra fields are ignored.
 */
import { validationError, type JetstreamError, type ValidationIssue } from './fastapi-errors.ts';
import { isJsonObject, type JsonObject } from '../../../contracts/json.ts';

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

/** pydantic's lax int: integers, integral floats and integer strings pass. */
function laxInt(value: unknown, loc: Array<string | number>, issues: ValidationIssue[]): number | null {
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value === 'number') {
    issues.push({ type: 'int_from_float', loc, msg: 'Input should be a valid integer, got a number with a fractional part', input: value });
    return null;
  }
  if (typeof value === 'string' && /^\s*[+-]?\d+\s*$/.test(value)) return Number(value);
  if (typeof value === 'string') {
    issues.push({ type: 'int_parsing', loc, msg: 'Input should be a valid integer, unable to parse string as an integer', input: value });
    return null;
  }
  issues.push({ type: 'int_type', loc, msg: 'Input should be a valid integer', input: value });
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
    if (typeof text.text === 'string') content = { kind: 'text', text: text.text.trim() };
    else if (text.text === undefined) issues.push(missing(['body', 'text_content', 'text'], text));
    else issues.push({ type: 'string_type', loc: ['body', 'text_content', 'text'], msg: 'Input should be a valid string', input: text.text });
    forbidExtra(text, ['text'], ['body', 'text_content'], issues);
  }
  if (tokens !== undefined && tokens !== null && modelType(tokens, ['body', 'token_content'], issues)) {
    const ids = tokens.token_ids;
    if (ids === undefined) issues.push(missing(['body', 'token_content', 'token_ids'], tokens));
    else if (!Array.isArray(ids)) issues.push({ type: 'list_type', loc: ['body', 'token_content', 'token_ids'], msg: 'Input should be a valid list', input: ids });
    else {
      const parsed = ids.map((id, i) => laxInt(id, ['body', 'token_content', 'token_ids', i], issues));
      if (parsed.every((id): id is number => id !== null)) content = { kind: 'tokens', tokenIds: parsed };
    }
    forbidExtra(tokens, ['token_ids'], ['body', 'token_content'], issues);
  }
  forbidExtra(body, ['max_tokens', 'text_content', 'token_content', 'metadata'], ['body'], issues);
  if (body.metadata !== undefined && body.metadata !== null && modelType(body.metadata, ['body', 'metadata'], issues)) {
    const start = body.metadata.start_time;
    if (start !== undefined && typeof start !== 'number') issues.push({ type: 'float_type', loc: ['body', 'metadata', 'start_time'], msg: 'Input should be a valid number', input: start });
    forbidExtra(body.metadata, ['start_time'], ['body', 'metadata'], issues);
  }
  if (issues.length > 0) return { ok: false, error: validationError(issues) };
  // The proto has a oneof: JetStream's orchestrator cannot prefill without content.
  if (content === null) {
    return { ok: false, error: validationError([{ type: 'value_error', loc: ['body'], msg: 'Value error, exactly one of text_content or token_content is required', input: body }]) };
  }
  if (text !== undefined && text !== null && tokens !== undefined && tokens !== null) {
    return { ok: false, error: validationError([{ type: 'value_error', loc: ['body'], msg: 'Value error, text_content and token_content are mutually exclusive (a proto oneof)', input: body }]) };
  }
  if (maxTokens === null || maxTokens < 1) {
    return { ok: false, error: validationError([{ type: 'greater_than_equal', loc: ['body', 'max_tokens'], msg: 'Input should be greater than or equal to 1', input: body.max_tokens, ctx: { ge: 1 } }]) };
  }
  return { ok: true, value: { maxTokens, content } };
}

export function parseProxyGenerateRequest(body: unknown): Parsed<ProxyGenerateRequest> {
  const issues: ValidationIssue[] = [];
  if (!isJsonObject(body)) {
    return { ok: false, error: validationError([{ type: 'model_attributes_type', loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', input: body }]) };
  }
  let prompt: string | null = null;
  if (body.prompt === undefined) issues.push(missing(['body', 'prompt'], body));
  else if (typeof body.prompt !== 'string') issues.push({ type: 'string_type', loc: ['body', 'prompt'], msg: 'Input should be a valid string', input: body.prompt });
  else prompt = body.prompt;
  const maxTokens = body.max_tokens === undefined ? (issues.push(missing(['body', 'max_tokens'], body)), null) : laxInt(body.max_tokens, ['body', 'max_tokens'], issues);
  const stream = body.stream ?? false;
  if (typeof stream !== 'boolean') issues.push({ type: 'bool_type', loc: ['body', 'stream'], msg: 'Input should be a valid boolean', input: stream });
  if (issues.length > 0 || prompt === null || maxTokens === null) return { ok: false, error: validationError(issues) };
  if (maxTokens < 1) {
    return { ok: false, error: validationError([{ type: 'greater_than_equal', loc: ['body', 'max_tokens'], msg: 'Input should be greater than or equal to 1', input: body.max_tokens, ctx: { ge: 1 } }]) };
  }
  return { ok: true, value: { prompt, maxTokens, stream: stream === true } };
}
