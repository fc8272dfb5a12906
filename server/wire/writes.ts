/** Cutting a framed body into socket writes. vLLM's own behaviour: one event per write. */
import type { TruthEvent, TruthWrite } from '../../contracts/truth.ts';

export function oneWritePerEvent(events: readonly TruthEvent[]): TruthWrite[] {
  return events.map((e) => ({ offset: e.offset, length: e.length, dueMs: e.dueMs, actualMs: null }));
}
