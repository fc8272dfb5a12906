/**
 * JetStream's response bytes (DESIGN §7), as pure functions of the planned tokens.
 *
 * - ai-on-gke proxy `/generate`: non-streamed `{"response": text}` (json.dumps, indent 4);
 *   streamed, `{"id": "generate-<uuid4 hex>", "time_created": <epoch float>, "text": piece}`
 *   (indent 4) for every message the proxy relays from Decode — each decode step and the EOS
 *   step, whose text is empty — nothing between objects, a new id per object.
 * - Native `/v1/generate` and gRPC Decode: protobuf-JSON of DecodeResponse (camelCase, indent 2,
 *   default values omitted), one message per decode step plus the EOS step, whose sample is
 *   empty because JetStream drops the EOS token from the output.
 * All JSON text is ASCII, as Python's ensure_ascii writes it (python-json-dumps.ts).
 */
import { hex32, type Rng } from '../../../contracts/rng.ts';
import type { PlannedToken } from '../../../contracts/truth.ts';
import type { PayloadEvent } from '../../wire/payload-event.ts';
import { pythonFloat } from '../vllm/python-repr.ts';
import { pythonJsonDumps, pythonJsonString } from '../python-json-dumps.ts';

/** One decode step's sample, as the proto has it. */
export interface StreamSample {
  /** Absent when empty (token-id requests, the EOS step), as protobuf leaves a default out. */
  text?: string;
  tokenIds: number[];
}

/** A DecodeResponse with stream_content (the only content JetStream sends today). */
export interface DecodeResponseMessage {
  streamContent: { samples: StreamSample[] };
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

/** 32 hex digits shaped like Python's uuid4().hex: version nibble 4, variant nibble 8–b. */
export function uuid4Hex(rng: Rng): string {
  const hex = hex32(rng);
  const variant = ((parseInt(hex[16] as string, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 12)}4${hex.slice(13, 16)}${variant}${hex.slice(17)}`;
}

/**
 * An epoch time in whole microseconds whose last digit is never 0, so Python's shortest float
 * form always prints six decimals: every chunk then has the same width whatever the wall clock
 * says, and the wire's random cuts (drawn over event lengths) stay a function of the seed and
 * the request alone (DESIGN §2). The nudge is one microsecond, below anything a reader measures.
 */
export function fixedWidthEpochSec(epochSec: number): number {
  const micros = Math.round(epochSec * 1e6);
  return (micros % 10 === 0 ? micros + 1 : micros) / 1e6;
}

/** `eosDueMs`: when Decode's EOS step is done (a step after the last token's). */
export function proxyStreamEvents(ctx: ProxyStreamContext, tokens: readonly PlannedToken[], eosDueMs: number, groups?: readonly number[]): PayloadEvent[] {
  const ids = ctx.rng.derive('proxy-chunk-ids');
  const chunk = (text: string, dueMs: number): string => {
    const created = fixedWidthEpochSec(ctx.arrivalEpochSec + (ctx.dueTimesKnown ? dueMs / 1000 : 0));
    return `{\n    "id": "generate-${uuid4Hex(ids)}",\n    "time_created": ${pythonFloat(created)},\n    "text": ${pythonJsonString(text)}\n}`;
  };
  const events: PayloadEvent[] = decodeSteps(tokens.length, groups).map(([start, end]) => {
    const dueMs = (tokens[end - 1] as PlannedToken).dueMs;
    return { kind: 'content', tokenStart: start, tokenCount: end - start, data: chunk(joinText(tokens, start, end), dueMs), dueMs };
  });
  // The proxy relays Decode's EOS step too: its sample has no text.
  events.push({ kind: 'done', tokenStart: 0, tokenCount: 0, data: chunk('', eosDueMs), dueMs: eosDueMs });
  return events;
}

export function proxyResponseBody(tokens: readonly PlannedToken[]): string {
  return pythonJsonDumps({ response: joinText(tokens, 0, tokens.length) }, 4);
}

/**
 * The DecodeResponse of the step holding tokens [start, end); an empty range is the EOS step.
 * Token-id requests (client-side tokenization) get token ids only, as JetStream does.
 */
export function decodeMessage(tokens: readonly PlannedToken[], start: number, end: number, withText: boolean): DecodeResponseMessage {
  const tokenIds: number[] = [];
  for (let i = start; i < end; i++) tokenIds.push((tokens[i] as PlannedToken).id);
  // No `text` when it is empty: Python's protobuf never writes a proto3 string at its default,
  // so JetStream's token-id and EOS samples carry none on the wire.
  const text = withText ? joinText(tokens, start, end) : '';
  return { streamContent: { samples: [text === '' ? { tokenIds } : { text, tokenIds }] } };
}

/** The DecodeResponse messages of a request: one per step, then the EOS step. */
export function decodeMessages(tokens: readonly PlannedToken[], withText: boolean, groups?: readonly number[]): DecodeResponseMessage[] {
  const messages = decodeSteps(tokens.length, groups).map(([start, end]) => decodeMessage(tokens, start, end, withText));
  messages.push(decodeMessage(tokens, 0, 0, withText));
  return messages;
}

/** protobuf-JSON (MessageToJson): camelCase, indent 2, ASCII, default values (empty text, empty ids) omitted. */
export function protoJson(message: DecodeResponseMessage): string {
  const samples = message.streamContent.samples.map((s) => {
    const out: { text?: string; tokenIds?: number[] } = {};
    if (s.text !== undefined && s.text !== '') out.text = s.text;
    if (s.tokenIds.length > 0) out.tokenIds = s.tokenIds;
    return out;
  });
  return pythonJsonDumps({ streamContent: { samples } }, 2);
}

/**
 * Payload events of the decode messages: step i carries the tokens of step i; the EOS step
 * carries none and is due at `eosDueMs` (a decode step of its own, after the last token's).
 */
export function decodeEvents(messages: readonly DecodeResponseMessage[], tokens: readonly PlannedToken[], eosDueMs: number, groups?: readonly number[]): PayloadEvent[] {
  const steps = decodeSteps(tokens.length, groups);
  return messages.map((message, i) => {
    const step = steps[i];
    const data = protoJson(message);
    if (step === undefined) return { kind: 'done', tokenStart: 0, tokenCount: 0, data, dueMs: eosDueMs };
    const [start, end] = step;
    return { kind: 'content', tokenStart: start, tokenCount: end - start, data, dueMs: (tokens[end - 1] as PlannedToken).dueMs };
  });
}
