/**
 * What one response costs to plan and send, counted in planned socket writes: the unit both
 * steps scale with. Planning a streamed token's event takes a few microseconds, and so does
 * each send; a policy that cuts every event into pieces (`writes=bytes`: one write per byte, a
 * vLLM chunk is about 250 bytes) multiplies the count, and so the cost, by its pieces. Planning
 * is synchronous, so this count is what a size guard must bound to keep the server answering.
 */
import type { WirePolicy } from './wire-policy.ts';

/** About the bytes of one streamed one-token event (vLLM's completion chunk ~220, chat's ~260). */
export const EVENT_BYTES_ESTIMATE = 256;
/** About the bytes one token adds to a whole (non-streamed) body: its text, escaped. */
const BODY_BYTES_PER_TOKEN = 8;

/**
 * Planned writes per output token under `policy`, never below 1 (a token costs its planning
 * even when several share an event). Random bursts are counted as one token per event.
 */
export function writesPerToken(policy: Readonly<WirePolicy>, stream: boolean): number {
  const { writes, tokens, framing } = policy;
  if (!stream) return writes.bytes ? BODY_BYTES_PER_TOKEN : 1;
  const tokensPerEvent = tokens.burstMax > 0 ? 1 : Math.max(1, tokens.perEvent);
  // A named place can cut an event more than once (a CRLF per line): counted twice.
  const piecesPerEvent = writes.bytes ? EVENT_BYTES_ESTIMATE : 1 + writes.randomCuts + 2 * writes.places.length;
  const keepAlives = framing.keepAliveEvery > 0 ? 1 / framing.keepAliveEvery : 0;
  return Math.max(1, Math.ceil(((1 + keepAlives) * piecesPerEvent) / tokensPerEvent));
}
