/**
 * A finished truth record packed for keeping. A planned record is three objects per token (the
 * token, its event, its write); a store of recent requests full of them is an old generation of
 * millions of small objects that every major collection must mark — at 2,000 streams it cost
 * the server more than its writes. Packed, a record is a handful of objects: its scalar fields,
 * one Float64Array of every per-token, per-event and per-write number, the event kinds as bytes
 * and the token texts as one string. Unpacking gives back an equal record, keys in their order.
 */
import type { EventKind, PlannedToken, TruthEvent, TruthRecord, TruthWrite } from '../../contracts/truth.ts';

const EVENT_KINDS: readonly EventKind[] = ['role', 'content', 'reasoning', 'finish', 'usage', 'error', 'done', 'comment'];
const KIND_CODES = new Map<EventKind, number>(EVENT_KINDS.map((kind, code) => [kind, code]));

/** id, dueMs, text length (UTF-16 units). */
const TOKEN_FIELDS = 3;
/** tokenStart, tokenCount, offset, length, completesAt, dueMs. */
const EVENT_FIELDS = 6;
/** offset, length, dueMs, actualMs (NaN = null), anchorEvent and afterMs (NaN = absent). */
const WRITE_FIELDS = 6;

type Scalars = Omit<TruthRecord, 'tokens' | 'events' | 'writes'>;

export interface CompactTruth {
  readonly id: string;
  readonly scalars: Scalars;
  /** The record's own key order (shared by every record of the same shape). */
  readonly keys: readonly string[];
  readonly tokenCount: number;
  readonly eventCount: number;
  readonly writeCount: number;
  readonly numbers: Float64Array;
  readonly kinds: Uint8Array;
  readonly texts: string;
}

const keyOrders = new Map<string, readonly string[]>();

function sharedKeys(record: TruthRecord): readonly string[] {
  const keys = Object.keys(record);
  const signature = keys.join(',');
  const known = keyOrders.get(signature);
  if (known !== undefined) return known;
  keyOrders.set(signature, keys);
  return keys;
}

/** Bytes a packed record keeps alive, roughly (the budget of the truth store). */
export function compactBytes(compact: CompactTruth): number {
  return compact.numbers.byteLength + compact.kinds.byteLength + compact.texts.length * 2 + compact.scalars.body.byteLength + 512;
}

export function compactTruth(record: TruthRecord): CompactTruth {
  const { tokens, events, writes, ...scalars } = record;
  const numbers = new Float64Array(tokens.length * TOKEN_FIELDS + events.length * EVENT_FIELDS + writes.length * WRITE_FIELDS);
  const texts: string[] = new Array<string>(tokens.length);
  let at = 0;
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] as PlannedToken;
    numbers[at++] = token.id;
    numbers[at++] = token.dueMs;
    numbers[at++] = token.text.length;
    texts[i] = token.text;
  }
  const kinds = new Uint8Array(events.length);
  for (let i = 0; i < events.length; i++) {
    const event = events[i] as TruthEvent;
    kinds[i] = KIND_CODES.get(event.kind) ?? 0;
    numbers[at++] = event.tokenStart;
    numbers[at++] = event.tokenCount;
    numbers[at++] = event.offset;
    numbers[at++] = event.length;
    numbers[at++] = event.completesAt;
    numbers[at++] = event.dueMs;
  }
  for (const write of writes) {
    numbers[at++] = write.offset;
    numbers[at++] = write.length;
    numbers[at++] = write.dueMs;
    numbers[at++] = write.actualMs ?? NaN;
    numbers[at++] = write.anchorEvent ?? NaN;
    numbers[at++] = write.afterMs ?? NaN;
  }
  return {
    id: record.id,
    scalars,
    keys: sharedKeys(record),
    tokenCount: tokens.length,
    eventCount: events.length,
    writeCount: writes.length,
    numbers,
    kinds,
    texts: texts.join(''),
  };
}

export function expandTruth(compact: CompactTruth): TruthRecord {
  const { numbers, texts } = compact;
  let at = 0;
  let textAt = 0;
  const tokens: PlannedToken[] = new Array<PlannedToken>(compact.tokenCount);
  for (let i = 0; i < compact.tokenCount; i++) {
    const id = numbers[at++] as number;
    const dueMs = numbers[at++] as number;
    const length = numbers[at++] as number;
    tokens[i] = { id, text: texts.slice(textAt, textAt + length), dueMs };
    textAt += length;
  }
  const events: TruthEvent[] = new Array<TruthEvent>(compact.eventCount);
  for (let i = 0; i < compact.eventCount; i++) {
    events[i] = {
      kind: EVENT_KINDS[compact.kinds[i] as number] as EventKind,
      tokenStart: numbers[at++] as number,
      tokenCount: numbers[at++] as number,
      offset: numbers[at++] as number,
      length: numbers[at++] as number,
      completesAt: numbers[at++] as number,
      dueMs: numbers[at++] as number,
    };
  }
  const writes: TruthWrite[] = new Array<TruthWrite>(compact.writeCount);
  for (let i = 0; i < compact.writeCount; i++) {
    const offset = numbers[at++] as number;
    const length = numbers[at++] as number;
    const dueMs = numbers[at++] as number;
    const actualMs = numbers[at++] as number;
    const anchorEvent = numbers[at++] as number;
    const afterMs = numbers[at++] as number;
    const write: TruthWrite = { offset, length, dueMs, actualMs: Number.isNaN(actualMs) ? null : actualMs };
    if (!Number.isNaN(anchorEvent)) write.anchorEvent = anchorEvent;
    if (!Number.isNaN(afterMs)) write.afterMs = afterMs;
    writes[i] = write;
  }
  const lists: Record<string, unknown> = { tokens, events, writes };
  const scalars = compact.scalars as unknown as Record<string, unknown>;
  const record: Record<string, unknown> = {};
  for (const key of compact.keys) record[key] = key in lists ? lists[key] : scalars[key];
  return record as unknown as TruthRecord;
}
