/**
 * pydantic v2's lax-mode coercions, shared by the dialects whose servers are FastAPI apps (vLLM,
 * JetStream): integers accept integral floats, bools and digit strings; floats accept numeric
 * strings (inf/nan too); booleans accept 0/1 and 'yes'/'no'-style words.
 */

const TRUE_WORDS = new Set(['1', 'on', 't', 'true', 'y', 'yes']);
const FALSE_WORDS = new Set(['0', 'off', 'f', 'false', 'n', 'no']);

/** A failed field's pydantic error type and message; the caller adds where (`loc`) and what (`input`). */
export interface IssueHead {
  type: string;
  msg: string;
}

const INT_TEXT = /^[+-]?\d+(?:_\d+)*(?:\.0+)?$/;

export function laxInt(raw: unknown): number | IssueHead {
  if (typeof raw === 'number') {
    if (Number.isInteger(raw)) return raw;
    if (!Number.isFinite(raw)) return { type: 'finite_number', msg: 'Input should be a finite number' };
    return { type: 'int_from_float', msg: 'Input should be a valid integer, got a number with a fractional part' };
  }
  if (typeof raw === 'boolean') return raw ? 1 : 0;
  if (typeof raw === 'string') {
    const trimmed = raw.trim();
    // pydantic-core's str_as_int: underscores between digits (as Python's int()) and a decimal
    // part of zeros only ("5.0", "5.00"; not "5.") are an integer's text too.
    if (INT_TEXT.test(trimmed)) return Number(trimmed.replace(/_/g, '').replace(/\.0+$/, ''));
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
    // pydantic-core drops single underscores anywhere inside the text (`1_0.5`, `1e_5`, `in_f`),
    // never one at either end or two in a row, and then trims no whitespace (" 1_0" is refused).
    const trimmed = raw.includes('_') ? withoutUnderscores(raw) : raw.trim();
    if (trimmed === null) return FLOAT_PARSING;
    if (FLOAT_TEXT.test(trimmed)) return Number(trimmed);
    const special = SPECIAL_FLOAT_TEXT.exec(trimmed);
    if (special !== null) {
      if ((special[2] as string).toLowerCase() === 'nan') return Number.NaN;
      return special[1] === '-' ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
    }
    return FLOAT_PARSING;
  }
  return { type: 'float_type', msg: 'Input should be a valid number' };
}

const FLOAT_PARSING: IssueHead = { type: 'float_parsing', msg: 'Input should be a valid number, unable to parse string as a number' };

function withoutUnderscores(text: string): string | null {
  if (text.startsWith('_') || text.endsWith('_') || text.includes('__')) return null;
  return text.replace(/_/g, '');
}

export function laxBool(raw: unknown): boolean | IssueHead {
  if (typeof raw === 'boolean') return raw;
  if (raw === 0 || raw === 1) return raw === 1;
  if (typeof raw === 'string') {
    // Not trimmed: pydantic-core reads " true" as no boolean (bool_parsing), unlike an int's text.
    const word = raw.toLowerCase();
    if (TRUE_WORDS.has(word)) return true;
    if (FALSE_WORDS.has(word)) return false;
    return { type: 'bool_parsing', msg: 'Input should be a valid boolean, unable to interpret input' };
  }
  if (typeof raw === 'number') return { type: 'bool_parsing', msg: 'Input should be a valid boolean, unable to interpret input' };
  return { type: 'bool_type', msg: 'Input should be a valid boolean' };
}
