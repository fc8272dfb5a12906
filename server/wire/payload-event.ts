/** What a dialect hands to the wire layer: one logical event, not yet framed or cut. */
import type { EventKind } from '../../contracts/truth.ts';

export interface PayloadEvent {
  kind: EventKind;
  tokenStart: number;
  tokenCount: number;
  /** The event's payload (for SSE, the text after `data: `). */
  data: string;
  dueMs: number;
}

/**
 * A payload that is mostly the same bytes in every event of a response (vLLM's chunk: the same
 * id, model and null fields around one token's text): the shared head and tail are encoded once
 * per response and framing copies them, so only the small middle is built and encoded per event.
 * `data` gives the whole payload for whatever needs it as text (faults, non-plain framing).
 */
export class SplitPayload implements PayloadEvent {
  constructor(
    readonly kind: EventKind,
    readonly tokenStart: number,
    readonly tokenCount: number,
    readonly head: SharedPayloadPart,
    readonly middle: string,
    readonly tail: SharedPayloadPart,
    readonly dueMs: number,
  ) {}

  get data(): string {
    return this.head.text + this.middle + this.tail.text;
  }
}

/** A run of payload text shared by many events, with its UTF-8 bytes. */
export class SharedPayloadPart {
  readonly bytes: Buffer;
  constructor(readonly text: string) {
    this.bytes = Buffer.from(text, 'utf8');
  }
}

/** The same event with its payload as one string (for code that rewrites events). */
export function plainPayload(event: PayloadEvent): PayloadEvent {
  return event instanceof SplitPayload ? { kind: event.kind, tokenStart: event.tokenStart, tokenCount: event.tokenCount, data: event.data, dueMs: event.dueMs } : event;
}
