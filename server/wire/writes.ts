/**
 * Cutting a framed body into socket writes. vLLM's own behaviour is one event per write; a
 * policy can group events, cut each into pieces at random or named places, or send one byte
 * per write. Every write records the event that releases it (`anchorEvent`, the event holding
 * its last byte) and its delay after that event (`afterMs`, the piece index × the gap), so its
 * due time is derivable from the write ahead of it by `writeDueMs` — the one due formula,
 * shared by planning and by the batching engine, which learns event due times late:
 * - a whole write or the first piece of an event (afterMs = 0): max(previous due, anchor's due);
 * - a later piece (afterMs > 0): max(previous due + the gap, anchor's due + afterMs), so the
 *   reader sees separate reads even when the event itself is late (DESIGN §8).
 * The first write's "previous due" is the headers' due.
 */
import type { Rng } from '../../contracts/rng.ts';
import type { TruthEvent, TruthWrite } from '../../contracts/truth.ts';
import { cutPositions } from './cut-places.ts';
import { gapMsOf, VLLM_WIRE_POLICY, type WritePolicy } from './wire-policy.ts';

/**
 * The gap a later piece of a cut (afterMs > 0) keeps after the write ahead of it: its afterMs
 * less the previous piece's of the same event (afterMs is piece × gap), or all of its afterMs
 * when it continues a cut that began in an earlier event; 0 for a whole write or a first piece.
 * The executor keeps it after the previous write's actual send too, so a late stream's pieces
 * still reach the reader as separate reads.
 */
export function pieceGapMs(write: Readonly<TruthWrite>, previous: Readonly<TruthWrite> | undefined): number {
  const afterMs = write.afterMs ?? 0;
  if (!(afterMs > 0)) return 0;
  return previous !== undefined && previous.anchorEvent === write.anchorEvent ? afterMs - (previous.afterMs ?? 0) : afterMs;
}

/**
 * The due time of `write` (see the header): `previous` is the write ahead of it (undefined for
 * the first), `previousDueMs` that write's due (the headers' due for the first).
 */
export function writeDueMs(write: Readonly<TruthWrite>, previous: Readonly<TruthWrite> | undefined, previousDueMs: number, anchorDueMs: number): number {
  const afterMs = write.afterMs ?? 0;
  if (!(afterMs > 0)) return Math.max(previousDueMs, anchorDueMs);
  return Math.max(previousDueMs + pieceGapMs(write, previous), anchorDueMs + afterMs);
}

export function oneWritePerEvent(events: readonly TruthEvent[]): TruthWrite[] {
  return events.map((e, i) => ({ offset: e.offset, length: e.length, dueMs: e.dueMs, actualMs: null, anchorEvent: i, afterMs: 0 }));
}

/** `count` distinct random positions strictly inside (start, end), or all of them if fewer exist. */
function randomCuts(rng: Rng, start: number, end: number, count: number): number[] {
  const inside = end - start - 1;
  if (inside <= 0 || count <= 0) return [];
  if (count >= inside) return Array.from({ length: inside }, (_, i) => start + 1 + i);
  const picked = new Set<number>();
  while (picked.size < count) picked.add(rng.int(start + 1, end - 1));
  return [...picked];
}

/** A comment (a keep-alive) goes in a write of its own: never grouped with events, never cut. */
const isComment = (event: TruthEvent): boolean => event.kind === 'comment';

/** Write boundaries (positions p: a write ends before byte p), sorted, without 0 and the end. */
function boundaries(body: Buffer, events: readonly TruthEvent[], policy: Readonly<WritePolicy>, rng: Rng): number[] {
  const total = body.length;
  if (policy.bytes) return Array.from({ length: Math.max(0, total - 1) }, (_, i) => i + 1);
  const set = new Set<number>();
  let grouped = 0;
  events.forEach((event) => {
    const end = event.offset + event.length;
    if (isComment(event)) {
      set.add(event.offset);
      set.add(end);
      grouped = 0;
      return;
    }
    if (++grouped % policy.eventsPerWrite === 0 && end < total) set.add(end);
    for (const p of cutPositions(body, event, policy.places)) set.add(p);
    for (const p of randomCuts(rng, event.offset, end, policy.randomCuts)) set.add(p);
  });
  return [...set].filter((p) => p > 0 && p < total).sort((a, b) => a - b);
}

/**
 * The common case (no cuts): each write is N whole events, released by its last one; a comment
 * ends the group before it and goes alone.
 */
function groupedWrites(events: readonly TruthEvent[], perWrite: number, headersDueMs: number): TruthWrite[] {
  const writes: TruthWrite[] = [];
  let previousDue = headersDueMs;
  const push = (first: number, end: number): void => {
    let last = end;
    // Empty events (an object stream's empty payload) hold no byte to anchor on.
    while (last > first && (events[last] as TruthEvent).length === 0) last--;
    const start = events[first] as TruthEvent;
    const final = events[end] as TruthEvent;
    const length = final.offset + final.length - start.offset;
    if (length === 0) return;
    const write: TruthWrite = { offset: start.offset, length, dueMs: 0, actualMs: null, anchorEvent: last, afterMs: 0 };
    write.dueMs = writeDueMs(write, writes[writes.length - 1], previousDue, (events[last] as TruthEvent).dueMs);
    writes.push(write);
    previousDue = write.dueMs;
  };
  let first = -1;
  for (let i = 0; i < events.length; i++) {
    if (isComment(events[i] as TruthEvent)) {
      if (first >= 0) push(first, i - 1);
      push(i, i);
      first = -1;
      continue;
    }
    if (first < 0) first = i;
    if (i - first + 1 === perWrite) {
      push(first, i);
      first = -1;
    }
  }
  if (first >= 0) push(first, events.length - 1);
  return writes;
}

export function planWrites(
  body: Buffer,
  events: readonly TruthEvent[],
  policy: Readonly<WritePolicy> = VLLM_WIRE_POLICY.writes,
  rng: Rng | null = null,
  headersDueMs = 0,
): TruthWrite[] {
  if (body.length === 0) return [];
  if (!policy.bytes && policy.randomCuts === 0 && policy.places.length === 0) return groupedWrites(events, policy.eventsPerWrite, headersDueMs);
  const needsRng = policy.randomCuts > 0;
  if (needsRng && rng === null) throw new Error('planWrites: random cuts need a random stream');
  const cuts = boundaries(body, events, policy, rng as Rng);
  const gap = gapMsOf(policy);
  const writes: TruthWrite[] = [];
  let anchor = 0;
  let piece = 0;
  let previousDue = headersDueMs;
  let from = 0;
  for (const to of [...cuts, body.length]) {
    const last = to - 1;
    let moved = false;
    while (anchor < events.length - 1 && last >= (events[anchor] as TruthEvent).offset + (events[anchor] as TruthEvent).length) {
      anchor++;
      moved = true;
    }
    // A write that starts inside an earlier event (events grouped and cut) still continues a
    // cut: it is a later piece (1) of its anchor, so it keeps the gap too.
    if (moved) piece = piece > 0 ? 1 : 0;
    const event = events[anchor] as TruthEvent;
    const write: TruthWrite = { offset: from, length: to - from, dueMs: 0, actualMs: null, anchorEvent: anchor, afterMs: piece * gap };
    write.dueMs = writeDueMs(write, writes[writes.length - 1], previousDue, event.dueMs);
    writes.push(write);
    previousDue = write.dueMs;
    from = to;
    piece = to < event.offset + event.length ? piece + 1 : 0;
  }
  return writes;
}
