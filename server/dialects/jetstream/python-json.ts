/**
 * JSON as JetStream's Python writes it. Both the ai-on-gke proxy (`json.dumps`) and JetStream's
 * own HTTP server (protobuf's `MessageToJson`, itself `json.dumps`) keep `ensure_ascii=True`:
 * everything outside printable ASCII travels as a `\uXXXX` escape (lowercase hex, astral
 * characters as surrogate pairs, DEL too), so their bytes never hold raw multi-byte UTF-8.
 * The one escaping rule of the JetStream dialect; every renderer goes through it.
 */

const NOT_PRINTABLE_ASCII = /[\u007f-\uffff]/g;

function escapeUnit(unit: string): string {
  return `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/**
 * Applies ensure_ascii to JSON text made by JSON.stringify. Outside string literals such JSON is
 * ASCII already, and JSON.stringify escapes control characters and lone surrogates exactly as
 * Python does, so only the remaining UTF-16 units (DEL and up) need escaping — one by one, which
 * turns an astral character into its surrogate pair, as Python's encoder does.
 */
export function ensureAscii(json: string): string {
  return json.replace(NOT_PRINTABLE_ASCII, escapeUnit);
}

/** A string literal as `json.dumps(text)` writes it. */
export function pythonJsonString(text: string): string {
  return ensureAscii(JSON.stringify(text));
}

/**
 * `json.dumps(value, indent=indent)` (with an indent Python's separators are `,` and `: `, as
 * JSON.stringify's) for values without floats: Python prints floats its own way (see python-repr.ts
 * pythonFloat), so callers write those by hand.
 */
export function pythonJsonDumps(value: unknown, indent: number): string {
  return ensureAscii(JSON.stringify(value, null, indent));
}
