/**
 * How a request id travels in the `x-request-id` response header. An id that came in as a header
 * is already a valid header value (Node's parser enforces the same grammar as its writer, and
 * reads the bytes as Latin-1), so it goes back unchanged, byte for byte. An id from a JSON body
 * (a body's `request_id`) can hold anything: CR/LF, characters above U+00FF, lone surrogates — any
 * of which would make Node throw while writing the header. Such an id goes out percent-encoded
 * (UTF-8, `encodeURIComponent`), so the header stays one safe line and pasting it into
 * `/_truth/requests/<header>` decodes back to the id the truth record is filed under.
 */

/**
 * A header value Node writes as is and a reader reads back unchanged: tab, visible ASCII, space
 * and Latin-1 (obs-text) characters, with no whitespace at either end (readers strip it).
 */
const SAFE_HEADER_VALUE = /^(?:[\x21-\x7e\x80-\xff](?:[\t\x20-\x7e\x80-\xff]*[\x21-\x7e\x80-\xff])?)?$/;

export function isSafeHeaderValue(value: string): boolean {
  return SAFE_HEADER_VALUE.test(value);
}

/** The `x-request-id` value for `id`: the id itself when it can be a header, else its percent-encoding. */
export function idHeaderValue(id: string): string {
  if (isSafeHeaderValue(id)) return id;
  // A lone surrogate cannot be percent-encoded (encodeURIComponent throws); the UTF-8 round
  // trip turns it into U+FFFD, as any UTF-8 encoder writes it.
  return encodeURIComponent(Buffer.from(id, 'utf8').toString('utf8'));
}

/**
 * The client's x-request-id: the first of the header's values, as Starlette's `headers.get`
 * reads it (Node joins repeated values with ", ", which would make `a` and `b` the id `a, b`).
 */
export function sentRequestId(rawHeaders: readonly string[]): string | undefined {
  return firstHeaderValue(rawHeaders, 'x-request-id');
}

/** The first value of header `name` (lower case) as sent, as Starlette's `headers.get` and fasthttp's `Peek` read it. */
export function firstHeaderValue(rawHeaders: readonly string[], name: string): string | undefined {
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if ((rawHeaders[i] as string).toLowerCase() === name) return rawHeaders[i + 1];
  }
  return undefined;
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * node reads header bytes as Latin-1; a client that sent UTF-8 (`gap=1µs`, `event=café`, an id
 * `café`) meant those characters. Bytes that are no UTF-8 stay as read.
 */
export function utf8OfLatin1(value: string): string {
  if (!/[\u0080-\u00ff]/.test(value)) return value;
  try {
    return STRICT_UTF8.decode(Buffer.from(value, 'latin1'));
  } catch {
    return value;
  }
}
