/**
 * Reading request fields the way pydantic's lax mode does in vLLM: integers accept integral
 * floats and digit strings, booleans accept 0/1 and 'yes'/'no'-style strings, and every field
 * error is collected before answering. Failures become vLLM's RequestValidationError answer:
 * 400, type "Bad Request", message = Python repr of the error list.
 */
import { VllmError } from './errors.ts';
import { laxBool, laxFloat, laxInt, type IssueHead } from '../pydantic-lax.ts';
import { PyException, PyTuple, pythonRepr } from './python-repr.ts';

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

  /** An optional field (None allowed) read by a lax parser; a failure is collected, the fallback kept. */
  #lax<T extends number | boolean, F extends T | null>(key: string, fallback: F, parse: (raw: unknown) => T | IssueHead): T | F {
    const raw = this.#body[key];
    if (raw === undefined || raw === null) return fallback;
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

  /** A required-type integer with a default (`min_tokens: int = 0`): null is a type error. */
  intNotNull(key: string, fallback: number): number {
    if (this.#body[key] === null) {
      this.issues.push({ type: 'int_type', loc: [key], msg: 'Input should be a valid integer', input: null });
      return fallback;
    }
    return this.int(key, fallback);
  }

  bool(key: string, fallback: boolean): boolean {
    return this.#lax(key, fallback, laxBool);
  }

  str(key: string): string | null {
    const raw = this.#body[key];
    if (raw === undefined || raw === null) return null;
    if (typeof raw === 'string') return raw;
    this.issues.push({ type: 'string_type', loc: [key], msg: 'Input should be a valid string', input: raw });
    return null;
  }

  /** `Optional[Union[str, list[str]]]`, as vLLM's `stop`. */
  strings(key: string): string[] {
    const raw = this.#body[key];
    if (raw === undefined || raw === null) return [];
    if (typeof raw === 'string') return [raw];
    if (Array.isArray(raw)) {
      const bad = raw.findIndex((item) => typeof item !== 'string');
      if (bad < 0) return raw as string[];
      this.issues.push({ type: 'string_type', loc: [key, 'list[str]', bad], msg: 'Input should be a valid string', input: raw[bad] });
      return [];
    }
    this.issues.push({ type: 'string_type', loc: [key, 'str'], msg: 'Input should be a valid string', input: raw });
    return [];
  }
}

/** A body that is no JSON object: missing (FastAPI's "Field required") or of the wrong type. */
export function bodyNotObject(body: unknown): VllmError {
  if (body === undefined) return validationError([{ type: 'missing', loc: [], msg: 'Field required', input: null }]);
  return validationError([{ type: 'model_attributes_type', loc: [], msg: 'Input should be a valid dictionary or object to extract fields from', input: body }]);
}

/** FastAPI's answer to a body that is not valid JSON. */
export function jsonInvalid(): VllmError {
  return validationError([{ type: 'json_invalid', loc: [0], msg: 'JSON decode error', input: {}, ctx: { error: 'Expecting value' } }]);
}
