/**
 * When each token really reached the socket, read from a truth record: the actual time of the
 * write holding the last byte of the event that carries it (DESIGN §3). Tokens whose event was
 * never fully written (an aborted stream) are left out, so the result is what a reader saw.
 */
import { writeIndexHolding, type TruthRecord } from '../../contracts/truth.ts';

/** Truth times (ms after arrival) of the tokens that were delivered, in token order. */
export function deliveredTokenTimes(record: TruthRecord): number[] {
  const times: number[] = [];
  for (const event of record.events) {
    if (event.tokenCount <= 0) continue;
    const index = writeIndexHolding(record.writes, event.completesAt);
    const at = index < 0 ? null : (record.writes[index]?.actualMs ?? null);
    if (at === null) break;
    for (let k = 0; k < event.tokenCount; k++) times.push(at);
  }
  return times;
}
