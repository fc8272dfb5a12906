/**
 * A wire policy: how a response's events are framed, how tokens group into events, how the
 * bytes are cut into socket writes, and which fault (if any) breaks the response. Plain data;
 * `x-benchtruth-wire` spec strings (wire-spec.ts) and YAML both become one of these.
 * The default is vLLM's own behaviour: `data: <json>\n\n`, one token per event, one event per write.
 */

export type LineEnding = 'lf' | 'crlf' | 'cr' | 'mixed';

/** Named byte positions where an event can be cut (DESIGN §8). */
export const CUT_PLACES = ['data', 'done', 'crlf', 'utf8', 'usage', 'blank', 'text'] as const;
export type CutPlace = (typeof CUT_PLACES)[number];

export interface FramingPolicy {
  eol: LineEnding;
  /** `data: x` (true, vLLM) or `data:x`. */
  space: boolean;
  /** A UTF-8 byte-order mark before the first event. */
  bom: boolean;
  /** A `: keep-alive` comment before every Nth event (and at the start); 0 = none. */
  keepAliveEvery: number;
  /** An `event: NAME` line in every event; null = none. */
  eventName: string | null;
  /** An `id: N` line in every event. */
  ids: boolean;
  /** JSON payloads split over several `data:` lines (after each comma outside strings). */
  multiline: boolean;
}

export interface WritePolicy {
  /** Events per write (1 = vLLM). Ignored when `bytes`. */
  eventsPerWrite: number;
  /** One byte per write. */
  bytes: boolean;
  /** Extra cuts per event at random positions (an event cut into K writes has K − 1). */
  randomCuts: number;
  /** Cuts at named places, wherever an event has them. */
  places: CutPlace[];
  /** Delay between consecutive pieces of one event; null = the default (see gapMsOf). */
  gapMs: number | null;
  /**
   * Send role-only events (chat's `{"role":"assistant","content":""}`) at arrival, before any
   * token exists, as some gateways do; vLLM sends them with the first token.
   */
  earlyRole: boolean;
}

export interface TokenPolicy {
  /** Tokens per event (1 = vLLM). */
  perEvent: number;
  /** Random bursts of 1..burstMax tokens per event (speculative decoding); 0 = off. */
  burstMax: number;
  /** Tokens of the first event; null = like the others. */
  first: number | null;
}

export type FaultSpec =
  | { kind: 'http'; status: number; retryAfterS: number; p: number }
  | { kind: 'error'; afterTokens: number; status: number; p: number }
  | { kind: 'disconnect'; afterTokens: number; p: number }
  | { kind: 'stall'; afterTokens: number; stallMs: number; p: number }
  | { kind: 'malformed'; afterTokens: number; p: number }
  | { kind: 'slowheaders'; delayMs: number; p: number }
  | { kind: 'nodone'; p: number }
  | { kind: 'nousage'; p: number }
  | { kind: 'dupdone'; p: number };

export type FaultKind = FaultSpec['kind'];

/** An HTTP fault's Retry-After (`http:STATUS:RETRY_S`) is sent with these statuses only. */
export function sendsRetryAfter(status: number): boolean {
  return status === 429 || status === 503;
}

export interface WirePolicy {
  framing: FramingPolicy;
  writes: WritePolicy;
  tokens: TokenPolicy;
  /** Tried in order per request, each with its probability; the first that fires is the fault. */
  faults: FaultSpec[];
}

export const VLLM_WIRE_POLICY: Readonly<WirePolicy> = Object.freeze({
  framing: Object.freeze({ eol: 'lf', space: true, bom: false, keepAliveEvery: 0, eventName: null, ids: false, multiline: false }),
  writes: Object.freeze({ eventsPerWrite: 1, bytes: false, randomCuts: 0, places: [], gapMs: null, earlyRole: false }),
  tokens: Object.freeze({ perEvent: 1, burstMax: 0, first: null }),
  faults: [],
}) as Readonly<WirePolicy>;

/**
 * Default delay between the pieces of one cut event: long enough that a reader on 127.0.0.1
 * (TCP_NODELAY on) gets them as separate reads even on a busy machine.
 */
export const DEFAULT_PIECE_GAP_MS = 2;
/**
 * One byte per write waits less per byte, or a 250-byte event would take half a second; 0.2 ms
 * still parts the reads of a reader that keeps up (the emission scheduler sleeps with µs
 * precision). Each event then takes about 0.2 ms × its bytes. `gap=0ms` asks for no delay.
 */
const DEFAULT_BYTE_GAP_MS = 0.2;

export function gapMsOf(writes: WritePolicy): number {
  return writes.gapMs ?? (writes.bytes ? DEFAULT_BYTE_GAP_MS : DEFAULT_PIECE_GAP_MS);
}

/** A deep copy, so callers can layer edits without touching a shared policy. */
export function clonePolicy(policy: Readonly<WirePolicy>): WirePolicy {
  return {
    framing: { ...policy.framing },
    writes: { ...policy.writes, places: [...policy.writes.places] },
    tokens: { ...policy.tokens },
    faults: policy.faults.map((f) => ({ ...f })),
  };
}
