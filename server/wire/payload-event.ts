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
 * id, model and null fields around one choice's index and text): the shared head, key and tail
 * are encoded once per response and framing copies them; per event only the choice index and
 * the text's JSON string vary, and a short text's JSON bytes come from a cache (jsonStringBytes),
 * since generated texts repeat (the vocabulary). The payload is
 * `head + choiceIndex + key + JSON.stringify(text) + tail`; `data` gives it as one string for
 * whatever needs text (faults, non-plain framing).
 */
export class SplitPayload implements PayloadEvent {
  constructor(
    readonly kind: EventKind,
    readonly tokenStart: number,
    readonly tokenCount: number,
    readonly head: SharedPayloadPart,
    readonly choiceIndex: number,
    readonly key: SharedPayloadPart,
    readonly text: string,
    readonly tail: SharedPayloadPart,
    readonly dueMs: number,
  ) {}

  get data(): string {
    return `${this.head.text}${this.choiceIndex}${this.key.text}${JSON.stringify(this.text)}${this.tail.text}`;
  }
}

/** Texts at most this long are cached by jsonStringBytes; the cache is emptied when it holds this many. */
const CACHED_TEXT_LENGTH = 32;
const CACHED_TEXTS = 4096;
const jsonStrings = new Map<string, Buffer>();

/**
 * The UTF-8 bytes of `JSON.stringify(text)`. Short texts are cached: framing asks for the same
 * few hundred vocabulary tokens millions of times, and building, stringifying and encoding each
 * one was a fifth of planning a response. The cache is bounded (echoed prompts bring any text).
 */
export function jsonStringBytes(text: string): Buffer {
  if (text.length > CACHED_TEXT_LENGTH) return Buffer.from(JSON.stringify(text), 'utf8');
  let bytes = jsonStrings.get(text);
  if (bytes === undefined) {
    if (jsonStrings.size >= CACHED_TEXTS) jsonStrings.clear();
    bytes = Buffer.from(JSON.stringify(text), 'utf8');
    jsonStrings.set(text, bytes);
  }
  return bytes;
}

/** A run of payload text shared by many events, with its UTF-8 bytes. */
export class SharedPayloadPart {
  readonly bytes: Buffer;
  /** `prefix + text` as bytes, for the last prefix asked for (framing's `data: `). */
  #prefixed: Buffer | null = null;
  #prefix = '';
  constructor(readonly text: string) {
    this.bytes = Buffer.from(text, 'utf8');
  }

  /** The bytes of `prefix + text`, built once per prefix in a row (a response's events share both). */
  prefixedBytes(prefix: string): Buffer {
    if (this.#prefixed === null || this.#prefix !== prefix) {
      this.#prefixed = Buffer.from(prefix + this.text, 'utf8');
      this.#prefix = prefix;
    }
    return this.#prefixed;
  }
}

/** The same event with its payload as one string (for code that rewrites events). */
export function plainPayload(event: PayloadEvent): PayloadEvent {
  return event instanceof SplitPayload ? { kind: event.kind, tokenStart: event.tokenStart, tokenCount: event.tokenCount, data: event.data, dueMs: event.dueMs } : event;
}
