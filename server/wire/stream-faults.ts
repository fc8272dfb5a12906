/**
 * Faults that act on a response's events before framing (DESIGN §8): which one fires for a
 * request (seeded), and how it rewrites the event list. Dialect-neutral: the dialect supplies
 * the bytes of its in-stream error; everything else is moving, dropping or adding events.
 */
import { requestRng, type Rng } from '../../contracts/rng.ts';
import type { TruthFault } from '../../contracts/truth.ts';
import type { PayloadEvent } from './payload-event.ts';
import { sendsRetryAfter, type FaultKind, type FaultSpec } from './wire-policy.ts';

/** How a dialect spells its faults. */
export interface FaultShapes {
  /** The payload of an in-stream error event (vLLM: `{"error": {...}}` with Python spacing). */
  streamErrorData(status: number): string;
  /**
   * True when nothing follows the in-stream error: the dialect's `done` event is stream content
   * (JetStream's EOS step), not a terminator like vLLM's `[DONE]`, which still follows.
   */
  readonly errorEndsStream?: boolean;
  /** True when nothing can follow a malformed event (gRPC: no reader gets past a message it cannot parse). */
  readonly malformedEndsStream?: boolean;
}

/** Faults a non-streamed response can show; the others only exist inside a stream. */
const WHOLE_BODY_FAULTS: ReadonlySet<FaultKind> = new Set(['http', 'disconnect', 'stall', 'slowheaders']);

/** Whether a fault can act on a response sent as one body. */
export function isWholeBodyFault(kind: FaultKind): boolean {
  return WHOLE_BODY_FAULTS.has(kind);
}

/** Faults after which the contract counts the response as a failure (end.how = 'fault'). */
const FAILING_FAULTS: ReadonlySet<string> = new Set(['http', 'error', 'disconnect', 'nodone', 'malformed']);

export function endsAsFailure(fault: TruthFault | null): boolean {
  return fault !== null && FAILING_FAULTS.has(fault.kind);
}

/** Whether the response has what a fault of this kind acts on (see faultFindsTarget). */
export type FindsTarget = (kind: FaultKind) => boolean;

/**
 * The first fault of the list that fires for this request; one draw per listed fault, in order.
 * A fault with nothing to act on (`nousage` on a stream with no usage chunk, or any stream fault
 * on a whole body) does not fire, and the next is tried.
 */
export function chooseFault(faults: readonly FaultSpec[], rng: Rng, stream: boolean, findsTarget: FindsTarget = () => true): FaultSpec | null {
  for (const fault of faults) {
    const fires = fault.p >= 1 || rng.chance(fault.p);
    if (fires && (stream || WHOLE_BODY_FAULTS.has(fault.kind)) && (!hasTarget(fault.kind) || findsTarget(fault.kind))) return fault;
  }
  return null;
}

/**
 * Whether a request's plan will answer it with an HTTP-error fault: the draw planWireResponse
 * makes from the request's stream (its `wire:fault` child, which no other draw moves), made
 * before planning so that an answer which never reaches the engine is not refused by the
 * engine's full queue first.
 */
export function drawsHttpFault(faults: readonly FaultSpec[], seed: number, requestKey: string, stream: boolean, findsTarget: FindsTarget): boolean {
  if (!faults.some((fault) => fault.kind === 'http')) return false;
  return chooseFault(faults, requestRng(seed, requestKey).derive('wire:fault'), stream, findsTarget)?.kind === 'http';
}

/** The event kind a fault removes or repeats; faults not listed act on any stream. */
const FAULT_TARGETS: Partial<Record<FaultKind, PayloadEvent['kind']>> = { nodone: 'done', dupdone: 'done', nousage: 'usage' };

/** Whether a fault of this kind acts only on a stream that has a certain event. */
export function hasTarget(kind: FaultKind): boolean {
  return FAULT_TARGETS[kind] !== undefined;
}

/** Whether the stream has what the fault acts on (a `[DONE]` to drop, a usage chunk to lose). */
export function faultFindsTarget(kind: FaultKind, events: readonly PayloadEvent[]): boolean {
  const target = FAULT_TARGETS[kind];
  return target === undefined || events.some((e) => e.kind === target);
}

export function faultTruth(fault: FaultSpec): TruthFault {
  const { kind, p, ...params } = fault;
  // An HTTP status that sends no Retry-After (anything but 429 and 503) has none in its truth either.
  if (fault.kind === 'http' && !sendsRetryAfter(fault.status)) delete (params as { retryAfterS?: number }).retryAfterS;
  return { kind, params: { ...params, probability: p } };
}

/**
 * Index of the event after which a fault "after k tokens" acts: the event holding the k-th
 * output token, the last token-bearing event when k exceeds the total. For k = 0, the last event
 * before the first token: what a server sends before any token (chat's role chunk) still goes
 * out, and the fault acts when the first token would have been due; -1 when the first event
 * carries a token (or none does).
 */
export function eventAfterTokens(events: readonly PayloadEvent[], k: number): number {
  let seen = 0;
  let lastBearing = -1;
  for (let i = 0; i < events.length; i++) {
    const count = (events[i] as PayloadEvent).tokenCount;
    if (count <= 0) continue;
    if (k <= 0) return i - 1;
    seen += count;
    lastBearing = i;
    if (seen >= k) return i;
  }
  return lastBearing;
}

export interface FaultedEvents {
  events: PayloadEvent[];
  /**
   * For a disconnect: the response stops after this event (-1 = before any) and the socket is
   * destroyed at `disconnectAtMs`, when the next event would have been due.
   */
  disconnectAfterEvent: number | null;
  disconnectAtMs: number | null;
}

function dueAfter(events: readonly PayloadEvent[], index: number): number {
  return events[index + 1]?.dueMs ?? events[index]?.dueMs ?? 0;
}

/** `events` rewritten by a stream fault; http and slowheaders leave the events alone. */
export function applyStreamFault(events: readonly PayloadEvent[], fault: FaultSpec | null, shapes: FaultShapes): FaultedEvents {
  const out: FaultedEvents = { events: [...events], disconnectAfterEvent: null, disconnectAtMs: null };
  if (fault === null) return out;
  switch (fault.kind) {
    case 'error': {
      const cut = eventAfterTokens(events, fault.afterTokens);
      const dueMs = dueAfter(events, cut);
      out.events = events.slice(0, cut + 1);
      out.events.push({ kind: 'error', tokenStart: 0, tokenCount: 0, data: shapes.streamErrorData(fault.status), dueMs });
      const done = events.find((e) => e.kind === 'done');
      if (done !== undefined && shapes.errorEndsStream !== true) out.events.push({ ...done, dueMs });
      return out;
    }
    case 'disconnect': {
      const cut = eventAfterTokens(events, fault.afterTokens);
      out.disconnectAfterEvent = cut;
      out.disconnectAtMs = dueAfter(events, cut);
      out.events = events.slice(0, cut + 1);
      return out;
    }
    case 'stall': {
      const cut = eventAfterTokens(events, fault.afterTokens);
      out.events = events.map((e, i) => (i > cut ? { ...e, dueMs: e.dueMs + fault.stallMs } : e));
      return out;
    }
    case 'malformed': {
      const cut = eventAfterTokens(events, fault.afterTokens);
      // Half of a real payload: the classic `data: {"id":...` of a server that flushed mid-object.
      const model = events.slice(cut + 1).find((e) => e.data.startsWith('{')) ?? events.find((e) => e.data.startsWith('{'));
      const whole = model?.data ?? '{"object":"text_completion"}';
      const data = whole.slice(0, Math.max(1, Math.floor(whole.length / 2)));
      const malformed: PayloadEvent = { kind: 'error', tokenStart: 0, tokenCount: 0, data, dueMs: dueAfter(events, cut) };
      if (shapes.malformedEndsStream === true) out.events = [...events.slice(0, cut + 1), malformed];
      else out.events.splice(cut + 1, 0, malformed);
      return out;
    }
    case 'nodone':
      out.events = events.filter((e) => e.kind !== 'done');
      return out;
    case 'nousage':
      out.events = events.filter((e) => e.kind !== 'usage');
      return out;
    case 'dupdone': {
      const at = events.findIndex((e) => e.kind === 'done');
      if (at >= 0) out.events.splice(at + 1, 0, { ...(events[at] as PayloadEvent) });
      return out;
    }
    default:
      return out;
  }
}
