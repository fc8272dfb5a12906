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
 *
 * Why it checks a little grammar: a server that flushed half an object and went on with whole
 * ones (`{"text": " a{"text": …}`) would otherwise leave the depth open and swallow every later
 * object, reading as a truncated stream. Two things valid JSON never has mark the spot: a raw
 * control byte inside a string, and an object or array opening where no value may start (after
 * a value, or after `{`/`,` where a key is due). The broken bytes count as stray (malformed) and
 * scanning resumes at the brace that began the next object.
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
  /** Non-whitespace bytes found between objects, and bytes of broken objects (a malformed stream). */
  strayBytes: number;
}

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
/** Containers deeper than this are not grammar-checked (the kind bits live in one int). */
const CHECKED_DEPTH = 31;

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
  /** Bit d − 1 set: the container at depth d is an array. */
  #arrays = 0;
  /** The last byte outside strings that was not whitespace (QUOTE after a string closes). */
  #last = 0;
  /** Offset, within the unfinished object's bytes, of the last `{` inside the open string; −1 = none. */
  #braceInString = -1;

  constructor(handlers: JsonObjectHandlers) {
    this.#handlers = handlers;
  }

  /** Bytes held of an object not yet complete (a reader bounds it, as SseDecoder.bufferedLength). */
  get bufferedLength(): number {
    return this.#carryLength;
  }

  feed(chunk: Uint8Array, atMs: number): void {
    let objectStart = this.#depth > 0 ? 0 : -1;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i] as number;
      if (this.#depth === 0) {
        if (byte === OPEN_BRACE) {
          this.#open(OPEN_BRACE);
          objectStart = i;
        } else if (!isJsonWhitespace(byte)) {
          this.#stray++;
        }
        continue;
      }
      if (this.#inString) {
        if (this.#escaped) this.#escaped = false;
        else if (byte === BACKSLASH) this.#escaped = true;
        else if (byte === QUOTE) {
          this.#inString = false;
          this.#last = QUOTE;
        } else if (byte < 0x20) {
          // A raw control byte: the string (and its object) was cut off. Resume at the `{` the
          // string swallowed, if any: that is where the next object began.
          const bytesSoFar = this.#carryLength + (i - objectStart);
          const resumeAt = this.#braceInString;
          this.#drop(resumeAt >= 0 ? resumeAt : bytesSoFar + 1);
          if (resumeAt < 0) {
            objectStart = -1;
          } else if (resumeAt >= bytesSoFar - (i - objectStart)) {
            // The brace is in this chunk: scan again from it.
            i = objectStart + (resumeAt - (bytesSoFar - (i - objectStart))) - 1;
            objectStart = -1;
          } else {
            // The brace is in the carried bytes: scan them again, then this chunk's part.
            const carried = this.#carry.slice(resumeAt, bytesSoFar - (i - objectStart));
            this.#carryLength = 0;
            this.feed(carried, atMs);
            i = objectStart - 1;
            objectStart = this.#depth > 0 ? objectStart : -1;
          }
          continue;
        } else if (byte === OPEN_BRACE) {
          this.#braceInString = this.#carryLength + (i - objectStart);
        }
        continue;
      }
      if (byte === QUOTE) {
        this.#inString = true;
        this.#braceInString = -1;
      } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
        if (!this.#valueMayStart()) {
          // No value may start here: the object so far was cut off, and this brace begins the next.
          this.#drop(this.#carryLength + (i - objectStart));
          if (byte === OPEN_BRACE) {
            this.#open(OPEN_BRACE);
            objectStart = i;
          } else {
            this.#stray++;
            objectStart = -1;
          }
          continue;
        }
        this.#open(byte);
      } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
        this.#depth--;
        this.#last = byte;
        if (this.#depth === 0) {
          this.#emit(chunk.subarray(objectStart, i + 1), atMs);
          objectStart = -1;
        }
      } else if (!isJsonWhitespace(byte)) {
        this.#last = byte;
      }
    }
    if (this.#depth > 0 && objectStart >= 0) this.#keep(chunk.subarray(objectStart));
  }

  #open(byte: number): void {
    this.#depth++;
    this.#last = byte;
    if (this.#depth === 1) this.#arrays = 0;
    if (this.#depth <= CHECKED_DEPTH) {
      const bit = 1 << (this.#depth - 1);
      this.#arrays = byte === OPEN_BRACKET ? this.#arrays | bit : this.#arrays & ~bit;
    }
  }

  /** Whether a value may start after `#last` inside the current container. */
  #valueMayStart(): boolean {
    if (this.#depth > CHECKED_DEPTH) return true;
    if (this.#last === COLON) return true;
    const inArray = (this.#arrays & (1 << (this.#depth - 1))) !== 0;
    return inArray && (this.#last === OPEN_BRACKET || this.#last === COMMA);
  }

  /** Discards the unfinished object's first `count` bytes as stray and returns to between objects. */
  #drop(count: number): void {
    this.#stray += count;
    this.#carryLength = 0;
    this.#depth = 0;
    this.#inString = false;
    this.#escaped = false;
    this.#braceInString = -1;
  }

  /** The stream ended: reports what was left unfinished or out of place. Resets the decoder. */
  end(): JsonObjectEndReport {
    const report = { pendingBytes: this.#carryLength, strayBytes: this.#stray };
    this.#carryLength = 0;
    this.#depth = 0;
    this.#inString = false;
    this.#escaped = false;
    this.#stray = 0;
    this.#braceInString = -1;
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
