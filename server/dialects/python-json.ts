/**
 * A request body as FastAPI reads it: Starlette's `json.loads` on the raw bytes, which drops a
 * leading UTF-8 byte-order mark (it decodes with `utf-8-sig` when it sees one) and accepts
 * Python's `NaN`, `Infinity` and `-Infinity`. JSON.parse does neither, so a body that a Windows
 * tool saved or Python's `json.dumps` wrote would be refused here and served by vLLM/JetStream.
 */
import { isUtf8 } from 'node:buffer';
import { parseWithPythonConstants } from '../../contracts/python-json.ts';
import { pythonJsonError, type PythonJsonError } from './python-json-error.ts';

/**
 * FastAPI's detail for a body its JSON read fails on other than by a JSONDecodeError: bytes that
 * are not UTF-8 make Starlette's `json.loads` raise UnicodeDecodeError, which FastAPI answers
 * with HTTPException(400) and this detail (each dialect spells it in its own error shape).
 */
export const BODY_PARSE_ERROR = 'There was an error parsing the body';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's endpoint reads a JSON body (server/app.ts parses bodies for these only). */
    jsonBody?: boolean;
  }
}

/**
 * Route options of an endpoint that reads a JSON body. Every other route (and an unknown path)
 * answers without reading it, as Starlette routes and FastAPI reads a body only for an endpoint
 * that declares one: `POST /nothing` with a body that does not decode is still a 404,
 * `POST /metrics` still the metrics and `POST /v1/completions/` still the 307.
 */
export const JSON_BODY_ROUTE = { config: { jsonBody: true } } as const;

type BodyEncoding = 'utf-8' | 'utf-16' | 'utf-16-le' | 'utf-16-be' | 'utf-32' | 'utf-32-le' | 'utf-32-be';

/** CPython's `json.detect_encoding`: a byte-order mark, else where the first bytes' zeros fall. */
function detectEncoding(b: Buffer): BodyEncoding {
  if (b.length >= 4 && ((b[0] === 0 && b[1] === 0 && b[2] === 0xfe && b[3] === 0xff) || (b[0] === 0xff && b[1] === 0xfe && b[2] === 0 && b[3] === 0))) return 'utf-32';
  if (b.length >= 2 && ((b[0] === 0xfe && b[1] === 0xff) || (b[0] === 0xff && b[1] === 0xfe))) return 'utf-16';
  if (b.length >= 4) {
    if (b[0] === 0) return b[1] !== 0 ? 'utf-16-be' : 'utf-32-be';
    if (b[1] === 0) return b[2] !== 0 || b[3] !== 0 ? 'utf-16-le' : 'utf-32-le';
  } else if (b.length === 2) {
    if (b[0] === 0) return 'utf-16-be';
    if (b[1] === 0) return 'utf-16-le';
  }
  return 'utf-8';
}

/** UTF-16 code units (lone surrogates pass, as Python's `surrogatepass`); null for an odd length. */
function utf16(bytes: Buffer, bigEndian: boolean): string | null {
  if (bytes.length % 2 !== 0) return null;
  const units = Buffer.from(bytes);
  if (bigEndian) units.swap16();
  return units.toString('utf16le');
}

/** UTF-32 code points; null for a length not a multiple of 4 or a value beyond U+10FFFF. */
function utf32(bytes: Buffer, bigEndian: boolean): string | null {
  if (bytes.length % 4 !== 0) return null;
  let text = '';
  for (let i = 0; i < bytes.length; i += 4) {
    const point = bigEndian ? bytes.readUInt32BE(i) : bytes.readUInt32LE(i);
    if (point > 0x10ffff) return null;
    text += String.fromCodePoint(point);
  }
  return text;
}

/**
 * The body's text as `json.loads` decodes bytes (UTF-8, or UTF-16/32 told by a byte-order mark
 * or by where the first bytes' zeros fall, as `json.detect_encoding` tells them), or null when
 * the bytes do not decode (Starlette's UnicodeDecodeError).
 */
export function bodyText(body: Buffer): string | null {
  const encoding = detectEncoding(body);
  switch (encoding) {
    case 'utf-8':
      return isUtf8(body) ? body.toString('utf8') : null;
    case 'utf-16':
      return utf16(body.subarray(2), body[0] === 0xfe);
    case 'utf-16-le':
    case 'utf-16-be':
      return utf16(body, encoding === 'utf-16-be');
    case 'utf-32':
      return utf32(body.subarray(4), body[0] === 0);
    default:
      return utf32(body, encoding === 'utf-32-be');
  }
}

const BOM = '\ufeff';
/**
 * `decode`: a JSONDecodeError (FastAPI's 422 json_invalid, or vLLM's 400 naming it). `value`:
 * another ValueError of `json.loads`, which FastAPI answers with 400 BODY_PARSE_ERROR.
 */
export type PythonJsonResult = { ok: true; value: unknown } | { ok: false; kind: 'decode' | 'value'; error: PythonJsonError | null; message: string };

/** CPython 3.11+'s cap on int-from-text conversion (sys.get_int_max_str_digits()). */
const INT_MAX_STR_DIGITS = 4300;

/** Whether `text` has a run of more than 4300 digits anywhere (inside strings too); linear. */
function hasOverlongDigitRun(text: string): boolean {
  let run = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) {
      if (++run > INT_MAX_STR_DIGITS) return true;
    } else run = 0;
  }
  return false;
}

/** A character of a JSON number's fraction or exponent: a digit, `e`, `E`, `+`, `-` or `.`. */
const isNumberChar = (c: number): boolean => (c >= 0x30 && c <= 0x39) || c === 0x65 || c === 0x45 || c === 0x2b || c === 0x2d || c === 0x2e;

const OVERLONG_INTEGER = `Exceeds the limit (${INT_MAX_STR_DIGITS} digits) for integer string conversion`;

/**
 * How deep arrays and objects may nest before Python's json gives up: its C scanner recurses
 * once per container and raises RecursionError at the interpreter's recursion limit (1,000 by
 * default, less the frames of the server above it; the exact depth varies by release). FastAPI
 * answers that, like any ValueError, with 400 BODY_PARSE_ERROR.
 */
const MAX_NESTING = 1000;
const TOO_DEEP = 'maximum recursion depth exceeded while decoding a JSON object from a unicode string';

/**
 * The ValueError Python's json raises on `text` (JSON that parses), or null: the first integer
 * literal of more than 4300 digits outside strings (json reads an integer with int(), which
 * refuses it; a fraction or exponent makes it a float, which has no such cap), or the first
 * container nested deeper than MAX_NESTING, whichever the reader meets first. One linear pass,
 * and none at all for a body too short for either.
 */
function pythonValueError(text: string): string | null {
  const mayNest = text.length > 2 * MAX_NESTING;
  const mayOverflow = text.length > INT_MAX_STR_DIGITS && hasOverlongDigitRun(text);
  if (!mayNest && !mayOverflow) return null;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_NESTING) return TOO_DEEP;
    } else if (c === 0x5d || c === 0x7d) depth--;
    else if (mayOverflow && c >= 0x30 && c <= 0x39) {
      const start = i;
      while (i + 1 < text.length && text.charCodeAt(i + 1) >= 0x30 && text.charCodeAt(i + 1) <= 0x39) i++;
      const next = text[i + 1];
      const isFloat = next === '.' || next === 'e' || next === 'E';
      if (i - start + 1 > INT_MAX_STR_DIGITS && !isFloat) return OVERLONG_INTEGER;
      // A fraction's or exponent's digits are the float's: skip them with it.
      if (isFloat) {
        i++;
        while (i + 1 < text.length && isNumberChar(text.charCodeAt(i + 1))) i++;
      }
    }
  }
  return null;
}

/**
 * The body's value, or why Python would refuse it (its message and position when the scanner
 * knows them; `message` is JavaScript's reason otherwise).
 */
export function parsePythonJson(raw: string): PythonJsonResult {
  const text = raw.startsWith(BOM) ? raw.slice(1) : raw;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const python = pythonJsonError(text);
    if (python !== null) return { ok: false, kind: 'decode', error: python, message };
    // Python reads it: only its constants stopped JSON.parse.
    try {
      value = parseWithPythonConstants(text);
    } catch {
      return { ok: false, kind: 'decode', error: null, message };
    }
  }
  const valueError = pythonValueError(text);
  if (valueError !== null) return { ok: false, kind: 'value', error: null, message: valueError };
  return { ok: true, value };
}
