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
