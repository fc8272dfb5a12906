/**
 * Token times read from a truth record. Delivered: when each token really reached the socket,
 * the actual time of the write holding the last byte of the event that carries it (DESIGN §3);
 * tokens whose event was never fully written (an aborted stream) are left out. For latency
 * figures (TTFT/ITL histograms, prefill and decode time) vLLM and JetStream time tokens in the
 * engine, streamed or not: a one-body answer's single write only says when the whole answer
 * left, so there each token's time is when the engine produced it (its due time: planned under
 * the isolated scheduler, the real step time under the batching one).
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

/**
 * Times (ms after arrival), in token order, of the tokens the engine is known to have produced.
 * `delivered` is what the streamed path uses (token-times.ts or the per-event variant).
 */
export function latencyTokenTimes(record: TruthRecord, delivered: readonly number[]): readonly number[] {
  if (record.stream && !oneEventStreams.has(record)) return delivered;
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

/**
 * How a request's tokens split into its choices (n > 1, prompt lists): vLLM V1 runs each choice
 * as its own engine request, so its per-request metrics are per choice. Kept beside the truth
 * record, not in it: the record's public shape lists the merged tokens only. Absent = one choice.
 */
export interface ChoiceLayout {
  /** Per entry of `record.tokens`: the index of the choice it belongs to. */
  choiceOfToken: Uint32Array;
  /** Per choice: its prompt's tokens and its finish reason as planned. */
  promptTokens: readonly number[];
  finishReasons: ReadonlyArray<string | null>;
}

const layouts = new WeakMap<TruthRecord, ChoiceLayout>();

/** The sampling parameters vLLM's per-request histograms observe (`n`, the effective `max_tokens`). */
export interface SamplingParams {
  /** Choices per prompt: vLLM's parent request of n children. */
  n: number;
  /**
   * The request's `max_tokens`, or null when it set none: vLLM then gives each prompt the
   * context it leaves (max_model_len − its prompt tokens), whatever EOS stops it first.
   */
  maxTokens: number | null;
}

const samplingParamsOf = new WeakMap<TruthRecord, SamplingParams>();

/**
 * Streams of one event holding the whole answer (vLLM's fake stream of a completion it does not
 * stream): the engine produced their tokens at their due times, as a body's, whatever the write.
 */
const oneEventStreams = new WeakSet<TruthRecord>();

export function noteOneEventStream(record: TruthRecord): void {
  oneEventStreams.add(record);
}

export function noteSamplingParams(record: TruthRecord, params: SamplingParams): void {
  samplingParamsOf.set(record, params);
}

export function samplingParams(record: TruthRecord): SamplingParams | undefined {
  return samplingParamsOf.get(record);
}

export function noteChoiceLayout(record: TruthRecord, layout: ChoiceLayout): void {
  layouts.set(record, layout);
}

export function choiceLayout(record: TruthRecord): ChoiceLayout | undefined {
  return layouts.get(record);
}

/**
 * Token times (in `record.tokens` order, as the functions above give them) split per choice.
 * `times[i]` is token i's time; a list shorter than the tokens covers a prefix of them.
 */
export function timesByChoice(times: readonly number[], layout: ChoiceLayout | undefined): number[][] {
  if (layout === undefined) return [[...times]];
  const out: number[][] = layout.promptTokens.map(() => []);
  for (let i = 0; i < times.length; i++) out[layout.choiceOfToken[i] ?? 0]?.push(times[i] as number);
  return out;
}
