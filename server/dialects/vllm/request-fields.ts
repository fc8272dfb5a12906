/**
 * Reading request fields the way pydantic's lax mode does in vLLM: integers accept integral
 * floats and digit strings, booleans accept 0/1 and 'yes'/'no'-style strings, and every field
 * error is collected before answering. Failures become vLLM's RequestValidationError answer:
 * 400, type "Bad Request", message = Python repr of the error list.
 */
import { VllmError } from './errors.ts';
import { PyException, PyTuple, pythonRepr } from './python-repr.ts';

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: VllmError };

export interface FieldIssue {
  type: string;
  loc: Array<string | number>;
  msg: string;
  input: unknown;
  ctx?: Record<string, unknown>;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
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

const TRUE_WORDS = new Set(['1', 'on', 't', 'true', 'y', 'yes']);
const FALSE_WORDS = new Set(['0', 'off', 'f', 'false', 'n', 'no']);

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

  /** An optional integer (None allowed). */
  int(key: string, fallback: number | null): number | null {
    const raw = this.#body[key];
    if (raw === undefined || raw === null) return fallback;
    const value = laxInt(raw);
    if (typeof value === 'number') return value;
    this.issues.push({ ...value, loc: [key], input: raw });
    return fallback;
  }

  /** An optional float (None allowed), e.g. `temperature`. */
  float(key: string, fallback: number | null): number | null {
    const raw = this.#body[key];
    if (raw === undefined || raw === null) return fallback;
    const value = laxFloat(raw);
    if (typeof value === 'number') return value;
    this.issues.push({ ...value, loc: [key], input: raw });
    return fallback;
  }

  /** A required-type integer with a default (`min_tokens: int = 0`): null is a type error. */
  intNotNull(key: string, fallback: number): number {
    if (this.#body[key] === null) {
      this.issues.push({ type: 'int_type', loc: [key], msg: 'Input should be a valid integer', input: null });
      return fallback;
    }
    return this.int(key, fallback) ?? fallback;
  }

  bool(key: string, fallback: boolean): boolean {
    const raw = this.#body[key];
    if (raw === undefined || raw === null) return fallback;
    const value = laxBool(raw);
    if (typeof value === 'boolean') return value;
    this.issues.push({ ...value, loc: [key], input: raw });
    return fallback;
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

type IssueHead = Omit<FieldIssue, 'loc' | 'input'>;

export function laxInt(raw: unknown): number | IssueHead {
  if (typeof raw === 'number') {
    if (Number.isInteger(raw)) return raw;
    if (!Number.isFinite(raw)) return { type: 'finite_number', msg: 'Input should be a finite number' };
    return { type: 'int_from_float', msg: 'Input should be a valid integer, got a number with a fractional part' };
  }
  if (typeof raw === 'boolean') return raw ? 1 : 0;
  if (typeof raw === 'string') {
    const trimmed = raw.trim();
    if (/^[+-]?\d+$/.test(trimmed)) return Number(trimmed);
    return { type: 'int_parsing', msg: 'Input should be a valid integer, unable to parse string as an integer' };
  }
  return { type: 'int_type', msg: 'Input should be a valid integer' };
}

const FLOAT_TEXT = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;
const SPECIAL_FLOAT_TEXT = /^([+-]?)(inf|infinity|nan)$/i;

/** pydantic's lax float: numbers, booleans, and strings that parse as a number (inf/nan too). */
export function laxFloat(raw: unknown): number | IssueHead {
  if (typeof raw === 'number') return raw;
  if (typeof raw === 'boolean') return raw ? 1 : 0;
  if (typeof raw === 'string') {
    const trimmed = raw.trim();
    if (FLOAT_TEXT.test(trimmed)) return Number(trimmed);
    const special = SPECIAL_FLOAT_TEXT.exec(trimmed);
    if (special !== null) {
      if ((special[2] as string).toLowerCase() === 'nan') return Number.NaN;
      return special[1] === '-' ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
    }
    return { type: 'float_parsing', msg: 'Input should be a valid number, unable to parse string as a number' };
  }
  return { type: 'float_type', msg: 'Input should be a valid number' };
}

export function laxBool(raw: unknown): boolean | IssueHead {
  if (typeof raw === 'boolean') return raw;
  if (raw === 0 || raw === 1) return raw === 1;
  if (typeof raw === 'string') {
    const word = raw.trim().toLowerCase();
    if (TRUE_WORDS.has(word)) return true;
    if (FALSE_WORDS.has(word)) return false;
    return { type: 'bool_parsing', msg: 'Input should be a valid boolean, unable to interpret input' };
  }
  if (typeof raw === 'number') return { type: 'bool_parsing', msg: 'Input should be a valid boolean, unable to interpret input' };
  return { type: 'bool_type', msg: 'Input should be a valid boolean' };
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
