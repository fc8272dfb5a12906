/**
 * The project's one incremental Server-Sent Events decoder (WHATWG HTML "event stream
 * interpretation").
 *
 * Why byte-level: socket reads cut the stream anywhere — inside a multi-byte UTF-8 character,
 * between the CR and LF of a CRLF, inside a BOM. Line terminators (0x0A, 0x0D) are ASCII and never
 * occur inside a UTF-8 sequence, so we find them in the raw bytes and decode only complete lines;
 * a character split across reads is then never corrupted, and no streaming text decoder state has
 * to be reasoned about.
 *
 * Why arrival-stamped: the metric contract (DESIGN §4) says an event exists for the reader only
 * when its terminating blank line arrives, so every event carries the `atMs` of the feed() that
 * completed it — not of the read where it started. A blank line ended by a CR at the very end of
 * a read is dispatched at once (a lone CR is a whole line end); when the next read then starts
 * with that CR's LF, the blank line was a CRLF and only that read completes it, so the handler is
 * told the event's true arrival (`onEventLastByte`).
 *
 * Hot path (one `data: {json}\n\n` per event, many events per read): lines are found with
 * Buffer#indexOf (memchr; Uint8Array#indexOf is an order of magnitude slower in V8), each line is
 * decoded straight out of the read's bytes, and only the unfinished tail of a read is copied.
 */
import { Buffer } from 'node:buffer';

export interface SseEvent {
  /** Data lines joined with '\n' (the spec's trailing '\n' removed). */
  data: string;
  /** The `event` field, or "message" when the event had none (or an empty one). */
  event: string;
  /** The last event ID: per spec it persists across events until an `id` field changes it. */
  id: string;
  /** The atMs of the feed() that delivered the event's terminating blank line. */
  atMs: number;
}

export interface SseHandlers {
  onEvent(e: SseEvent): void;
  /**
   * Comment lines (`:` …). Our server sends keep-alive comments; they are not events, but the
   * client wants to see them. `text` has the colon and one optional following space removed.
   */
  onComment?(text: string, atMs: number): void;
  /**
   * The event dispatched last ended in a CR at the end of a read, and this later read began
   * with the LF that makes that blank line a CRLF: the event's last byte arrived at `atMs`.
   */
  onEventLastByte?(atMs: number): void;
  /**
   * An `error` field line. SSE ignores fields it does not know, and this decoder's events do too,
   * but llama.cpp's server (2025 builds) streams its errors as `error: {json}` before `[DONE]`:
   * a reader that drops the line counts a failed request as a success.
   */
  onErrorField?(value: string, atMs: number): void;
}

export interface SseEndReport {
  /** Bytes of an unterminated last line (including a partial BOM) that were never interpreted. */
  pendingBytes: number;
  /**
   * A field line (complete, or the unterminated last line unless it is a comment) came after the
   * last blank line: the stream stopped inside an event block. Deliberately broader than "a blank
   * line would have dispatched" — `event: x\n` at the end is a truncation too. Together with
   * pendingBytes > 0 this is how a caller tells a truncated stream from a clean end.
   */
  pendingEvent: boolean;
}

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const SPACE = 0x20;
const BOM0 = 0xef;
const BOM1 = 0xbb;
const BOM2 = 0xbf;
const NO_BYTES = Buffer.alloc(0);
const HELD_BOM1 = new Uint8Array([BOM0]);
const HELD_BOM2 = new Uint8Array([BOM0, BOM1]);

// ignoreBOM: a non-streaming decode() would otherwise strip a U+FEFF at the start of *every*
// line or value; the spec removes exactly one BOM, at the start of the stream, which we do on bytes.
// Non-streaming decode() keeps no state between calls, so every decoder shares this one.
const UTF8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

export class SseDecoder {
  /** Called as methods of the caller's object (no bound copies per decoder). */
  private readonly handlers: SseHandlers;
  private readonly decoder = UTF8;

  /**
   * Unfinished line carried to the next feed; only ever holds one partial line. Allocated on
   * first need: a paced stream whose reads end on event boundaries never needs it.
   */
  private carry: Buffer = NO_BYTES;
  private carryLen = 0;
  /** BOM bytes matched so far at stream start; -1 once the BOM question is settled. */
  private bomMatched = 0;
  /** The previous feed ended in CR, which already ended a line; a leading LF now is its pair. */
  private skipLF = false;
  /** The line ended by that CR was a blank line that dispatched an event. */
  private dispatchedOnCR = false;
  /** The line being interpreted dispatched an event. */
  private lineDispatched = false;

  private data = '';
  /** Spec's "data buffer is non-empty" — distinct from data !== '' because `data:` alone counts. */
  private hasData = false;
  private eventType = '';
  private lastEventId = '';
  private retry: number | null = null;
  private inBlock = false;

  constructor(handlers: SseHandlers) {
    this.handlers = handlers;
  }

  /**
   * What the decoder holds of an event not yet complete: its unfinished line's bytes and its data
   * so far (UTF-16 units). A reader bounds it: a stream that never ends a line or an event would
   * otherwise grow it until the heap runs out.
   */
  get bufferedLength(): number {
    return this.carryLen + this.data.length;
  }

  /** Reconnection time from the last valid `retry` field (we never reconnect; kept for diagnostics). */
  get retryMs(): number | null {
    return this.retry;
  }

  feed(chunk: Uint8Array, atMs: number): void {
    const len = chunk.length;
    if (len === 0) return;
    let pos = 0;

    if (this.bomMatched >= 0) {
      pos = this.matchBom(chunk);
      if (pos < 0) return; // whole chunk was a BOM prefix
    }
    if (this.skipLF && pos < len) {
      this.skipLF = false;
      if (chunk[pos] === LF) {
        pos++;
        if (this.dispatchedOnCR) this.handlers.onEventLastByte?.(atMs);
      }
      this.dispatchedOnCR = false;
    }

    // memchr-backed search; one view per feed, none per line.
    const buf =
      chunk instanceof Buffer ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);

    let lfNext = pos < len ? buf.indexOf(LF, pos) : -1;
    let crNext = pos < len ? buf.indexOf(CR, pos) : -1;

    if (this.carryLen > 0 && pos < len) {
      const e = crNext === -1 || (lfNext !== -1 && lfNext < crNext) ? lfNext : crNext;
      if (e === -1) {
        this.append(chunk, pos, len);
        return;
      }
      this.append(chunk, pos, e);
      const n = this.carryLen;
      this.carryLen = 0;
      this.line(this.carry, 0, n, atMs);
      pos = this.afterTerminator(chunk, e, len);
    }

    while (pos < len) {
      if (lfNext !== -1 && lfNext < pos) lfNext = chunk[pos] === LF ? pos : buf.indexOf(LF, pos);
      if (crNext !== -1 && crNext < pos) crNext = buf.indexOf(CR, pos);
      let e: number;
      if (crNext === -1) {
        if (lfNext === -1) break;
        e = lfNext;
      } else {
        e = lfNext !== -1 && lfNext < crNext ? lfNext : crNext;
      }
      this.line(buf, pos, e, atMs);
      pos = this.afterTerminator(chunk, e, len);
    }

    if (pos < len) this.append(chunk, pos, len);
  }

  /**
   * Ends the stream. Per spec an event without its blank line is discarded, so nothing is
   * dispatched here; the report says what was left so the caller can classify a truncation.
   * The decoder is reset and may be reused for a new stream.
   */
  end(): SseEndReport {
    const pendingBytes = this.carryLen + (this.bomMatched > 0 ? this.bomMatched : 0);
    // An unfinished non-comment line is an unfinished field line; a held-back BOM prefix is not.
    const partialField = this.carryLen > 0 && this.carry[0] !== COLON;
    const report: SseEndReport = { pendingBytes, pendingEvent: this.inBlock || partialField };
    this.carryLen = 0;
    this.bomMatched = 0;
    this.skipLF = false;
    this.dispatchedOnCR = false;
    this.lineDispatched = false;
    this.data = '';
    this.hasData = false;
    this.eventType = '';
    this.lastEventId = '';
    this.retry = null;
    this.inBlock = false;
    return report;
  }

  // ---- internals -------------------------------------------------------------------------

  /** Where line parsing starts in `chunk`, or -1 when the chunk held nothing but BOM bytes. */
  private matchBom(chunk: Uint8Array): number {
    let i = 0;
    let m = this.bomMatched;
    while (i < chunk.length && m < 3) {
      const want = m === 0 ? BOM0 : m === 1 ? BOM1 : BOM2;
      if (chunk[i] !== want) {
        // Not a BOM after all: the bytes we held back are the start of the first line.
        this.bomMatched = -1;
        if (m > 0) this.append(m > 1 ? HELD_BOM2 : HELD_BOM1, 0, m);
        return i;
      }
      m++;
      i++;
    }
    if (m === 3) {
      this.bomMatched = -1;
      return i < chunk.length ? i : -1;
    }
    this.bomMatched = m;
    return -1;
  }

  private afterTerminator(chunk: Uint8Array, e: number, len: number): number {
    if (chunk[e] !== CR) return e + 1;
    if (e + 1 < len) return chunk[e + 1] === LF ? e + 2 : e + 1;
    // CR is a complete line end on its own; remember to swallow a LF that may start the next read.
    this.skipLF = true;
    this.dispatchedOnCR = this.lineDispatched;
    return e + 1;
  }

  private append(src: Uint8Array, from: number, to: number): void {
    const n = to - from;
    const need = this.carryLen + n;
    if (need > this.carry.length) {
      let cap = Math.max(1024, this.carry.length * 2);
      while (cap < need) cap *= 2;
      const next = Buffer.allocUnsafe(cap);
      next.set(this.carry.subarray(0, this.carryLen));
      this.carry = next;
    }
    this.carry.set(src.subarray(from, to), this.carryLen);
    this.carryLen = need;
  }

  /** Interprets one complete line `buf[start, end)` (terminator excluded). */
  private line(buf: Buffer, start: number, end: number, atMs: number): void {
    this.lineDispatched = false;
    if (start === end) {
      this.dispatch(atMs);
      return;
    }
    const c0 = buf[start];
    if (c0 === COLON) {
      if (this.handlers.onComment !== undefined) {
        let vs = start + 1;
        if (vs < end && buf[vs] === SPACE) vs++;
        this.handlers.onComment(this.decoder.decode(buf.subarray(vs, end)), atMs);
      }
      return;
    }
    this.inBlock = true;

    // Common case first: `data:`. Byte comparison of field names is exact because ':' is ASCII and
    // can never be part of (or swallowed by) a multi-byte or invalid UTF-8 sequence.
    if (
      c0 === 0x64 &&
      end - start >= 5 &&
      buf[start + 1] === 0x61 &&
      buf[start + 2] === 0x74 &&
      buf[start + 3] === 0x61 &&
      buf[start + 4] === COLON
    ) {
      this.appendData(buf, start + 5, end);
      return;
    }

    let colon = start;
    while (colon < end && buf[colon] !== COLON) colon++;
    let vs = colon + 1;
    if (vs < end && buf[vs] === SPACE) vs++;
    if (vs > end) vs = end; // no colon: the whole line is the field name, value ""
    const nameLen = colon - start;

    switch (nameLen) {
      case 4:
        if (c0 === 0x64 && buf[start + 1] === 0x61 && buf[start + 2] === 0x74 && buf[start + 3] === 0x61) {
          this.appendData(buf, end, end); // `data` without a colon: an empty data line
        }
        return;
      case 5:
        if (
          c0 === 0x65 &&
          buf[start + 1] === 0x76 &&
          buf[start + 2] === 0x65 &&
          buf[start + 3] === 0x6e &&
          buf[start + 4] === 0x74
        ) {
          this.eventType = vs === end ? '' : this.decoder.decode(buf.subarray(vs, end));
        } else if (
          c0 === 0x72 &&
          buf[start + 1] === 0x65 &&
          buf[start + 2] === 0x74 &&
          buf[start + 3] === 0x72 &&
          buf[start + 4] === 0x79
        ) {
          this.setRetry(buf, vs, end);
        } else if (
          c0 === 0x65 &&
          buf[start + 1] === 0x72 &&
          buf[start + 2] === 0x72 &&
          buf[start + 3] === 0x6f &&
          buf[start + 4] === 0x72
        ) {
          this.handlers.onErrorField?.(this.decoder.decode(buf.subarray(vs, end)), atMs);
        }
        return;
      case 2:
        if (c0 === 0x69 && buf[start + 1] === 0x64) {
          for (let i = vs; i < end; i++) if (buf[i] === 0) return; // spec: ignore ids containing NUL
          this.lastEventId = vs === end ? '' : this.decoder.decode(buf.subarray(vs, end));
        }
        return;
      default:
        return; // unknown field: ignored
    }
  }

  /** `valueStart` points just past the colon; one optional space is dropped here. */
  private appendData(buf: Buffer, valueStart: number, end: number): void {
    let vs = valueStart;
    if (vs < end && buf[vs] === SPACE) vs++;
    // Buffer's UTF-8 decoding (U+FFFD for invalid bytes, as TextDecoder), without a view per line.
    const v = vs === end ? '' : buf.toString('utf8', vs, end);
    if (this.hasData) this.data = this.data + '\n' + v;
    else {
      this.data = v;
      this.hasData = true;
    }
  }

  private setRetry(buf: Uint8Array, vs: number, end: number): void {
    if (vs === end) return;
    let n = 0;
    for (let i = vs; i < end; i++) {
      const b = buf[i]!;
      if (b < 0x30 || b > 0x39) return;
      n = n * 10 + (b - 0x30);
    }
    this.retry = n;
  }

  private dispatch(atMs: number): void {
    this.inBlock = false;
    if (!this.hasData) {
      this.eventType = '';
      return;
    }
    const ev: SseEvent = {
      data: this.data,
      event: this.eventType === '' ? 'message' : this.eventType,
      id: this.lastEventId,
      atMs,
    };
    this.data = '';
    this.hasData = false;
    this.eventType = '';
    this.lineDispatched = true;
    this.handlers.onEvent(ev);
  }
}
