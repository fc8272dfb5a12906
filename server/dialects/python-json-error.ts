/**
 * Where and why Python's `json.loads` (CPython's C scanner, Python ≤ 3.12) stops on a text that
 * is not JSON: FastAPI puts exactly that in its 422 (`loc: ["body", pos]`, `ctx.error: msg`).
 * Only asked after JSON.parse has already refused the text; it reads it once, front to back,
 * with an explicit stack (no recursion: the text can nest arbitrarily deep), and builds nothing.
 *
 * `pos` counts characters as Python does (code points), not UTF-16 units.
 */

export interface PythonJsonError {
  msg: string;
  pos: number;
}

const enum Char {
  Tab = 0x09,
  Newline = 0x0a,
  Return = 0x0d,
  Space = 0x20,
  Quote = 0x22,
  Plus = 0x2b,
  Comma = 0x2c,
  Minus = 0x2d,
  Dot = 0x2e,
  Zero = 0x30,
  One = 0x31,
  Nine = 0x39,
  Colon = 0x3a,
  UpperE = 0x45,
  Backslash = 0x5c,
  OpenBracket = 0x5b,
  CloseBracket = 0x5d,
  LowerE = 0x65,
  LowerU = 0x75,
  OpenBrace = 0x7b,
  CloseBrace = 0x7d,
}

/** The literals Python's scanner accepts (NaN and the infinities included). */
const LITERALS = ['null', 'true', 'false', 'NaN', 'Infinity', '-Infinity'];
const SIMPLE_ESCAPES = '"\\/bfnrt';

const isDigit = (c: number): boolean => c >= Char.Zero && c <= Char.Nine;
const isHex = (c: number): boolean => isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);

function skipWhitespace(s: string, i: number): number {
  for (;;) {
    const c = s.charCodeAt(i);
    if (c !== Char.Space && c !== Char.Tab && c !== Char.Newline && c !== Char.Return) return i;
    i++;
  }
}

/** The index after a number starting at `i`, or -1 when none starts there (Python's number pattern). */
function scanNumber(s: string, i: number): number {
  if (s.charCodeAt(i) === Char.Minus) i++;
  const first = s.charCodeAt(i);
  if (first === Char.Zero) i++;
  else if (first >= Char.One && first <= Char.Nine) while (isDigit(s.charCodeAt(++i)));
  else return -1;
  if (s.charCodeAt(i) === Char.Dot && isDigit(s.charCodeAt(i + 1))) {
    i += 2;
    while (isDigit(s.charCodeAt(i))) i++;
  }
  const e = s.charCodeAt(i);
  if (e === Char.LowerE || e === Char.UpperE) {
    let j = i + 1;
    const sign = s.charCodeAt(j);
    if (sign === Char.Plus || sign === Char.Minus) j++;
    const digits = j;
    while (isDigit(s.charCodeAt(j))) j++;
    if (j > digits) i = j;
  }
  return i;
}

/** The index after the closing quote of a string whose opening quote is at `open`, or the error. */
function scanString(s: string, open: number): number | PythonJsonError {
  const length = s.length;
  let i = open + 1;
  for (;;) {
    if (i >= length) return { msg: 'Unterminated string starting at', pos: open };
    const c = s.charCodeAt(i);
    if (c === Char.Quote) return i + 1;
    if (c < Char.Space) return { msg: 'Invalid control character at', pos: i };
    if (c !== Char.Backslash) {
      i++;
      continue;
    }
    if (i + 1 >= length) return { msg: 'Unterminated string starting at', pos: open };
    const escape = s.charCodeAt(i + 1);
    if (escape !== Char.LowerU) {
      if (!SIMPLE_ESCAPES.includes(String.fromCharCode(escape))) return { msg: 'Invalid \\escape', pos: i };
      i += 2;
      continue;
    }
    // CPython wants room for the four digits *and* one more character (a quirk: `\u0041` at
    // the very end of the text is an invalid escape, not an unterminated string).
    if (i + 6 >= length) return { msg: 'Invalid \\uXXXX escape', pos: i + 1 };
    for (let d = i + 2; d < i + 6; d++) if (!isHex(s.charCodeAt(d))) return { msg: 'Invalid \\uXXXX escape', pos: i + 1 };
    i += 6;
  }
}

/** Python counts code points: a surrogate pair before `index` is one character, not two. */
function codePointIndex(s: string, index: number): number {
  let pairs = 0;
  for (let i = 0; i + 1 < index; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        pairs++;
        i++;
      }
    }
  }
  return index - pairs;
}

/**
 * The error Python's json would raise for `text`, or null when Python would accept it (a text
 * only JavaScript refuses, such as `NaN`). The text as received: a leading UTF-8 BOM is skipped,
 * as `json.loads` of bytes skips it.
 */
export function pythonJsonError(text: string): PythonJsonError | null {
  const s = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const found = firstError(s);
  return found === null ? null : { msg: found.msg, pos: codePointIndex(s, found.pos) };
}

function firstError(s: string): PythonJsonError | null {
  const length = s.length;
  /** Open containers, innermost last: true for an object, false for an array. */
  const open: boolean[] = [];
  let i = skipWhitespace(s, 0);
  let expectKey = false;
  for (;;) {
    if (expectKey) {
      // A key, its colon, and on to its value.
      if (s.charCodeAt(i) !== Char.Quote) return { msg: 'Expecting property name enclosed in double quotes', pos: i };
      const end = scanString(s, i);
      if (typeof end !== 'number') return end;
      i = skipWhitespace(s, end);
      if (s.charCodeAt(i) !== Char.Colon) return { msg: "Expecting ':' delimiter", pos: i };
      i = skipWhitespace(s, i + 1);
      expectKey = false;
    }
    // A value at i.
    const c = s.charCodeAt(i);
    if (c === Char.Quote) {
      const end = scanString(s, i);
      if (typeof end !== 'number') return end;
      i = end;
    } else if (c === Char.OpenBrace || c === Char.OpenBracket) {
      const object = c === Char.OpenBrace;
      const inner = skipWhitespace(s, i + 1);
      if (s.charCodeAt(inner) === (object ? Char.CloseBrace : Char.CloseBracket)) {
        i = inner + 1;
      } else {
        open.push(object);
        i = inner;
        expectKey = object;
        continue;
      }
    } else {
      const literal = LITERALS.find((word) => s.startsWith(word, i));
      const end = literal !== undefined ? i + literal.length : scanNumber(s, i);
      if (end < 0) return { msg: 'Expecting value', pos: i };
      i = end;
    }
    // After a value: close containers, or a comma and the next member.
    for (;;) {
      if (open.length === 0) {
        const end = skipWhitespace(s, i);
        return end === length ? null : { msg: 'Extra data', pos: end };
      }
      i = skipWhitespace(s, i);
      const object = open[open.length - 1] as boolean;
      const here = s.charCodeAt(i);
      if (here === (object ? Char.CloseBrace : Char.CloseBracket)) {
        open.pop();
        i++;
        continue;
      }
      if (here !== Char.Comma) return { msg: "Expecting ',' delimiter", pos: i };
      i = skipWhitespace(s, i + 1);
      expectKey = object;
      break;
    }
  }
}
