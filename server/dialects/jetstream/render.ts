/**
 * JetStream's response bytes (DESIGN §7), as pure functions of the planned tokens.
 *
 * - ai-on-gke proxy `/generate`: non-streamed `{"response": text}`; streamed, one pretty-printed
 *   `{"id": "generate-<32 hex>", "time_created": <epoch float>, "text": piece}` per decode step,
 *   nothing between objects, a new id per object.
 * - Native `/v1/generate` and gRPC Decode: protobuf-JSON of DecodeResponse (camelCase, indent 2,
 *   default values omitted), one message per decode step plus the EOS step, whose sample is
 *   empty because JetStream drops the EOS token from the output.
 */
import { hex32, type Rng } from '../../../contracts/rng.ts';
import type { PlannedToken } from '../../../contracts/truth.ts';
import type { PayloadEvent } from '../../wire/payload-event.ts';

/** One decode step's sample, as the proto has it. */
export interface StreamSample {
  text: string;
  tokenIds: number[];
}

/** A DecodeResponse with stream_content (the only content JetStream sends today). */
export interface DecodeResponseMessage {
  streamContent: { samples: StreamSample[] };
}

/** Python's repr of a float: integral values keep their `.0`. */
export function pythonFloat(value: number): string {
  return Number.isInteger(value) ? `${value}.0` : String(value);
}

/** Consecutive token ranges [start, end) of each decode step (several under speculative decoding). */
export function decodeSteps(tokenCount: number, groups?: readonly number[]): Array<[number, number]> {
  const steps: Array<[number, number]> = [];
  let start = 0;
  let step = 0;
  while (start < tokenCount) {
    const size = Math.max(1, Math.min(groups?.[step] ?? 1, tokenCount - start));
    steps.push([start, start + size]);
    start += size;
    step++;
  }
  return steps;
}

function joinText(tokens: readonly PlannedToken[], start: number, end: number): string {
  let text = '';
  for (let i = start; i < end; i++) text += (tokens[i] as PlannedToken).text;
  return text;
}

export interface ProxyStreamContext {
  /** The request's own stream: chunk ids are drawn from it, so they are reproducible. */
  rng: Rng;
  /** Wall-clock seconds of the request's arrival; each chunk adds its due time. */
  arrivalEpochSec: number;
  /**
   * Whether due times are real offsets; a batching engine decides them after planning, and
   * then every chunk says the arrival time rather than a placeholder.
   */
  dueTimesKnown: boolean;
}

export function proxyStreamEvents(ctx: ProxyStreamContext, tokens: readonly PlannedToken[], groups?: readonly number[]): PayloadEvent[] {
  const ids = ctx.rng.derive('proxy-chunk-ids');
  return decodeSteps(tokens.length, groups).map(([start, end], i) => {
    const dueMs = (tokens[end - 1] as PlannedToken).dueMs;
    const created = Math.round((ctx.arrivalEpochSec + (ctx.dueTimesKnown ? dueMs / 1000 : 0)) * 1e6) / 1e6;
    const data =
      `{\n  "id": "generate-${hex32(ids)}",\n  "time_created": ${pythonFloat(created)},\n  "text": ${JSON.stringify(joinText(tokens, start, end))}\n}`;
    return { kind: end === tokens.length ? 'finish' : 'content', tokenStart: start, tokenCount: end - start, data, dueMs };
  });
}

export function proxyResponseBody(tokens: readonly PlannedToken[]): string {
  return JSON.stringify({ response: joinText(tokens, 0, tokens.length) });
}

/**
 * The DecodeResponse messages of a request: one per step, then the EOS step. Token-id requests
 * (client-side tokenization) get token ids only, as JetStream does.
 */
export function decodeMessages(tokens: readonly PlannedToken[], withText: boolean, groups?: readonly number[]): DecodeResponseMessage[] {
  const messages = decodeSteps(tokens.length, groups).map(([start, end]): DecodeResponseMessage => {
    const tokenIds: number[] = [];
    for (let i = start; i < end; i++) tokenIds.push((tokens[i] as PlannedToken).id);
    return { streamContent: { samples: [{ text: withText ? joinText(tokens, start, end) : '', tokenIds }] } };
  });
  messages.push({ streamContent: { samples: [{ text: '', tokenIds: [] }] } });
  return messages;
}

/** protobuf-JSON (MessageToJson): camelCase, indent 2, default values (empty text, empty ids) omitted. */
export function protoJson(message: DecodeResponseMessage): string {
  const samples = message.streamContent.samples.map((s) => {
    const out: { text?: string; tokenIds?: number[] } = {};
    if (s.text !== '') out.text = s.text;
    if (s.tokenIds.length > 0) out.tokenIds = s.tokenIds;
    return out;
  });
  return JSON.stringify({ streamContent: { samples } }, null, 2);
}

/** Payload events of the decode messages: step i carries the tokens of step i; EOS carries none. */
export function decodeEvents(messages: readonly DecodeResponseMessage[], tokens: readonly PlannedToken[], groups?: readonly number[]): PayloadEvent[] {
  const steps = decodeSteps(tokens.length, groups);
  const endMs = tokens[tokens.length - 1]?.dueMs ?? 0;
  return messages.map((message, i) => {
    const step = steps[i];
    const data = protoJson(message);
    if (step === undefined) return { kind: 'done', tokenStart: 0, tokenCount: 0, data, dueMs: endMs };
    const [start, end] = step;
    return { kind: 'content', tokenStart: start, tokenCount: end - start, data, dueMs: (tokens[end - 1] as PlannedToken).dueMs };
  });
}
