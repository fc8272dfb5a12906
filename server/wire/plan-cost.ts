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

/** About the bytes a multi-line event spends per line (JSON split after each comma, each line its own `data:` and line end). */
const BYTES_PER_JSON_LINE = 24;

/**
 * About the bytes one token's event carries beyond a plain chunk, by what the request asked
 * for: logprobs (completions' four lists with each alternative, chat's content entry with each
 * alternative and its bytes) and a running usage. Measured on vLLM's shapes; a guard's estimate.
 */
export function requestEventBytes(asked: { logprobs: number | null; chat: boolean; continuousUsage: boolean }): number {
  const logprobs = asked.logprobs === null ? 0 : asked.chat ? 96 + 66 * asked.logprobs : 96 + 18 * asked.logprobs;
  return logprobs + (asked.continuousUsage ? 96 : 0);
}

/**
 * Planned writes per output token under `policy`, never below 1 (a token costs its planning
 * even when several share an event). Random bursts are counted as one token per event.
 * `requestBytes`: what the request's own options add to each event (requestEventBytes).
 */
export function writesPerToken(policy: Readonly<WirePolicy>, stream: boolean, requestBytes = 0): number {
  const { writes, tokens, framing } = policy;
  if (!stream) return writes.bytes ? BODY_BYTES_PER_TOKEN : 1;
  const tokensPerEvent = tokens.burstMax > 0 ? 1 : Math.max(1, tokens.perEvent);
  const payloadBytes = EVENT_BYTES_ESTIMATE + requestBytes;
  // Multi-line JSON gives each line its own prefix and line end, and a per-line place (CR LF) its own cut.
  const lines = framing.multiline ? Math.ceil(payloadBytes / BYTES_PER_JSON_LINE) : 1;
  const eventBytes = payloadBytes + (lines - 1) * 8 + (framing.eventName === null ? 0 : framing.eventName.length + 9) + (framing.ids ? 12 : 0);
  // A named place cuts an event once, but `crlf` once per line (and the blank line): counted
  // twice, or per line of multi-line JSON.
  const perPlace = writes.places.map((place) => (place === 'crlf' ? Math.max(2, lines + 1) : 2));
  const piecesPerEvent = writes.bytes ? eventBytes : 1 + writes.randomCuts + perPlace.reduce((a, b) => a + b, 0);
  const keepAlives = framing.keepAliveEvery > 0 ? 1 / framing.keepAliveEvery : 0;
  return Math.max(1, Math.ceil(((1 + keepAlives) * piecesPerEvent) / tokensPerEvent));
}
