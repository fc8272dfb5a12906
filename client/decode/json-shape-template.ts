/**
 * A JSON "shape template": one sample JSON text with every string value's content and every
 * number value's text cut out as a hole. Keys, punctuation, whitespace and the literals
 * true/false/null stay literal.
 *
 * Why: a streaming server sends thousands of payloads that are byte-for-byte the same apart from
 * their values (vLLM's SSE chunks). Checking that a new text is the template with valid values
 * in the holes is cheaper than JSON.parse, and — because every literal byte matches and every
 * hole holds a valid JSON string or number — it proves the text parses to the sample's structure
 * with those values. Anything the matcher is unsure about is a mismatch; the caller then falls
 * back to JSON.parse, so the template is only ever an exact shortcut.
 *
 * Two tricks keep the matcher well under JSON.parse's cost (measured: literal compares were most
 * of it). Each hole keeps its last raw text: ids, model names, `created` and prompt_tokens
 * repeat, and a repeat is one compare instead of a character scan. And holes never seen to change
 * ("cold": `object`, `model`, choice `index`, …) are fused with the literals around them into a
 * plan, so a typical chunk is a handful of long compares and the scans of the few live holes.
 */

/** The sample's structure, with decoded keys in source order, pointing at holes. */
export type ShapeNode =
  | { readonly kind: 'object'; readonly entries: ReadonlyMap<string, ShapeNode> }
  | { readonly kind: 'array'; readonly items: readonly ShapeNode[] }
  | { readonly kind: 'string'; readonly hole: number }
  | { readonly kind: 'number'; readonly hole: number }
  | { readonly kind: 'literal'; readonly value: null | boolean };

export interface JsonShapeTemplate {
  readonly root: ShapeNode;
  /** literals[i] comes before hole i; the last one follows the last hole (holes + 1 entries). */
  readonly literals: readonly string[];
  /** Per hole: true for a number hole, false for a string hole. */
  readonly numberHoles: readonly boolean[];
  /** Per hole: the first char code of the literal after it (a repeat of lastRaw must stop there). */
  readonly stopCodes: readonly number[];
  /** Per hole: the raw text seen last (always a valid hole content), and its value. */
  readonly lastRaw: string[];
  readonly lastValue: string[];
  /** Per hole: its value has changed at least once (it is scanned, not fused into the plan). */
  readonly live: boolean[];
  plan: FusedPlan;
}

/**
 * The template with its cold holes written in: parts[k] comes before live hole live[k]. Cold
 * holes take coldValues (fixed when the plan was made; lastValue may move on under a failed match).
 */
interface FusedPlan {
  readonly parts: readonly string[];
  /** Per part: whether it holds a cold hole (a mismatch there may just mean that hole changed). */
  readonly partHasCold: readonly boolean[];
  readonly live: readonly number[];
  readonly cold: readonly number[];
  readonly coldValues: readonly string[];
}

/** Values a match produced: decoded strings for string holes, the raw number text for number holes. */
export type HoleValues = string[];

/** Past this, a payload is not a streaming chunk worth a template (and the scanner stays shallow). */
const MAX_TEMPLATE_CHARS = 8192;
const MAX_DEPTH = 32;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const MINUS = 0x2d;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;

const isDigit = (c: number): boolean => c >= ZERO && c <= NINE;
const isWhitespace = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** Thrown while building a template to give up on it (never escapes to callers of the build). */
export class Refused extends Error {}

/**
 * Build-time scanner. It runs only on text JSON.parse has just accepted, but it still checks
 * what it relies on and refuses (throws Refused) anything unusual: duplicate keys (JSON.parse
 * keeps the last value but the first position), a non-object root, deep nesting, long text.
 */
class Scanner {
  readonly literals: string[] = [];
  readonly numberHoles: boolean[] = [];
  readonly raws: string[] = [];
  readonly values: string[] = [];
  #segmentStart = 0;
  pos = 0;

  constructor(readonly text: string) {}

  finish(): string[] {
    this.literals.push(this.text.slice(this.#segmentStart));
    return this.literals;
  }

  skipWhitespace(): void {
    while (isWhitespace(this.text.charCodeAt(this.pos))) this.pos++;
  }

  expect(code: number): void {
    if (this.text.charCodeAt(this.pos) !== code) throw new Refused();
    this.pos++;
  }

  /** Returns the raw content between the quotes; pos ends after the closing quote. */
  rawString(): string {
    this.expect(QUOTE);
    const start = this.pos;
    for (;;) {
      const c = this.text.charCodeAt(this.pos);
      if (Number.isNaN(c) || c < 0x20) throw new Refused();
      if (c === QUOTE) break;
      this.pos += c === BACKSLASH ? 2 : 1;
    }
    const raw = this.text.slice(start, this.pos);
    this.pos++;
    return raw;
  }

  hole(start: number, end: number, isNumber: boolean, value: string): number {
    this.literals.push(this.text.slice(this.#segmentStart, start));
    this.#segmentStart = end;
    this.numberHoles.push(isNumber);
    this.raws.push(this.text.slice(start, end));
    this.values.push(value);
    return this.numberHoles.length - 1;
  }

  value(depth: number): ShapeNode {
    if (depth > MAX_DEPTH) throw new Refused();
    this.skipWhitespace();
    const c = this.text.charCodeAt(this.pos);
    if (c === 0x7b) return this.object(depth);
    if (c === 0x5b) return this.array(depth);
    if (c === QUOTE) {
      const start = this.pos + 1;
      const raw = this.rawString();
      return { kind: 'string', hole: this.hole(start, this.pos - 1, false, decodeRaw(raw)) };
    }
    if (c === MINUS || isDigit(c)) {
      const start = this.pos;
      const end = scanNumber(this.text, start);
      if (end < 0) throw new Refused();
      this.pos = end;
      return { kind: 'number', hole: this.hole(start, end, true, this.text.slice(start, end)) };
    }
    for (const [word, value] of LITERALS) {
      if (this.text.startsWith(word, this.pos)) {
        this.pos += word.length;
        return { kind: 'literal', value };
      }
    }
    throw new Refused();
  }

  object(depth: number): ShapeNode {
    this.expect(0x7b);
    const entries = new Map<string, ShapeNode>();
    this.skipWhitespace();
    if (this.text.charCodeAt(this.pos) === 0x7d) {
      this.pos++;
      return { kind: 'object', entries };
    }
    for (;;) {
      this.skipWhitespace();
      const key = decodeRaw(this.rawString());
      if (entries.has(key)) throw new Refused();
      this.skipWhitespace();
      this.expect(0x3a);
      entries.set(key, this.value(depth + 1));
      this.skipWhitespace();
      const c = this.text.charCodeAt(this.pos++);
      if (c === 0x7d) return { kind: 'object', entries };
      if (c !== 0x2c) throw new Refused();
    }
  }

  array(depth: number): ShapeNode {
    this.expect(0x5b);
    const items: ShapeNode[] = [];
    this.skipWhitespace();
    if (this.text.charCodeAt(this.pos) === 0x5d) {
      this.pos++;
      return { kind: 'array', items };
    }
    for (;;) {
      items.push(this.value(depth + 1));
      this.skipWhitespace();
      const c = this.text.charCodeAt(this.pos++);
      if (c === 0x5d) return { kind: 'array', items };
      if (c !== 0x2c) throw new Refused();
    }
  }
}

const LITERALS: ReadonlyArray<readonly [string, null | boolean]> = [
  ['null', null],
  ['true', true],
  ['false', false],
];

/** A string's raw content → its value; only escapes need JSON.parse (which validates them). */
function decodeRaw(raw: string): string {
  if (!raw.includes('\\')) return raw;
  return JSON.parse(`"${raw}"`) as string;
}

/**
 * The end of the JSON number starting at `start`, or -1. Grammar:
 * -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)? — greedy, so "01" ends after "0" and the following
 * literal check rejects the "1".
 */
function scanNumber(s: string, start: number): number {
  let pos = start;
  if (s.charCodeAt(pos) === MINUS) pos++;
  let c = s.charCodeAt(pos);
  if (c === ZERO) {
    pos++;
  } else if (c > ZERO && c <= NINE) {
    pos++;
    while (isDigit(s.charCodeAt(pos))) pos++;
  } else {
    return -1;
  }
  if (s.charCodeAt(pos) === DOT) {
    pos++;
    if (!isDigit(s.charCodeAt(pos))) return -1;
    while (isDigit(s.charCodeAt(pos))) pos++;
  }
  c = s.charCodeAt(pos);
  if (c === 0x65 || c === 0x45) {
    pos++;
    c = s.charCodeAt(pos);
    if (c === 0x2b || c === MINUS) pos++;
    if (!isDigit(s.charCodeAt(pos))) return -1;
    while (isDigit(s.charCodeAt(pos))) pos++;
  }
  return pos;
}

/**
 * The template of `text`, or null when it is not a template-able JSON object (refusing is
 * always safe: the caller just keeps parsing). Call it only with text JSON.parse accepted.
 */
export function buildJsonShapeTemplate(text: string): JsonShapeTemplate | null {
  if (text.length > MAX_TEMPLATE_CHARS) return null;
  const scanner = new Scanner(text);
  let root: ShapeNode;
  try {
    scanner.skipWhitespace();
    if (text.charCodeAt(scanner.pos) !== 0x7b) return null;
    root = scanner.value(0);
    scanner.skipWhitespace();
    if (scanner.pos !== text.length) return null;
  } catch (error) {
    if (error instanceof Refused || error instanceof SyntaxError) return null;
    throw error;
  }
  const literals = scanner.finish();
  // Every hole is followed by a non-empty literal (a closing quote, or `,` `]` `}` / whitespace after a number).
  const stopCodes = literals.slice(1).map((literal) => literal.charCodeAt(0));
  if (stopCodes.some((code) => Number.isNaN(code))) return null;
  const template: JsonShapeTemplate = {
    root,
    literals,
    numberHoles: scanner.numberHoles,
    stopCodes,
    lastRaw: scanner.raws,
    lastValue: scanner.values,
    live: scanner.numberHoles.map(() => false),
    plan: { parts: [], partHasCold: [], live: [], cold: [], coldValues: [] },
  };
  template.plan = fusePlan(template);
  return template;
}

function fusePlan(template: JsonShapeTemplate): FusedPlan {
  const { literals, lastRaw, lastValue, live } = template;
  const parts: string[] = [];
  const partHasCold: boolean[] = [];
  const liveHoles: number[] = [];
  const cold: number[] = [];
  const coldValues: string[] = [];
  let part = literals[0] as string;
  let hasCold = false;
  for (let hole = 0; hole < live.length; hole++) {
    if (live[hole] === true) {
      parts.push(part);
      partHasCold.push(hasCold);
      liveHoles.push(hole);
      part = literals[hole + 1] as string;
      hasCold = false;
    } else {
      part += (lastRaw[hole] as string) + (literals[hole + 1] as string);
      hasCold = true;
      cold.push(hole);
      coldValues.push(lastValue[hole] as string);
    }
  }
  parts.push(part);
  partHasCold.push(hasCold);
  return { parts, partHasCold, live: liveHoles, cold, coldValues };
}

/**
 * Whether `text` is `template` with a valid value in every hole; if so the values are in `out`
 * (out[i] for hole i). On false, `out` holds garbage. Rejects — so the caller parses — raw
 * control characters in strings (JSON.parse throws on them), bad escapes, invalid numbers and
 * any literal byte that differs.
 */
export function matchJsonShape(template: JsonShapeTemplate, text: string, out: HoleValues): boolean {
  const plan = template.plan;
  const { parts, partHasCold, live } = plan;
  let pos = 0;
  let failedAt = -1;
  for (let k = 0; k < live.length; k++) {
    const part = parts[k] as string;
    if (!sameAt(text, pos, part)) {
      failedAt = k;
      break;
    }
    pos = scanHole(template, live[k] as number, text, pos + part.length, out);
    // The hole-by-hole match would scan this live hole at the same place and fail the same way.
    if (pos < 0) return false;
  }
  if (failedAt < 0) {
    const last = parts[live.length] as string;
    if (pos + last.length === text.length && sameAt(text, pos, last)) {
      const { cold, coldValues } = plan;
      for (let i = 0; i < cold.length; i++) out[cold[i] as number] = coldValues[i] as string;
      return true;
    }
    failedAt = live.length;
  }
  // Only a cold hole that changed value can make the hole-by-hole match succeed where the plan failed.
  if (partHasCold[failedAt] !== true) return false;
  if (!matchHoleByHole(template, text, out)) return false;
  template.plan = fusePlan(template);
  return true;
}

/** The match without the plan: every literal and every hole in turn (marks changed holes live). */
function matchHoleByHole(template: JsonShapeTemplate, text: string, out: HoleValues): boolean {
  const literals = template.literals;
  const holes = template.numberHoles.length;
  let pos = 0;
  for (let hole = 0; hole < holes; hole++) {
    const literal = literals[hole] as string;
    if (!sameAt(text, pos, literal)) return false;
    pos = scanHole(template, hole, text, pos + literal.length, out);
    if (pos < 0) return false;
  }
  const last = literals[holes] as string;
  return pos + last.length === text.length && sameAt(text, pos, last);
}

/** Reads hole `hole` starting at `pos` into out[hole]; returns where it ends, or -1 if invalid. */
function scanHole(template: JsonShapeTemplate, hole: number, text: string, pos: number, out: HoleValues): number {
  const previous = template.lastRaw[hole] as string;
  // A repeat of the last valid content, stopped where this hole must stop, is that same value.
  if (text.charCodeAt(pos + previous.length) === template.stopCodes[hole] && sameAt(text, pos, previous)) {
    out[hole] = template.lastValue[hole] as string;
    return pos + previous.length;
  }
  const start = pos;
  let raw: string;
  let value: string;
  if (template.numberHoles[hole] === true) {
    pos = scanNumber(text, pos);
    if (pos < 0) return -1;
    raw = value = text.slice(start, pos);
  } else {
    let escaped = false;
    for (;;) {
      const c = text.charCodeAt(pos);
      if (c === QUOTE) break;
      // NaN (past the end) fails this test too.
      if (!(c >= 0x20)) return -1;
      if (c === BACKSLASH) {
        escaped = true;
        pos += 2;
      } else {
        pos++;
      }
    }
    raw = text.slice(start, pos);
    try {
      value = escaped ? decodeRaw(raw) : raw;
    } catch {
      return -1;
    }
  }
  template.lastRaw[hole] = raw;
  template.lastValue[hole] = value;
  template.live[hole] = true;
  out[hole] = value;
  return pos;
}

/**
 * Whether `text` holds `part` at `pos`. Not startsWith: V8's startsWith compares char by char in
 * generic code (measured ~3x slower for 12 chars, ~5x for 120); a slice and `===` is a memcmp.
 */
function sameAt(text: string, pos: number, part: string): boolean {
  return text.slice(pos, pos + part.length) === part;
}
