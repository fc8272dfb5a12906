/**
 * Framing turns payload events into the response body and the byte range of each event.
 * SSE (vLLM): `data: <payload>` lines and a blank line, with every variant a real server or
 * proxy produces (line ends, the optional space, BOM, comments, `event:`/`id:` lines, JSON over
 * several `data:` lines). Objects (JetStream): the payload bytes as they are.
 *
 * `completesAt` is the byte whose arrival makes the event exist for a WHATWG reader: the first
 * byte of the blank line's terminator (the CR of a CRLF: the reader dispatches on it, and the
 * LF may come in a later read). Objects complete on their last byte.
 */
import type { Rng } from '../../contracts/rng.ts';
import type { TruthEvent } from '../../contracts/truth.ts';
import { SplitPayload, type PayloadEvent } from './payload-event.ts';
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

/** One SSE event's text, and the length of its blank line's terminator (the text's last characters). */
function sseEventText(event: PayloadEvent, index: number, policy: Readonly<FramingPolicy>, lines: LineWriter): { text: string; blankLength: number } {
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
  const blank = lines.ending(true);
  return { text: text + blank, blankLength: blank.length };
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

function putAscii(body: Buffer, text: string, at: number): number {
  for (let i = 0; i < text.length; i++) body[at + i] = text.charCodeAt(i);
  return at + text.length;
}

export function frame(events: readonly PayloadEvent[], framing: Framing, policy: Readonly<FramingPolicy> = VLLM_WIRE_POLICY.framing, rng: Rng | null = null): FramedBody {
  // A piece is the event's whole text, or (plain events) just its payload (its middle when split).
  const pieces: string[] = new Array(events.length);
  const split: Array<SplitPayload | undefined> = new Array(events.length);
  const plain = new Uint8Array(events.length);
  const truth: TruthEvent[] = new Array(events.length);
  const lines = new LineWriter(policy, rng);
  const ending = framing === 'sse' ? plainEnding(policy) : null;
  const dataPrefix = policy.space ? 'data: ' : 'data:';
  const blankLine = ending === null ? '' : ending + ending;
  let offset = 0;
  let dataIndex = 0;
  for (let i = 0; i < events.length; i++) {
    const event = events[i] as PayloadEvent;
    let length: number;
    let blankLength = 1;
    if (ending !== null && event.kind !== 'comment' && !(i === 0 && policy.bom)) {
      dataIndex++;
      plain[i] = 1;
      if (event instanceof SplitPayload) {
        split[i] = event;
        pieces[i] = event.middle;
        length = dataPrefix.length + event.head.bytes.length + Buffer.byteLength(event.middle) + event.tail.bytes.length + blankLine.length;
      } else {
        pieces[i] = event.data;
        length = dataPrefix.length + Buffer.byteLength(event.data) + blankLine.length;
      }
      blankLength = ending.length;
    } else {
      let text: string;
      if (framing === 'sse') {
        const framed = sseEventText(event, dataIndex, policy, lines);
        if (event.kind !== 'comment') dataIndex++;
        text = i === 0 && policy.bom ? BOM + framed.text : framed.text;
        blankLength = framed.blankLength;
      } else {
        text = event.data;
      }
      pieces[i] = text;
      length = Buffer.byteLength(text);
    }
    // The blank line's terminator is ASCII and ends the event, so its first byte sits this far from the end.
    const completesAt = offset + length - blankLength;
    truth[i] = { kind: event.kind, tokenStart: event.tokenStart, tokenCount: event.tokenCount, offset, length, completesAt, dueMs: event.dueMs };
    offset += length;
  }
  // Each piece is encoded straight into the body: no joined copy of the whole text first.
  const body = Buffer.allocUnsafe(offset);
  let at = 0;
  for (let i = 0; i < pieces.length; i++) {
    if (plain[i] === 1) {
      at = putAscii(body, dataPrefix, at);
      const parts = split[i];
      if (parts === undefined) {
        at += body.write(pieces[i] as string, at);
      } else {
        body.set(parts.head.bytes, at);
        at += parts.head.bytes.length;
        at += body.write(pieces[i] as string, at);
        body.set(parts.tail.bytes, at);
        at += parts.tail.bytes.length;
      }
      at = putAscii(body, blankLine, at);
    } else {
      at += body.write(pieces[i] as string, at);
    }
  }
  return { body, events: truth };
}
