/**
 * Reading request fields the way pydantic's lax mode does in vLLM: integers accept integral
 * floats and digit strings, booleans accept 0/1 and 'yes'/'no'-style strings, and every field
 * error is collected before answering. Failures become vLLM's RequestValidationError answer:
 * 400, type "Bad Request", message = Python repr of the error list.
 */
import { VllmError } from './errors.ts';
import { laxBool, laxFloat, laxInt, type IssueHead } from '../pydantic-lax.ts';
import { PyException, PyTuple, pythonRepr } from './python-repr.ts';
import { isJsonObject } from '../../../contracts/json.ts';

export { laxBool, laxFloat, laxInt } from '../pydantic-lax.ts';

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: VllmError };

export interface FieldIssue {
  type: string;
  loc: Array<string | number>;
  msg: string;
  input: unknown;
  ctx?: Record<string, unknown>;
}

export { isJsonObject as isPlainObject } from '../../../contracts/json.ts';

/**
 * A completion's or chat's `request_id` field when it is a string: vLLM names the request after
 * it when no `x-request-id` is sent (`_base_request_id(raw_request, request.request_id)`).
 */
export function bodyRequestId(body: unknown): string | undefined {
  return isJsonObject(body) && typeof body.request_id === 'string' ? body.request_id : undefined;
}

/** pydantic's words for a Literal: `'a'`, `'a' or 'b'`, `'a', 'b' or 'c'`. */
function expectedLiterals(allowed: readonly string[]): string {
  const quoted = allowed.map((a) => `'${a}'`);
  return quoted.length <= 1 ? (quoted[0] ?? '') : `${quoted.slice(0, -1).join(', ')} or ${quoted[quoted.length - 1]}`;
}

/** A value that is none of a Literal's members. */
export function literalIssue(loc: Array<string | number>, allowed: readonly string[], input: unknown): FieldIssue {
  const expected = expectedLiterals(allowed);
  return { type: 'literal_error', loc, msg: `Input should be ${expected}`, input, ctx: { expected } };
}

export function validationError(issues: readonly FieldIssue[]): VllmError {
  const list = issues.map((issue) => {
    const entry: Record<string, unknown> = { type: issue.type, loc: new PyTuple(['body', ...issue.loc]), msg: issue.msg, input: issue.input };
    if (issue.ctx !== undefined) entry.ctx = issue.ctx;
    return entry;
  });
  return new VllmError(400, 'Bad Request', pythonRepr(list));
}

/** A `model_validator(mode="before")` ValueError, as pydantic reports it. */
export function beforeValidatorError(message: string, body: unknown): VllmError {
  return validationError([{ type: 'value_error', loc: [], msg: `Value error, ${message}`, input: body, ctx: { error: new PyException('ValueError', message) } }]);
}

export class FieldReader {
  readonly issues: FieldIssue[] = [];
  readonly #body: Record<string, unknown>;

  constructor(body: Record<string, unknown>) {
    this.#body = body;
  }

  get body(): Record<string, unknown> {
    return this.#body;
  }

  has(key: string): boolean {
    return this.#body[key] !== undefined;
  }

  /**
   * A field read by a lax parser; a failure is collected, the fallback kept. `nullable`: None is
   * allowed (`Optional[...]`); else null goes to the parser, which answers it with its type error.
   */
  #lax<T extends number | boolean, F extends T | null>(key: string, fallback: F, parse: (raw: unknown) => T | IssueHead, nullable = true): T | F {
    const raw = this.#body[key];
    if (raw === undefined || (raw === null && nullable)) return fallback;
    const value = parse(raw);
    if (typeof value !== 'object') return value;
    this.issues.push({ ...value, loc: [key], input: raw });
    return fallback;
  }

  /** An optional integer (None allowed). */
  int<F extends number | null>(key: string, fallback: F): number | F {
    return this.#lax(key, fallback, laxInt);
  }

  /** An optional float (None allowed), e.g. `temperature`. */
  float<F extends number | null>(key: string, fallback: F): number | F {
    return this.#lax(key, fallback, laxFloat);
  }

  /** A required-type float with a default (`length_penalty: float = 1.0`): null is a type error. */
  floatNotNull(key: string, fallback: number): number {
    return this.#lax(key, fallback, laxFloat, false);
  }

  /** A required-type integer with a default (`min_tokens: int = 0`): null is a type error. */
  intNotNull(key: string, fallback: number): number {
    return this.#lax(key, fallback, laxInt, false);
  }

  /** An optional boolean (`Optional[bool]`: None allowed). */
  bool(key: string, fallback: boolean): boolean {
    return this.#lax(key, fallback, laxBool);
  }

  /** A required-type boolean with a default (`ignore_eos: bool = False`): null is a type error. */
  boolNotNull(key: string, fallback: boolean): boolean {
    return this.#lax(key, fallback, laxBool, false);
  }

  /** A required string without a default (`lora_name: str`): absent is `missing`, null a type error. */
  requiredStr(key: string): string | null {
    if (this.#body[key] !== undefined) return this.strNotNull(key);
    this.issues.push({ type: 'missing', loc: [key], msg: 'Field required', input: this.#body });
    return null;
  }

  /** A required-type string with a default (`request_id: str = Field(default_factory=…)`): null is a type error. */
  strNotNull(key: string): string | null {
    if (this.#body[key] !== null) return this.str(key);
    this.issues.push({ type: 'string_type', loc: [key], msg: 'Input should be a valid string', input: null });
    return null;
  }

  str(key: string): string | null {
    const raw = this.#body[key];
    if (raw === undefined || raw === null) return null;
    if (typeof raw === 'string') return raw;
    this.issues.push({ type: 'string_type', loc: [key], msg: 'Input should be a valid string', input: raw });
    return null;
  }

  /** `Optional[list[int]]` (`stop_token_ids`, `allowed_token_ids`): each item read as a lax int. */
  intList(key: string): number[] | null {
    const raw = this.#body[key];
    if (raw === undefined || raw === null) return null;
    if (!Array.isArray(raw)) {
      this.issues.push({ type: 'list_type', loc: [key], msg: 'Input should be a valid list', input: raw });
      return null;
    }
    const out: number[] = [];
    raw.forEach((item: unknown, i) => {
      const value = laxInt(item);
      if (typeof value === 'number') out.push(value);
      else this.issues.push({ ...value, loc: [key, i], input: item });
    });
    return out.length === raw.length ? out : null;
  }

  /**
   * `Optional[dict[str, float]]` (`logit_bias`): JSON keys are strings, each value a lax float.
   * Returns its keys (none when absent or mistyped).
   */
  floatDict(key: string): readonly string[] {
    const raw = this.#body[key];
    if (raw === undefined || raw === null) return [];
    if (!isJsonObject(raw)) {
      this.issues.push({ type: 'dict_type', loc: [key], msg: 'Input should be a valid dictionary', input: raw });
      return [];
    }
    for (const [name, item] of Object.entries(raw)) {
      const value = laxFloat(item);
      if (typeof value === 'object') this.issues.push({ ...value, loc: [key, name], input: item });
    }
    return Object.keys(raw);
  }

  /** `Optional[dict[str, Any]]` (`kv_transfer_params`, `chat_template_kwargs`): any object. */
  dict(key: string): void {
    const raw = this.#body[key];
    if (raw === undefined || raw === null || isJsonObject(raw)) return;
    this.issues.push({ type: 'dict_type', loc: [key], msg: 'Input should be a valid dictionary', input: raw });
  }

  /** `list[str]` (`nullable`: `Optional[list[str]]`), as `bad_words` and `guided_choice`. */
  strList(key: string, nullable: boolean): void {
    const raw = this.#body[key];
    if (raw === undefined || (raw === null && nullable)) return;
    if (!Array.isArray(raw)) {
      this.issues.push({ type: 'list_type', loc: [key], msg: 'Input should be a valid list', input: raw });
      return;
    }
    raw.forEach((item: unknown, i) => {
      if (typeof item !== 'string') this.issues.push({ type: 'string_type', loc: [key, i], msg: 'Input should be a valid string', input: item });
    });
  }

  /**
   * `Optional[list[<object>]]` (`tools`, `documents`): each item that is an object goes to
   * `visit`; a non-list, and an item that is no object, are the issues pydantic reports.
   */
  objects(key: string, notObject: { type: string; msg: string }, visit: (item: Record<string, unknown>, index: number) => void): void {
    const raw = this.#body[key];
    if (raw === undefined || raw === null) return;
    if (!Array.isArray(raw)) {
      this.issues.push({ type: 'list_type', loc: [key], msg: 'Input should be a valid list', input: raw });
      return;
    }
    raw.forEach((item: unknown, i) => {
      if (isJsonObject(item)) visit(item, i);
      else this.issues.push({ ...notObject, loc: [key, i], input: item });
    });
  }

  /** `Optional[Union[str, dict]]` (`guided_json`): pydantic reports a miss against each member. */
  strOrDict(key: string): void {
    const raw = this.#body[key];
    if (raw === undefined || raw === null || typeof raw === 'string' || isJsonObject(raw)) return;
    this.issues.push(
      { type: 'string_type', loc: [key, 'str'], msg: 'Input should be a valid string', input: raw },
      { type: 'dict_type', loc: [key, 'dict[any,any]'], msg: 'Input should be a valid dictionary', input: raw },
    );
  }

  /** `Optional[Literal[...]]`: anything but one of `allowed` is pydantic's literal_error. */
  literal(key: string, allowed: readonly string[]): string | null {
    const raw = this.#body[key];
    if (raw === undefined || raw === null) return null;
    if (typeof raw === 'string' && allowed.includes(raw)) return raw;
    this.issues.push(literalIssue([key], allowed, raw));
    return null;
  }

  /** `Optional[Union[str, list[str]]]`, as vLLM's `stop`. */
  strings(key: string): string[] {
    const raw = this.#body[key];
    if (raw === undefined || raw === null) return [];
    if (typeof raw === 'string') return [raw];
    if (Array.isArray(raw) && raw.every((item) => typeof item === 'string')) return raw as string[];
    // `Union[str, list[str]]`: pydantic reports each member's errors, the text's first, then the
    // list's (every item that is no text, or the list itself).
    this.issues.push({ type: 'string_type', loc: [key, 'str'], msg: 'Input should be a valid string', input: raw });
    if (!Array.isArray(raw)) this.issues.push({ type: 'list_type', loc: [key, 'list[str]'], msg: 'Input should be a valid list', input: raw });
    else raw.forEach((item, i) => void (typeof item !== 'string' && this.issues.push({ type: 'string_type', loc: [key, 'list[str]', i], msg: 'Input should be a valid string', input: item })));
    return [];
  }
}

/**
 * A body that is no JSON object: missing (FastAPI's "Field required") or of the wrong type. A
 * JSON `null` is missing too: FastAPI answers a decoded None for a required body before pydantic runs.
 */
export function bodyNotObject(body: unknown): VllmError {
  if (body === undefined || body === null) return validationError([{ type: 'missing', loc: [], msg: 'Field required', input: null }]);
  return validationError([{ type: 'model_attributes_type', loc: [], msg: 'Input should be a valid dictionary or object to extract fields from', input: body }]);
}

/** FastAPI's answer to a body that is not valid JSON. */
export function jsonInvalid(): VllmError {
  return validationError([{ type: 'json_invalid', loc: [0], msg: 'JSON decode error', input: {}, ctx: { error: 'Expecting value' } }]);
}
