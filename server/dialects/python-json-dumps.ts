/**
 * JSON as Python's `json.dumps` writes it, with its default `ensure_ascii=True`: everything
 * outside printable ASCII travels as a `\uXXXX` escape (lowercase hex, astral characters as
 * surrogate pairs, DEL too), so the bytes never hold raw multi-byte UTF-8. JetStream writes all
 * its JSON so (the ai-on-gke proxy's `json.dumps`, its own HTTP server's protobuf
 * `MessageToJson`); vLLM only its in-stream error events (`create_streaming_error_response`),
 * while its chunks are pydantic's raw UTF-8.
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

/**
 * `json.dumps(fields)` with Python's default separators (", " and ": ", which JSON.stringify
 * cannot write) for a flat object of strings, numbers and nulls.
 */
export function pythonJsonDumpsFlat(fields: Readonly<Record<string, string | number | null>>): string {
  return ensureAscii(`{${Object.entries(fields)
    .map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`)
    .join(', ')}}`);
}
