/**
 * The project's one incremental decoder for back-to-back JSON objects (JetStream's streams and
 * the ai-on-gke proxy's: `{…}{…}` with optional whitespace between, no delimiter).
 *
 * Why byte-level: reads cut the stream anywhere — inside a string, inside an escape, inside a
 * multi-byte UTF-8 character. The bytes that shape JSON (`{ } [ ] " \`) are ASCII and never
 * occur inside a UTF-8 sequence, so objects are found by scanning raw bytes with a tiny state
 * machine (depth, in-string, after-backslash) that survives any cut, and only a complete
 * object's bytes are decoded to text — a character split across reads is never corrupted.
 *
 * Why arrival-stamped: an object exists for a reader only when its closing brace arrives, so
 * every object carries the atMs of the feed() that delivered that brace.
 */

export interface JsonObjectText {
  /** The object's text exactly as sent (not parsed: the caller decides what it means). */
  text: string;
  /** The atMs of the feed() that delivered the object's closing brace. */
  atMs: number;
}

export interface JsonObjectHandlers {
  onObject(object: JsonObjectText): void;
}

export interface JsonObjectEndReport {
  /** Bytes of an object that never closed (a truncated stream). */
  pendingBytes: number;
  /** Non-whitespace bytes found between objects (a malformed stream). */
  strayBytes: number;
}

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

function isJsonWhitespace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

export class JsonObjectDecoder {
  /** Called as a method of the caller's object. */
  readonly #handlers: JsonObjectHandlers;
  readonly #decoder = new TextDecoder('utf-8');
  /** Bytes of the unfinished object carried over from earlier feeds. */
  #carry = new Uint8Array(1024);
  #carryLength = 0;
  #depth = 0;
  #inString = false;
  #escaped = false;
  #stray = 0;

  constructor(handlers: JsonObjectHandlers) {
    this.#handlers = handlers;
  }

  feed(chunk: Uint8Array, atMs: number): void {
    let objectStart = this.#depth > 0 ? 0 : -1;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i] as number;
      if (this.#depth === 0) {
        if (byte === OPEN_BRACE) {
          this.#depth = 1;
          objectStart = i;
        } else if (!isJsonWhitespace(byte)) {
          this.#stray++;
        }
        continue;
      }
      if (this.#inString) {
        if (this.#escaped) this.#escaped = false;
        else if (byte === BACKSLASH) this.#escaped = true;
        else if (byte === QUOTE) this.#inString = false;
        continue;
      }
      if (byte === QUOTE) this.#inString = true;
      else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) this.#depth++;
      else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
        this.#depth--;
        if (this.#depth === 0) {
          this.#emit(chunk.subarray(objectStart, i + 1), atMs);
          objectStart = -1;
        }
      }
    }
    if (this.#depth > 0 && objectStart >= 0) this.#keep(chunk.subarray(objectStart));
  }

  /** The stream ended: reports what was left unfinished or out of place. Resets the decoder. */
  end(): JsonObjectEndReport {
    const report = { pendingBytes: this.#carryLength, strayBytes: this.#stray };
    this.#carryLength = 0;
    this.#depth = 0;
    this.#inString = false;
    this.#escaped = false;
    this.#stray = 0;
    return report;
  }

  #emit(tail: Uint8Array, atMs: number): void {
    let bytes = tail;
    if (this.#carryLength > 0) {
      bytes = new Uint8Array(this.#carryLength + tail.length);
      bytes.set(this.#carry.subarray(0, this.#carryLength));
      bytes.set(tail, this.#carryLength);
      this.#carryLength = 0;
    }
    this.#handlers.onObject({ text: this.#decoder.decode(bytes), atMs });
  }

  #keep(bytes: Uint8Array): void {
    const needed = this.#carryLength + bytes.length;
    if (needed > this.#carry.length) {
      const grown = new Uint8Array(Math.max(needed, this.#carry.length * 2));
      grown.set(this.#carry.subarray(0, this.#carryLength));
      this.#carry = grown;
    }
    this.#carry.set(bytes, this.#carryLength);
    this.#carryLength = needed;
  }
}
