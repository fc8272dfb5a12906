/**
 * JSON as Python's `json.load` reads it for dataset files: Python's `json.dump` writes NaN and
 * ±Infinity as the bare words `NaN`, `Infinity` and `-Infinity` by default (allow_nan=True), and
 * vLLM's ShareGPT reader (json.load) takes them back as numbers. JSON.parse refuses them, so a
 * text it refuses is read again with those words, outside strings, as the numbers they stand
 * for. Only when that reading fails too is the text no JSON, and the reason given is
 * JSON.parse's own on the text as written. Pure.
 *
 * (server/dialects/python-json.ts reads request bodies the same way and more — encodings,
 * Python's integer and nesting limits — but the client does not import the server.)
 */

/** A marked string no dataset text starts with: the word it stands for follows it. */
const MARK = '\u0000benchtruth-python-constant:';
const CONSTANTS: Readonly<Record<string, number>> = { NaN: Number.NaN, Infinity: Number.POSITIVE_INFINITY, '-Infinity': Number.NEGATIVE_INFINITY };
/** `-Infinity` before `Infinity`: the longer word where both start. */
const NAMES = ['-Infinity', 'Infinity', 'NaN'] as const;

/** Whether `text` holds one of Python's words outside strings (a cheap test before the rewrite). */
function mayHoldConstants(text: string): boolean {
  return text.includes('NaN') || text.includes('Infinity');
}

/** The text with each NaN / Infinity / -Infinity outside strings turned into a marked string. */
function markConstants(text: string): string {
  const parts: string[] = [];
  let from = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) {
      inString = true;
      continue;
    }
    // Only where a word starts: N, I, or -I.
    if (c !== 0x4e && c !== 0x49 && c !== 0x2d) continue;
    for (const name of NAMES) {
      if (text.startsWith(name, i)) {
        parts.push(text.slice(from, i), JSON.stringify(`${MARK}${name}`));
        i += name.length - 1;
        from = i + 1;
        break;
      }
    }
  }
  parts.push(text.slice(from));
  return parts.join('');
}

function revive(_key: string, value: unknown): unknown {
  return typeof value === 'string' && value.startsWith(MARK) ? CONSTANTS[value.slice(MARK.length)] : value;
}

export type PythonJsonRead = { ok: true; value: unknown } | { ok: false; message: string };

/** `text` as Python's json reads it; on failure, JSON.parse's reason for the text as written. */
export function readPythonJson(text: string): PythonJsonRead {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (!mayHoldConstants(text)) return { ok: false, message };
    try {
      return { ok: true, value: JSON.parse(markConstants(text), revive) };
    } catch {
      return { ok: false, message };
    }
  }
}
