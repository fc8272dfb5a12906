/**
 * Where the named cuts of DESIGN §8 fall inside one event's bytes. Each place is where a real
 * reader bug lives: `data: ` split (prefix matching per read), `[DONE]` split (terminator
 * matching per read), CR|LF split (CRLF-only splitters), a UTF-8 character split (per-read
 * decoding), the usage object split (per-read JSON parsing), the blank line held back
 * (stamping an event at the read where it started), and the generated text's start, so the
 * next read begins with the token's leading space (`strip()` per read eats it). A place the
 * event lacks gives no cut.
 */
import type { TruthEvent } from '../../contracts/truth.ts';
import type { CutPlace } from './wire-policy.ts';

const CR = 0x0d;
const LF = 0x0a;

/** First `needle` inside body[from, to), searching only there (an unbounded search is quadratic over a response). */
function find(body: Buffer, needle: string, from: number, to: number): number {
  const at = body.subarray(from, to).indexOf(needle, 0, 'latin1');
  return at < 0 ? -1 : from + at;
}

/** Where the event's blank line starts: its last byte, or the CR before it when that line is a CRLF. */
function blankLineStart(body: Buffer, event: TruthEvent): number {
  const last = event.offset + event.length - 1;
  return body[last] === LF && last > event.offset && body[last - 1] === CR ? last - 1 : last;
}

/** Whether body position p begins a line of the event starting at `start` (after a stream's BOM too). */
function atLineStart(body: Buffer, start: number, p: number): boolean {
  if (p === start || body[p - 1] === LF || body[p - 1] === CR) return true;
  return p === start + 3 && body[start] === 0xef && body[start + 1] === 0xbb && body[start + 2] === 0xbf;
}

/** Absolute body positions p (event.offset < p < event end): a write boundary just before byte p. */
export function cutPositions(body: Buffer, event: TruthEvent, places: readonly CutPlace[]): number[] {
  const start = event.offset;
  const end = event.offset + event.length;
  const cuts: number[] = [];
  for (const place of places) {
    switch (place) {
      case 'data': {
        // The field's own prefix, at a line's start: not `data:` inside an `event:` line's name.
        let at = find(body, 'data:', start, end);
        while (at > start && !atLineStart(body, start, at)) at = find(body, 'data:', at + 1, end);
        if (at >= 0) cuts.push(body[at + 5] === 0x20 ? at + 5 : at + 3);
        break;
      }
      case 'done': {
        const at = find(body, '[DONE]', start, end);
        if (at >= 0) cuts.push(at + 3);
        break;
      }
      case 'crlf':
        for (let i = start; i + 1 < end; i++) if (body[i] === CR && body[i + 1] === LF) cuts.push(i + 1);
        break;
      case 'utf8':
        for (let i = start; i < end; i++) {
          if ((body[i] as number) >= 0xc0) {
            cuts.push(i + 1);
            break;
          }
        }
        break;
      case 'usage': {
        let at = find(body, '"usage":{', start, end);
        let open = at + 8;
        if (at < 0) {
          at = find(body, '"usage": {', start, end);
          open = at + 9;
        }
        if (at < 0) break;
        const close = find(body, '}', open, end);
        if (close > open + 1) cuts.push(open + Math.floor((close - open + 1) / 2));
        break;
      }
      case 'blank': {
        // Only an event that ends in a blank line has one (a JSON object or body does not).
        const at = blankLineStart(body, event);
        const before = body[at - 1];
        if ((body[at] === LF || body[at] === CR) && at > start && (before === LF || before === CR)) cuts.push(at);
        break;
      }
      case 'text': {
        for (const key of ['"text":"', '"content":"', '"text": "', '"content": "']) {
          const at = find(body, key, start, end);
          if (at >= 0) {
            cuts.push(at + key.length);
            break;
          }
        }
        break;
      }
    }
  }
  return cuts.filter((p) => p > start && p < end);
}
