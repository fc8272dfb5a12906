/**
 * The dialect-neutral entry point of the wire layer: payload events in, body + truth events +
 * planned writes out, under one wire policy. vLLM calls it with SSE framing; JetStream's JSON
 * object streams call it with `objects` framing (objects cut across writes, several per write;
 * the SSE-only framing options are ignored there).
 */
import type { Rng } from '../../contracts/rng.ts';
import type { TruthEvent, TruthWrite } from '../../contracts/truth.ts';
import { frame, type Framing } from './framing.ts';
import type { PayloadEvent } from './payload-event.ts';
import type { WirePolicy } from './wire-policy.ts';
import { planWrites } from './writes.ts';

export interface WireApplied {
  body: Buffer;
  events: TruthEvent[];
  writes: TruthWrite[];
}

export interface ApplyWireOptions {
  framing: Framing;
  policy: Readonly<WirePolicy>;
  /** The request's random stream; the wire derives its own sub-streams from it. */
  rng: Rng;
  /** Nothing is written before the headers (a slow-headers fault delays them). */
  headersDueMs?: number;
}

const KEEP_ALIVE = 'keep-alive';

/**
 * Keep-alive comments: one at the start (a server idling through prefill) and one before every
 * Nth event after that, each sent right after the event before it, in its own write. The one at
 * the start goes out even when no event follows (`disconnect:0` dropping in prefill).
 */
export function withKeepAlives(events: readonly PayloadEvent[], every: number): PayloadEvent[] {
  if (every <= 0) return [...events];
  if (events.length === 0) return [{ kind: 'comment', tokenStart: 0, tokenCount: 0, data: KEEP_ALIVE, dueMs: 0 }];
  const out: PayloadEvent[] = [];
  events.forEach((event, i) => {
    if (i % every === 0) out.push({ kind: 'comment', tokenStart: 0, tokenCount: 0, data: KEEP_ALIVE, dueMs: i === 0 ? 0 : (events[i - 1] as PayloadEvent).dueMs });
    out.push(event);
  });
  return out;
}

export function applyWirePolicy(events: readonly PayloadEvent[], options: ApplyWireOptions): WireApplied {
  const { policy, rng, framing } = options;
  const timed = policy.writes.earlyRole ? events.map((e) => (e.kind === 'role' ? { ...e, dueMs: 0 } : e)) : events;
  const payloads = framing === 'sse' ? withKeepAlives(timed, policy.framing.keepAliveEvery) : timed;
  const framed = frame(payloads, framing, policy.framing, rng.derive('wire:framing'));
  const writes = planWrites(framed.body, framed.events, policy.writes, rng.derive('wire:cuts'), options.headersDueMs ?? 0);
  return { body: framed.body, events: framed.events, writes };
}
