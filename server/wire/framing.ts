/**
 * Framing turns payload events into the response body and the byte range of each event.
 * SSE (vLLM): `data: <payload>` lines and a blank line, with every variant a real server or
 * proxy produces (line ends, the optional space, BOM, comments, `event:`/`id:` lines, JSON over
 * several `data:` lines). Objects (JetStream): the payload bytes as they are.
 *
 * `completesAt` is the event's last byte (DESIGN §3): an event does not exist for a reader until
 * its terminating blank line has arrived whole, the LF of a CRLF included. Objects complete on
 * their last byte too.
 */
import type { Rng } from '../../contracts/rng.ts';
import type { TruthEvent } from '../../contracts/truth.ts';
import { jsonStringBytes, SplitPayload, type PayloadEvent } from './payload-event.ts';
import { VLLM_WIRE_POLICY, type FramingPolicy } from './wire-policy.ts';

export interface FramedBody {
  body: Buffer;
  events: TruthEvent[];
}

export type Framing = 'sse' | 'objects';

const BOM = '\ufeff';
const ENDINGS = ['\n', '\r\n', '\r'] as const;

/** Splits JSON text after each comma outside strings; joined with '\n' it is the same JSON value. */
export function splitJsonLines(json: string): string[] {
  const lines: string[] = [];
  let inString = false;
  let start = 0;
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x2c) {
      lines.push(json.slice(start, i + 1));
      start = i + 1;
    }
  }
  lines.push(json.slice(start));
  return lines;
}

class LineWriter {
  #previousEndedInCr = false;
  constructor(
    private readonly policy: Readonly<FramingPolicy>,
    private readonly rng: Rng | null,
  ) {}

  ending(blank: boolean): string {
    let eol: string;
    switch (this.policy.eol) {
      case 'lf':
        eol = '\n';
        break;
      case 'crlf':
        eol = '\r\n';
        break;
      case 'cr':
        eol = '\r';
        break;
      default: {
        // After a CR, a blank line ended by a lone LF would read as that CR's pair, not a blank line.
        const choices = blank && this.#previousEndedInCr ? ENDINGS.slice(1) : ENDINGS;
        eol = this.rng === null ? '\n' : this.rng.pick(choices);
      }
    }
    this.#previousEndedInCr = eol === '\r';
    return eol;
  }
}

/** One SSE event's text, its blank line included. */
function sseEventText(event: PayloadEvent, index: number, policy: Readonly<FramingPolicy>, lines: LineWriter): string {
  // No closures here: this runs once per event of every response.
  let text = '';
  if (event.kind === 'comment') {
    text = (event.data === '' ? ':' : `: ${event.data}`) + lines.ending(false);
  } else {
    if (policy.eventName !== null) text += `event: ${policy.eventName}` + lines.ending(false);
    if (policy.ids) text += `id: ${index}` + lines.ending(false);
    const prefix = policy.space ? 'data: ' : 'data:';
    if (policy.multiline && event.data.startsWith('{')) {
      for (const piece of splitJsonLines(event.data)) text += prefix + piece + lines.ending(false);
    } else {
      text += prefix + event.data + lines.ending(false);
    }
  }
  return text + lines.ending(true);
}

/**
 * The line ending of a policy whose data events are all plain — `data: <payload>`, one line
 * ending, a blank line — or null when events need the general path (mixed endings, `event:` or
 * `id:` lines, multi-line JSON). Plain events are measured and encoded from the payload itself,
 * never from a concatenated copy: framing runs for every event of every response.
 */
function plainEnding(policy: Readonly<FramingPolicy>): string | null {
  if (policy.eol === 'mixed' || policy.eventName !== null || policy.ids || policy.multiline) return null;
  return policy.eol === 'lf' ? '\n' : policy.eol === 'crlf' ? '\r\n' : '\r';
}

/**
 * Framing writes every event into one scratch buffer, learning each event's byte length from the
 * write itself, then copies the whole body out once: measuring each payload first
 * (Buffer.byteLength) cost as much as encoding it. Framing is synchronous, so one scratch serves
 * every response; it grows for a large body and goes back to its usual size afterwards, so one
 * huge answer does not stay pinned in memory.
 */
const SCRATCH_BYTES = 64 * 1024;
const SCRATCH_KEPT_BYTES = 1024 * 1024;
let scratch = Buffer.allocUnsafeSlow(SCRATCH_BYTES);

/** Makes room for `more` bytes after `at`, keeping what is already written. */
function reserve(at: number, more: number): Buffer {
  if (at + more > scratch.length) {
    const grown = Buffer.allocUnsafeSlow(Math.max(scratch.length * 2, at + more));
    scratch.copy(grown, 0, 0, at);
    scratch = grown;
  }
  return scratch;
}

/** Strings this short are written by a JavaScript loop while they stay ASCII: a native encode call costs more. */
const SHORT_TEXT = 64;

/** Writes `text` as UTF-8 at `at` (room for 3 bytes per UTF-16 unit reserved); returns the end. */
function putText(buffer: Buffer, text: string, at: number): number {
  if (text.length <= SHORT_TEXT) {
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c >= 0x80) return at + buffer.write(i === 0 ? text : text.slice(i), at);
      buffer[at++] = c;
    }
    return at;
  }
  return at + buffer.write(text, at);
}

/** Byte runs this short are copied by a JavaScript loop: TypedArray#set costs more to call than they take to copy. */
const SHORT_BYTES = 16;

function putBytes(buffer: Buffer, bytes: Uint8Array, at: number): number {
  const length = bytes.length;
  if (length > SHORT_BYTES) {
    buffer.set(bytes, at);
    return at + length;
  }
  for (let i = 0; i < length; i++) buffer[at++] = bytes[i] as number;
  return at;
}

/** A choice index is a small whole number; its decimal digits need no string. */
const MAX_INDEX_DIGITS = 16;

function putIndex(buffer: Buffer, index: number, at: number): number {
  if (index < 10) {
    buffer[at] = 0x30 + index;
    return at + 1;
  }
  return putText(buffer, String(index), at);
}

export function frame(events: readonly PayloadEvent[], framing: Framing, policy: Readonly<FramingPolicy> = VLLM_WIRE_POLICY.framing, rng: Rng | null = null): FramedBody {
  const truth: TruthEvent[] = new Array(events.length);
  const lines = new LineWriter(policy, rng);
  const ending = framing === 'sse' ? plainEnding(policy) : null;
  const dataPrefix = policy.space ? 'data: ' : 'data:';
  const blankLine = ending === null ? '' : ending + ending;
  let offset = 0;
  let dataIndex = 0;
  for (let i = 0; i < events.length; i++) {
    const event = events[i] as PayloadEvent;
    let at = offset;
    if (ending !== null && event.kind !== 'comment' && !(i === 0 && policy.bom)) {
      dataIndex++;
      if (event instanceof SplitPayload) {
        const lead = event.head.prefixedBytes(dataPrefix);
        const text = jsonStringBytes(event.text);
        const buffer = reserve(at, lead.length + MAX_INDEX_DIGITS + event.key.bytes.length + text.length + event.tail.bytes.length + blankLine.length);
        at = putBytes(buffer, lead, at);
        at = putIndex(buffer, event.choiceIndex, at);
        at = putBytes(buffer, event.key.bytes, at);
        at = putBytes(buffer, text, at);
        at = putBytes(buffer, event.tail.bytes, at);
        at = putText(buffer, blankLine, at);
      } else {
        const buffer = reserve(at, dataPrefix.length + 3 * event.data.length + blankLine.length);
        at = putText(buffer, dataPrefix, at);
        at = putText(buffer, event.data, at);
        at = putText(buffer, blankLine, at);
      }
    } else {
      let text: string;
      if (framing === 'sse') {
        const framed = sseEventText(event, dataIndex, policy, lines);
        if (event.kind !== 'comment') dataIndex++;
        text = i === 0 && policy.bom ? BOM + framed : framed;
      } else {
        text = event.data;
      }
      at = putText(reserve(at, 3 * text.length), text, at);
    }
    const length = at - offset;
    truth[i] = { kind: event.kind, tokenStart: event.tokenStart, tokenCount: event.tokenCount, offset, length, completesAt: at - 1, dueMs: event.dueMs };
    offset = at;
  }
  const body = Buffer.allocUnsafe(offset);
  scratch.copy(body, 0, 0, offset);
  if (scratch.length > SCRATCH_KEPT_BYTES) scratch = Buffer.allocUnsafeSlow(SCRATCH_BYTES);
  return { body, events: truth };
}
