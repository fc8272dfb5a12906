/**
 * A whole response under a wire policy, for any dialect: token grouping, the fault that fires
 * (seeded per request), the events it rewrites, framing and writes. The dialect only renders
 * its events for given token groups and spells its errors; it never sees a byte cut.
 */
import type { Rng } from '../../contracts/rng.ts';
import type { TruthEvent, TruthFault, TruthWrite } from '../../contracts/truth.ts';
import { applyWirePolicy } from './apply-wire-policy.ts';
import type { Framing } from './framing.ts';
import { plainPayload, type PayloadEvent } from './payload-event.ts';
import { applyStreamFault, chooseFault, faultFindsTarget, faultTruth, isWholeBodyFault, type FaultShapes } from './stream-faults.ts';
import { planTokenGroups } from './token-groups.ts';
import { formatWireSpec } from './wire-spec.ts';
import { sendsRetryAfter, VLLM_WIRE_POLICY, type WirePolicy } from './wire-policy.ts';

export interface DialectShapes extends FaultShapes {
  /** The body of an HTTP error sent instead of the stream (vLLM: `{"error": {...}}`). */
  httpErrorBody(status: number): string;
}

export interface WireResponseInput {
  policy: Readonly<WirePolicy>;
  /** The request's random stream (the engine's plan hands it on). */
  rng: Rng;
  stream: boolean;
  /** Framing of a stream; a non-streamed body is always one object. */
  framing: Framing;
  tokenCount: number;
  /** The dialect's events: for a stream, content events of the given sizes; else the one body event. */
  render(groups: readonly number[]): PayloadEvent[];
  shapes: DialectShapes;
}

export interface WireResponse {
  status: number;
  body: Buffer;
  events: TruthEvent[];
  writes: TruthWrite[];
  fault: TruthFault | null;
  /** When the headers go out (0 = at once, or with the first write for non-streams). */
  headersDueMs: number;
  /** Headers an HTTP-error fault adds (its content type, Retry-After). */
  errorHeaders: Record<string, string> | null;
  /** The policy as a canonical spec string, for the truth record. */
  wire: string;
}

/**
 * What of a policy a response sent as one body can feel: its byte cuts, their gaps and the
 * faults a whole body has (an HTTP status, a stall, slow headers, a disconnect). SSE framing,
 * token grouping, events per write and the early role chunk have nothing to act on, so the
 * truth's `wire` leaves them out, as it says what applied.
 */
function wholeBodyPolicy(policy: Readonly<WirePolicy>): WirePolicy {
  return {
    framing: VLLM_WIRE_POLICY.framing,
    tokens: VLLM_WIRE_POLICY.tokens,
    writes: { ...policy.writes, eventsPerWrite: 1, earlyRole: false },
    faults: policy.faults.filter((fault) => isWholeBodyFault(fault.kind)),
  };
}

export function planWireResponse(input: WireResponseInput): WireResponse {
  const { policy, rng, stream, shapes } = input;
  // Rendered when a fault that needs a target fires first (to see whether it has one), else after the choice.
  let groups: readonly number[] | null = null;
  let rendered: PayloadEvent[] | null = null;
  const renderOnce = (): PayloadEvent[] => {
    groups ??= stream ? planTokenGroups(policy.tokens, rng.derive('wire:tokens'), input.tokenCount) : [];
    rendered ??= input.render(groups);
    return rendered;
  };
  const chosen = chooseFault(policy.faults, rng.derive('wire:fault'), stream, (kind) => faultFindsTarget(kind, renderOnce()));
  // An HTTP-error answer is one body whether a stream was asked for or not: its truth's wire
  // keeps only what a body can feel, as a non-streamed answer's does.
  const wire = formatWireSpec(stream && chosen?.kind !== 'http' ? policy : wholeBodyPolicy(policy));
  const fault = chosen === null ? null : faultTruth(chosen);

  if (chosen?.kind === 'http') {
    const body = shapes.httpErrorBody(chosen.status);
    const applied = applyWirePolicy([{ kind: 'error', tokenStart: 0, tokenCount: 0, data: body, dueMs: 0 }], { framing: 'objects', policy, rng });
    const errorHeaders: Record<string, string> = { 'content-type': 'application/json' };
    if (sendsRetryAfter(chosen.status)) errorHeaders['retry-after'] = String(chosen.retryAfterS);
    return { status: chosen.status, ...applied, fault, headersDueMs: 0, errorHeaders, wire };
  }

  const headersDueMs = chosen?.kind === 'slowheaders' ? chosen.delayMs : 0;
  const events = renderOnce();
  let applied;
  if (stream) {
    // Faults rewrite events as text; a response without one keeps its split payloads.
    const faulted = applyStreamFault(chosen === null ? events : events.map(plainPayload), chosen, shapes);
    applied = applyWirePolicy(faulted.events, { framing: input.framing, policy, rng, headersDueMs });
    if (fault !== null && faulted.disconnectAtMs !== null) {
      const lastDue = applied.writes[applied.writes.length - 1]?.dueMs ?? headersDueMs;
      fault.params.atMs = Math.max(lastDue, faulted.disconnectAtMs);
    }
  } else {
    // A whole body can only be late, held back, or never come.
    let body = events;
    if (chosen?.kind === 'stall') body = events.map((e) => ({ ...e, dueMs: e.dueMs + chosen.stallMs }));
    if (chosen?.kind === 'disconnect') {
      if (fault !== null) fault.params.atMs = Math.max(headersDueMs, events[events.length - 1]?.dueMs ?? 0);
      body = [];
    }
    applied = applyWirePolicy(body, { framing: 'objects', policy, rng, headersDueMs });
  }
  return { status: 200, ...applied, fault, headersDueMs, errorHeaders: null, wire };
}
