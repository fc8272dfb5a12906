/**
 * A request body as FastAPI reads it: Starlette's `json.loads` on the raw bytes, which drops a
 * leading UTF-8 byte-order mark (it decodes with `utf-8-sig` when it sees one) and accepts
 * Python's `NaN`, `Infinity` and `-Infinity`. JSON.parse does neither, so a body that a Windows
 * tool saved or Python's `json.dumps` wrote would be refused here and served by vLLM/JetStream.
 */
import { isUtf8 } from 'node:buffer';
import { pythonJsonError, type PythonJsonError } from './python-json-error.ts';

/**
 * FastAPI's detail for a body its JSON read fails on other than by a JSONDecodeError: bytes that
 * are not UTF-8 make Starlette's `json.loads` raise UnicodeDecodeError, which FastAPI answers
 * with HTTPException(400) and this detail (each dialect spells it in its own error shape).
 */
export const BODY_PARSE_ERROR = 'There was an error parsing the body';

/** The body's text as `json.loads` decodes bytes, or null when they are not UTF-8. */
export function bodyText(body: Buffer): string | null {
  return isUtf8(body) ? body.toString('utf8') : null;
}

const BOM = '\ufeff';
/** Stands in for a Python constant while JSON.parse reads the rest (as the JSON escape in the text). */
const CONSTANT_MARK = '\u0000benchtruth-python-constant:';
const CONSTANT_MARK_JSON = '\\u0000benchtruth-python-constant:';
const CONSTANTS: Readonly<Record<string, number>> = { NaN: Number.NaN, Infinity: Number.POSITIVE_INFINITY, '-Infinity': Number.NEGATIVE_INFINITY };
/** `-Infinity` before `Infinity`, so the sign is taken with it. */
const CONSTANT_NAMES = ['-Infinity', 'Infinity', 'NaN'] as const;

export type PythonJsonResult = { ok: true; value: unknown } | { ok: false; error: PythonJsonError | null; message: string };

/** The text with every NaN / Infinity / -Infinity outside strings turned into a marked string. */
function markConstants(text: string): string {
  let out = '';
  let from = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') {
      inString = true;
      continue;
    }
    for (const name of CONSTANT_NAMES) {
      if (text.startsWith(name, i)) {
        out += `${text.slice(from, i)}"${CONSTANT_MARK_JSON}${name}"`;
        i += name.length - 1;
        from = i + 1;
        break;
      }
    }
  }
  return out + text.slice(from);
}

function reviveConstant(_key: string, value: unknown): unknown {
  return typeof value === 'string' && value.startsWith(CONSTANT_MARK) ? CONSTANTS[value.slice(CONSTANT_MARK.length)] : value;
}

/**
 * The body's value, or why Python would refuse it (its message and position when the scanner
 * knows them; `message` is JavaScript's reason otherwise).
 */
export function parsePythonJson(raw: string): PythonJsonResult {
  const text = raw.startsWith(BOM) ? raw.slice(1) : raw;
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const python = pythonJsonError(text);
    if (python !== null) return { ok: false, error: python, message };
    // Python reads it: only its constants stopped JSON.parse.
    try {
      return { ok: true, value: JSON.parse(markConstants(text), reviveConstant) as unknown };
    } catch {
      return { ok: false, error: null, message };
    }
  }
}
