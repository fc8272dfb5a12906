/**
 * Python's `repr` of JSON-like values. vLLM answers a request that fails pydantic validation
 * with `str(exc.errors())`, a Python repr of a list of dicts, so the message a client sees is
 * Python syntax. Tuples (pydantic's `loc`) are modelled by `PyTuple`.
 */

export class PyTuple {
  constructor(readonly items: readonly unknown[]) {}
}

/** An exception instance as repr shows it inside pydantic's `ctx`: `ValueError('…')`. */
export class PyException {
  constructor(
    readonly kind: string,
    readonly message: string,
  ) {}
}

/**
 * What Python's `str.isprintable()` calls not printable (its repr escapes these): controls,
 * format characters, surrogates, private use, unassigned code points, and separators other
 * than the ASCII space (a no-break space, a zero-width space and a soft hyphen print escaped).
 */
const NOT_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;

/** `\xhh`, `\uhhhh` or `\Uhhhhhhhh`, by size, as repr writes a character it does not print. */
function escapedCodePoint(code: number): string {
  if (code < 0x100) return `\\x${code.toString(16).padStart(2, '0')}`;
  if (code < 0x10000) return `\\u${code.toString(16).padStart(4, '0')}`;
  return `\\U${code.toString(16).padStart(8, '0')}`;
}

function reprString(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of text) {
    const code = ch.codePointAt(0) as number;
    if (ch === '\\') out += '\\\\';
    else if (ch === quote) out += `\\${quote}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch !== ' ' && NOT_PRINTABLE.test(ch)) out += escapedCodePoint(code);
    else out += ch;
  }
  return out + quote;
}

function reprNumber(value: number): string {
  if (Number.isInteger(value) && Math.abs(value) < 1e16) return String(value);
  if (!Number.isFinite(value)) return value > 0 ? 'inf' : value < 0 ? '-inf' : 'nan';
  // Python pads exponents to two digits and switches to exponent form from 1e16.
  const text = Math.abs(value) >= 1e16 ? value.toExponential() : String(value);
  return text.replace(/e([+-])(\d)$/, 'e$10$2');
}

/** Python's `str` of a float (`-1.0`, `0.5`, `1e-05`, `1e+16`, `inf`, `nan`), as vLLM's f-strings print it. */
export function pythonFloat(value: number): string {
  if (Number.isNaN(value)) return 'nan';
  if (!Number.isFinite(value)) return value > 0 ? 'inf' : '-inf';
  if (value === 0) return Object.is(value, -0) ? '-0.0' : '0.0';
  const magnitude = Math.abs(value);
  if (magnitude >= 1e16 || magnitude < 1e-4) return value.toExponential().replace(/e([+-])(\d)$/, 'e$10$2');
  const text = String(value);
  return Number.isInteger(value) ? `${text}.0` : text;
}

/**
 * Containers nested deeper than this print as `[...]` / `{...}` (reprlib's mark). Python itself
 * cannot go much deeper: its json parser and repr stop at the recursion limit (1000), so only a
 * body no Python server could have parsed is cut; the printer's own recursion stays bounded.
 */
export const MAX_REPR_DEPTH = 200;

export function pythonRepr(value: unknown): string {
  return reprAt(value, 0);
}

function reprAt(value: unknown, depth: number): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'number') return reprNumber(value);
  if (typeof value === 'string') return reprString(value);
  if (value instanceof PyException) return `${value.kind}(${reprString(value.message)})`;
  const inner = (item: unknown): string => reprAt(item, depth + 1);
  if (value instanceof PyTuple) {
    if (depth >= MAX_REPR_DEPTH) return '(...)';
    const items = value.items.map(inner);
    return items.length === 1 ? `(${items[0]},)` : `(${items.join(', ')})`;
  }
  if (Array.isArray(value)) return depth >= MAX_REPR_DEPTH ? '[...]' : `[${value.map(inner).join(', ')}]`;
  if (typeof value === 'object') {
    if (depth >= MAX_REPR_DEPTH) return '{...}';
    const entries = Object.entries(value as Record<string, unknown>).map(([k, v]) => `${reprString(k)}: ${inner(v)}`);
    return `{${entries.join(', ')}}`;
  }
  return reprString(String(value));
}
