/**
 * Deferred timing for the batching scheduler. A request is planned with placeholder due times
 * (token i at (i + 1) × NOMINAL_TOKEN_SPACING_MS), which fixes every event and write relative
 * to the token it waits for: due = anchor token's due + offset. `deferTiming` records those
 * anchors and marks every due unknown (Infinity); `tokenAvailable` fills them in as the engine
 * produces tokens, so the executor plays each write at its anchor's real time + its offset.
 */
import type { TruthRecord } from '../../contracts/truth.ts';
import { NOMINAL_TOKEN_SPACING_MS } from './plan.ts';

export interface DeferredTiming {
  /** Per write: the token index it waits for (−1 = arrival) and the offset after it. */
  writeAnchor: Int32Array;
  writeOffset: Float64Array;
  eventAnchor: Int32Array;
  eventOffset: Float64Array;
  nextWrite: number;
  nextEvent: number;
}

function anchorOf(nominalDueMs: number): { anchor: number; offset: number } {
  const anchor = Math.floor(nominalDueMs / NOMINAL_TOKEN_SPACING_MS) - 1;
  return { anchor, offset: nominalDueMs - (anchor + 1) * NOMINAL_TOKEN_SPACING_MS };
}

export function deferTiming(record: TruthRecord): DeferredTiming {
  const { writes, events, tokens } = record;
  const timing: DeferredTiming = {
    writeAnchor: new Int32Array(writes.length),
    writeOffset: new Float64Array(writes.length),
    eventAnchor: new Int32Array(events.length),
    eventOffset: new Float64Array(events.length),
    nextWrite: 0,
    nextEvent: 0,
  };
  writes.forEach((w, i) => {
    const { anchor, offset } = anchorOf(w.dueMs);
    timing.writeAnchor[i] = anchor;
    timing.writeOffset[i] = offset;
    w.dueMs = Infinity;
  });
  events.forEach((e, i) => {
    const { anchor, offset } = anchorOf(e.dueMs);
    timing.eventAnchor[i] = anchor;
    timing.eventOffset[i] = offset;
    e.dueMs = Infinity;
  });
  for (const token of tokens) token.dueMs = Infinity;
  // A planned disconnect is read by the player once, before any token exists: keep only its
  // offset after its anchor token, so the drop follows the last planned write promptly.
  const at = record.fault?.params.atMs;
  if (record.fault !== null && typeof at === 'number' && at >= NOMINAL_TOKEN_SPACING_MS) {
    const { anchor, offset } = anchorOf(at);
    record.fault.params.atMs = offset;
    record.fault.params.anchorToken = anchor;
  }
  resolve(record, timing, -1);
  return timing;
}

/**
 * Token `index` (and every one before it) exists `atMs` after arrival. Returns the earliest due
 * among the writes this resolved (Infinity when none), for waking the player.
 */
export function tokenAvailable(record: TruthRecord, timing: DeferredTiming, index: number, atMs: number): number {
  const token = record.tokens[index];
  if (token !== undefined) token.dueMs = atMs;
  return resolve(record, timing, index);
}

function anchorDue(record: TruthRecord, anchor: number): number {
  return anchor < 0 ? 0 : (record.tokens[anchor]?.dueMs ?? Infinity);
}

function resolve(record: TruthRecord, timing: DeferredTiming, upTo: number): number {
  const { writes, events } = record;
  while (timing.nextEvent < events.length && (timing.eventAnchor[timing.nextEvent] as number) <= upTo) {
    const i = timing.nextEvent++;
    (events[i] as (typeof events)[number]).dueMs = anchorDue(record, timing.eventAnchor[i] as number) + (timing.eventOffset[i] as number);
  }
  let earliest = Infinity;
  while (timing.nextWrite < writes.length && (timing.writeAnchor[timing.nextWrite] as number) <= upTo) {
    const i = timing.nextWrite++;
    const due = anchorDue(record, timing.writeAnchor[i] as number) + (timing.writeOffset[i] as number);
    (writes[i] as (typeof writes)[number]).dueMs = due;
    if (due < earliest) earliest = due;
  }
  return earliest;
}
