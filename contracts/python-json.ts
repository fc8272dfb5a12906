/**
 * JSON as Python's json module reads it, where it differs from JSON.parse: Python's `json.dump`
 * writes NaN and ±Infinity as the bare words `NaN`, `Infinity` and `-Infinity` (allow_nan=True
 * by default) and `json.load` takes them back as numbers. vLLM's request bodies (the server) and
 * the dataset files vLLM's benchmark reads (the client) both carry them. Pure.
 */

/** A marked string no JSON text starts with: the word it stands for follows it. */
const MARK = '\u0000benchtruth-python-constant:';
const CONSTANTS: Readonly<Record<string, number>> = { NaN: Number.NaN, Infinity: Number.POSITIVE_INFINITY, '-Infinity': Number.NEGATIVE_INFINITY };
/** `-Infinity` before `Infinity`: the sign is taken with it. */
const NAMES = ['-Infinity', 'Infinity', 'NaN'] as const;

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

/**
 * `text` read with Python's constants as numbers; throws JSON.parse's SyntaxError when it is no
 * JSON even so. For a text JSON.parse refused: a text it reads needs no second pass.
 */
export function parseWithPythonConstants(text: string): unknown {
  return JSON.parse(markConstants(text), revive);
}

export type PythonJsonRead = { ok: true; value: unknown } | { ok: false; message: string };

/** `text` as Python's json reads it; on failure, JSON.parse's reason for the text as written. */
export function readPythonJson(text: string): PythonJsonRead {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (!text.includes('NaN') && !text.includes('Infinity')) return { ok: false, message };
    try {
      return { ok: true, value: parseWithPythonConstants(text) };
    } catch {
      return { ok: false, message };
    }
  }
}
