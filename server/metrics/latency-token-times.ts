/**
 * The token times the latency histograms (TTFT, ITL, TPOT) observe. vLLM and JetStream time the
 * first token and the gaps between tokens in the engine, whether or not the answer is streamed.
 * A streamed response's engine time is when its token reached the socket (the truth, DESIGN §3).
 * A one-body response's single write only says when the whole answer left, so there the time of
 * each token is when the engine produced it: the truth record's token due times (the planned
 * times under the isolated scheduler, the real step times under the batching one).
 */
import type { TruthRecord } from '../../contracts/truth.ts';

/**
 * Times (ms after arrival), in token order, of the tokens the engine is known to have produced.
 * `delivered` is what the streamed path uses (token-times.ts or the per-event variant).
 */
export function latencyTokenTimes(record: TruthRecord, delivered: readonly number[]): readonly number[] {
  if (record.stream) return delivered;
  // An error answered before generation (an HTTP fault's status) produced no token.
  if (record.status >= 400) return [];
  const endMs = record.end?.atMs ?? Infinity;
  const times: number[] = [];
  for (const token of record.tokens) {
    // Infinity: the batching engine never produced it; later than the end: the request was
    // gone before the engine got there.
    if (!(token.dueMs < Infinity) || token.dueMs > endMs) break;
    times.push(token.dueMs);
  }
  return times;
}
