/**
 * The truth record (DESIGN §3): what the server planned for one request and what really left
 * the process, byte range by byte range. Times are milliseconds relative to the request's
 * arrival at the server; `arrivalEpochMs` anchors them on the shared wall clock.
 */

export type Dialect = 'vllm' | 'jetstream';

export type EventKind = 'role' | 'content' | 'reasoning' | 'finish' | 'usage' | 'error' | 'done' | 'comment';

export interface PlannedToken {
  id: number;
  text: string;
  /** When the engine made this token available, relative to arrival. */
  dueMs: number;
}

export interface TruthEvent {
  kind: EventKind;
  /** Index of the first token this event carries (meaningful when tokenCount > 0). */
  tokenStart: number;
  tokenCount: number;
  /** Byte range of the event in the response body. */
  offset: number;
  length: number;
  /**
   * Body offset of the event's last byte (DESIGN §3: for SSE, the end of its blank line, the LF
   * of a CRLF included); its write's time is the truth time of every token the event carries.
   */
  completesAt: number;
  dueMs: number;
}

export interface TruthWrite {
  offset: number;
  length: number;
  dueMs: number;
  /** When the bytes were handed to the socket; null if the request ended before this write. */
  actualMs: number | null;
  /**
   * The event whose readiness releases this write (the one holding its last byte) and the wire
   * policy's delay after it (piece index × gap). With prev = the previous write's dueMs (the
   * first write: headersDueMs, else 0): afterMs = 0 → dueMs = max(prev, anchor's dueMs);
   * afterMs > 0 (a later piece of a cut event) → dueMs = max(prev + gap, anchor's dueMs +
   * afterMs), gap = afterMs − the previous write's afterMs if it anchors on the same event,
   * else afterMs. One implementation: server/wire/writes.ts `writeDueMs`. Lets an engine that
   * learns due times late recompute dueMs.
   */
  anchorEvent?: number;
  afterMs?: number;
}

/**
 * How a response ended: all of it sent, the client gone first, a planned fault, or the server
 * stopping (a shutdown whose grace for open streams ran out) before it was all sent.
 */
export type EndReason = 'completed' | 'client_aborted' | 'fault' | 'server_shutdown';

export interface TruthFault {
  kind: string;
  /** Free-form parameters of the fault (status, after-k tokens, stall ms …). */
  params: Record<string, number | string | boolean>;
}

export interface TruthRecord {
  id: string;
  dialect: Dialect;
  endpoint: string;
  model: string;
  stream: boolean;
  arrivalEpochMs: number;
  /** The planned status; `headersMs` null means it never left (see `end.how`). */
  status: number;
  /** When the status line and headers were handed to the socket. */
  headersMs: number | null;
  /** When the headers were planned to leave (a slow-headers fault delays them); absent = at once. */
  headersDueMs?: number;
  /** The wire policy the response was cut with, as a canonical `x-benchtruth-wire` spec string. */
  wire?: string;
  promptTokens: number;
  /**
   * The finish reason the planned response carries (null for a refusal). It is what the body says
   * if it all arrives, not what happened: a response cut short keeps it, and `end.how` (with the
   * stamped writes) says how far it got. `/metrics` counts such a request as `abort`
   * (README, `vllm:request_success_total`), so group truth records by `end.how` as well to match its counters.
   */
  finishReason: string | null;
  tokens: PlannedToken[];
  events: TruthEvent[];
  writes: TruthWrite[];
  fault: TruthFault | null;
  /** The whole planned response body; writes are ranges of it. */
  body: Uint8Array;
  end: { atMs: number; how: EndReason } | null;
}

/**
 * The JSON form served at /_truth/requests/:id and written to the truth log. Every actual time
 * also has its absolute stamp (`…EpochMs`, DESIGN §3), so a client record can be lined up with
 * it without adding `arrivalEpochMs` by hand.
 */
export interface TruthRecordJson extends Omit<TruthRecord, 'body' | 'events' | 'writes' | 'end'> {
  headersEpochMs: number | null;
  end: { atMs: number; atEpochMs: number; how: EndReason } | null;
  bodyBase64: string;
  events: Array<TruthEvent & { bytes: string }>;
  writes: Array<TruthWrite & { actualEpochMs: number | null; lateMs: number | null; base64: string }>;
}

export function truthToJson(record: TruthRecord): TruthRecordJson {
  const body = Buffer.from(record.body.buffer, record.body.byteOffset, record.body.byteLength);
  const { body: _body, events, writes, end, ...rest } = record;
  return {
    ...rest,
    headersEpochMs: record.headersMs === null ? null : record.arrivalEpochMs + record.headersMs,
    end: end === null ? null : { atMs: end.atMs, atEpochMs: record.arrivalEpochMs + end.atMs, how: end.how },
    bodyBase64: body.toString('base64'),
    events: events.map((e) => ({ ...e, bytes: body.toString('utf8', e.offset, e.offset + e.length) })),
    writes: writes.map((w) => ({
      ...w,
      actualEpochMs: w.actualMs === null ? null : record.arrivalEpochMs + w.actualMs,
      lateMs: w.actualMs === null ? null : w.actualMs - w.dueMs,
      base64: body.toString('base64', w.offset, w.offset + w.length),
    })),
  };
}

/** Keys truthToJson replaces or moves (the rest keep their order in the record). */
const REWRITTEN_KEYS: ReadonlySet<string> = new Set(['body', 'events', 'writes', 'end']);

/**
 * `JSON.stringify(truthToJson(record))` in pieces, for a writer that must not hold its thread
 * for a whole record: the long lists (tokens, events, writes) come `perPiece` items at a time,
 * the other fields together. For the records the server makes (plain data, no `toJSON`), the
 * pieces joined are that text exactly: the same keys in the same order.
 */
export function* truthJsonPieces(record: TruthRecord, perPiece = 256): Generator<string> {
  const body = Buffer.from(record.body.buffer, record.body.byteOffset, record.body.byteLength);
  let opened = false;
  const key = (name: string): string => {
    const lead = opened ? ',' : '{';
    opened = true;
    return `${lead}${JSON.stringify(name)}:`;
  };
  function* list<T>(name: string, items: readonly T[], itemJson: (item: T) => string): Generator<string> {
    let piece = `${key(name)}[`;
    for (let i = 0; i < items.length; i++) {
      piece += `${i === 0 ? '' : ','}${itemJson(items[i] as T)}`;
      if ((i + 1) % perPiece === 0) {
        yield piece;
        piece = '';
      }
    }
    yield `${piece}]`;
  }
  const fields = record as unknown as Record<string, unknown>;
  // The fields between the lists go out together: one piece, not one each.
  let scalars = '';
  for (const name of Object.keys(record)) {
    if (REWRITTEN_KEYS.has(name)) continue;
    const value = fields[name];
    if (name === 'tokens' && Array.isArray(value)) {
      if (scalars !== '') yield scalars;
      scalars = '';
      yield* list(name, value, (token) => JSON.stringify(token));
    }
    // What JSON.stringify leaves out of an object: undefined, functions, symbols.
    else if (value !== undefined && typeof value !== 'function' && typeof value !== 'symbol') scalars += `${key(name)}${JSON.stringify(value)}`;
  }
  const { arrivalEpochMs, end } = record;
  scalars += `${key('headersEpochMs')}${JSON.stringify(record.headersMs === null ? null : arrivalEpochMs + record.headersMs)}`;
  scalars += `${key('end')}${JSON.stringify(end === null ? null : { atMs: end.atMs, atEpochMs: arrivalEpochMs + end.atMs, how: end.how })}`;
  yield `${scalars}${key('bodyBase64')}${JSON.stringify(body.toString('base64'))}`;
  yield* list('events', record.events, (e) => JSON.stringify({ ...e, bytes: body.toString('utf8', e.offset, e.offset + e.length) }));
  yield* list('writes', record.writes, (w) =>
    JSON.stringify({
      ...w,
      actualEpochMs: w.actualMs === null ? null : arrivalEpochMs + w.actualMs,
      lateMs: w.actualMs === null ? null : w.actualMs - w.dueMs,
      base64: body.toString('base64', w.offset, w.offset + w.length),
    }),
  );
  yield '}';
}

export function truthFromJson(json: TruthRecordJson): TruthRecord {
  const { bodyBase64, events, writes, headersEpochMs: _h, end, ...rest } = json;
  return {
    ...rest,
    end: end === null ? null : { atMs: end.atMs, how: end.how },
    body: new Uint8Array(Buffer.from(bodyBase64, 'base64')),
    events: events.map(({ bytes: _bytes, ...e }) => e),
    writes: writes.map(({ actualEpochMs: _a, lateMs: _l, base64: _b, ...w }) => w),
  };
}

/** Index of the write that holds body byte `offset` (writes are contiguous and ordered). */
export function writeIndexHolding(writes: readonly TruthWrite[], offset: number): number {
  let lo = 0;
  let hi = writes.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const w = writes[mid] as TruthWrite;
    if (offset < w.offset) hi = mid - 1;
    else if (offset >= w.offset + w.length) lo = mid + 1;
    else return mid;
  }
  return -1;
}
