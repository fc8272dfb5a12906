/**
 * A response's rendered plan (its record's tokens, events, writes and body) dropped while the
 * response waits for its first write and put back when it is rendered again: when, and the
 * fingerprint that checks the second rendering against the first. The player decides; this is
 * the data side, pure apart from the record it is given.
 */
import type { PlannedToken, TruthEvent, TruthRecord, TruthWrite } from '../../contracts/truth.ts';

/**
 * A response whose first write is further off than this sleeps until WAKE_LEAD_MS before it:
 * an idle stream (a long queue, a slow prefill) or a one-body answer of many tokens then holds
 * its connection, its scalars and its planner's input, not its rendered plan (an idle stream of
 * 16 tokens half as much memory, one of 256 tokens a twentieth).
 */
export const IDLE_SLEEP_MS = 1000;
/**
 * How long before its first write a sleeping response asks for its plan to be rendered again:
 * the rendering (up to a few milliseconds for thousands of tokens) is a deferred job, run in
 * the scheduler's gaps like any planning, never in a turn's writes.
 */
export const WAKE_LEAD_MS = 250;
/** What a sleeping record holds in place of its rendered parts: empty, and never written to. */
const ASLEEP_TOKENS: PlannedToken[] = Object.freeze([]) as unknown as PlannedToken[];
const ASLEEP_EVENTS: TruthEvent[] = Object.freeze([]) as unknown as TruthEvent[];
const ASLEEP_WRITES: TruthWrite[] = Object.freeze([]) as unknown as TruthWrite[];
const ASLEEP_BODY = new Uint8Array(0);

/**
 * A hash of what a sleep drops (body bytes, the writes' places and due times, the tokens): a
 * plan rendered again must match it. FNV-1a over the bytes, then the numbers mixed in; a few
 * microseconds for a stream's plan, paid only by responses that sleep.
 */
export function planFingerprint(record: TruthRecord): number {
  let hash = 0x811c9dc5;
  const mix = (value: number): void => {
    hash = Math.imul(hash ^ (value | 0), 0x01000193);
    hash = Math.imul(hash ^ ((value * 1000) % 0x7fffffff | 0), 0x01000193);
  };
  const body = record.body;
  for (let i = 0; i < body.length; i++) hash = Math.imul(hash ^ (body[i] as number), 0x01000193);
  for (const write of record.writes) {
    mix(write.offset);
    mix(write.length);
    mix(write.dueMs);
  }
  for (const token of record.tokens) {
    mix(token.id);
    mix(token.dueMs);
  }
  mix(record.events.length);
  return hash >>> 0;
}

/** Empties the record's rendered parts; returns their fingerprint. */
export function dropRenderedPlan(record: TruthRecord): number {
  const fingerprint = planFingerprint(record);
  record.tokens = ASLEEP_TOKENS;
  record.events = ASLEEP_EVENTS;
  record.writes = ASLEEP_WRITES;
  record.body = ASLEEP_BODY;
  return fingerprint;
}

/** Puts a second rendering's parts into the record; false when they are not the ones dropped. */
export function restoreRenderedPlan(record: TruthRecord, fresh: TruthRecord, fingerprint: number): boolean {
  record.tokens = fresh.tokens;
  record.events = fresh.events;
  record.writes = fresh.writes;
  record.body = fresh.body;
  return planFingerprint(fresh) === fingerprint;
}
