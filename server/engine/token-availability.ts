/**
 * Deferred timing for the batching scheduler. A request is planned with placeholder due times
 * (token i at (i + 1) × NOMINAL_TOKEN_SPACING_MS), which fixes every event and write relative
 * to the token it waits for: due = anchor token's due + offset. `deferTiming` records those
 * anchors and marks every due unknown (Infinity); `tokenAvailable` fills them in as the engine
 * produces tokens: events at their anchor token's real time + offset, and writes by the
 * planner's own due formula (writes.ts `writeDueMs`) on those real event times, so a cut
 * event's pieces keep their gap. A planned disconnect resolves the same way.
 */
import type { TruthRecord } from '../../contracts/truth.ts';
import { writeDueMs } from '../wire/writes.ts';
import { NOMINAL_TOKEN_SPACING_MS } from './plan.ts';

export interface DeferredTiming {
  /** Per write: the token index it waits for (−1 = arrival) and the offset after it. */
  writeAnchor: Int32Array;
  writeOffset: Float64Array;
  eventAnchor: Int32Array;
  eventOffset: Float64Array;
  nextWrite: number;
  nextEvent: number;
  /** A planned disconnect's anchor token (−1 = none or resolved) and its offset after it. */
  disconnectAnchor: number;
  disconnectOffset: number;
  /**
   * Engine steps the request needs: tokens per choice (the longest choice). Anchors count
   * steps, not places in `record.tokens`: with n > 1 or several prompts every choice's token k
   * comes from step k, and the merged token list interleaves the choices.
   */
  steps: number;
  /** Real time of each step's tokens (Infinity until produced). */
  stepDueMs: Float64Array;
  /** Indices into `record.tokens` in step order, and how many of them have their time. */
  tokensByStep: Int32Array;
  tokenStep: Int32Array;
  nextToken: number;
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
    disconnectAnchor: -1,
    disconnectOffset: 0,
    steps: 0,
    stepDueMs: new Float64Array(0),
    tokensByStep: new Int32Array(0),
    tokenStep: new Int32Array(tokens.length),
    nextToken: 0,
  };
  tokens.forEach((t, i) => {
    const step = anchorOf(t.dueMs).anchor;
    timing.tokenStep[i] = step;
    if (step + 1 > timing.steps) timing.steps = step + 1;
  });
  // A step after the last token that makes none (JetStream's EOS step) is a step all the same:
  // an event anchored on it waits for the engine to run it.
  for (const e of events) timing.steps = Math.max(timing.steps, anchorOf(e.dueMs).anchor + 1);
  timing.stepDueMs = new Float64Array(timing.steps).fill(Infinity);
  timing.tokensByStep = Int32Array.from(tokens.keys()).sort((a, b) => (timing.tokenStep[a] as number) - (timing.tokenStep[b] as number) || a - b);
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
  // A planned disconnect waits, like the writes, for its anchor token's real time: until then
  // its time is unknown (Infinity), which the player reads as "not yet".
  const at = record.fault?.params.atMs;
  if (record.fault !== null && typeof at === 'number' && at >= NOMINAL_TOKEN_SPACING_MS) {
    const { anchor, offset } = anchorOf(at);
    record.fault.params.atMs = Infinity;
    timing.disconnectAnchor = anchor;
    timing.disconnectOffset = offset;
  }
  resolve(record, timing, -1);
  return timing;
}

/**
 * Step `index` (and every one before it) produced its tokens `atMs` after arrival: token
 * `index` of every choice. Returns the earliest due among the writes this resolved (Infinity
 * when none), for waking the player.
 */
export function tokenAvailable(record: TruthRecord, timing: DeferredTiming, index: number, atMs: number): number {
  if (index >= 0 && index < timing.steps) timing.stepDueMs[index] = atMs;
  const { tokens } = record;
  while (timing.nextToken < tokens.length) {
    const t = timing.tokensByStep[timing.nextToken] as number;
    const step = timing.tokenStep[t] as number;
    if (step > index) break;
    (tokens[t] as (typeof tokens)[number]).dueMs = timing.stepDueMs[step] as number;
    timing.nextToken++;
  }
  return resolve(record, timing, index);
}

function anchorDue(timing: DeferredTiming, anchor: number): number {
  return anchor < 0 ? 0 : (timing.stepDueMs[anchor] ?? Infinity);
}

function resolve(record: TruthRecord, timing: DeferredTiming, upTo: number): number {
  const { writes, events } = record;
  while (timing.nextEvent < events.length && (timing.eventAnchor[timing.nextEvent] as number) <= upTo) {
    const i = timing.nextEvent++;
    (events[i] as (typeof events)[number]).dueMs = anchorDue(timing, timing.eventAnchor[i] as number) + (timing.eventOffset[i] as number);
  }
  let earliest = Infinity;
  while (timing.nextWrite < writes.length && (timing.writeAnchor[timing.nextWrite] as number) <= upTo) {
    const i = timing.nextWrite++;
    const write = writes[i] as (typeof writes)[number];
    const previous = writes[i - 1];
    const previousDue = previous === undefined ? (record.headersDueMs ?? 0) : previous.dueMs;
    const anchorEvent = write.anchorEvent === undefined ? undefined : events[write.anchorEvent];
    // The planner's own formula on the real event times, so pieces of an event keep their gap
    // however close the real tokens come; a write without an anchor event keeps its offset.
    const due =
      anchorEvent !== undefined && anchorEvent.dueMs < Infinity
        ? writeDueMs(write, previous, previousDue, anchorEvent.dueMs)
        : Math.max(previousDue, anchorDue(timing, timing.writeAnchor[i] as number) + (timing.writeOffset[i] as number));
    write.dueMs = due;
    if (due < earliest) earliest = due;
  }
  const fault = record.fault;
  if (fault !== null && timing.disconnectAnchor >= 0 && timing.disconnectAnchor <= upTo) {
    // Known now: the drop goes when the next event would have been due, never before the last write.
    const lastDue = writes[writes.length - 1]?.dueMs ?? 0;
    const at = Math.max(lastDue, anchorDue(timing, timing.disconnectAnchor) + timing.disconnectOffset);
    fault.params.atMs = at;
    timing.disconnectAnchor = -1;
    if (at < earliest) earliest = at;
  }
  return earliest;
}
