/**
 * Turns one response, fed as timestamped reads, into a RequestRecord. Pure state machine: the
 * sender feeds it from a socket, the in-memory pipeline tests feed it from a virtual clock,
 * and both get the same record for the same reads.
 */
import { requestMetrics } from '../../contracts/metrics.ts';
import { countTokens } from '../../contracts/tokenizer.ts';
import { JsonObjectDecoder, type JsonObjectHandlers, type JsonObjectText } from '../decode/json-object-decoder.ts';
import { SseDecoder, type SseEvent, type SseHandlers } from '../decode/sse-decoder.ts';
import type { Failure, FailureKind, RequestRecord, TokensPerEventSource, Usage } from '../record/request-record.ts';
import type { ApiAdapter, Payload } from '../apis/api-adapter.ts';

export interface RequestIdentity {
  index: number;
  requestId: string;
  stage: number;
  warmup: boolean;
  scheduledMs: number;
  startMs: number;
  /** The prompt length the client knows (used when the server reports no usage). */
  promptTokens: number;
}

export interface MeasureOptions {
  api: Pick<ApiAdapter, 'framing' | 'needsTerminator' | 'interpret' | 'alwaysStreams'>;
  stream: boolean;
  /** Count tokens per event with the built-in tokenizer when the server gives no counts. */
  tokenizerFallback: boolean;
}

const ERROR_BODY_LIMIT = 4096;
const SOURCE_RANK: Record<TokensPerEventSource, number> = { continuous_usage: 0, usage: 0, dialect: 1, tokenizer: 2, one_per_event: 3 };

function toUsage(raw: Payload['usage']): Usage | null {
  if (raw === null) return null;
  const { prompt_tokens: p, completion_tokens: c, total_tokens: t } = raw;
  if (typeof p !== 'number' || typeof c !== 'number') return null;
  return { promptTokens: p, completionTokens: c, totalTokens: typeof t === 'number' ? t : p + c };
}

/** Each measurer is its decoder's handler: no closure per request on the measuring path. */
export class ResponseMeasurer implements SseHandlers, JsonObjectHandlers {
  readonly #identity: RequestIdentity;
  readonly #options: MeasureOptions;
  readonly #decoder: SseDecoder | JsonObjectDecoder;
  /** The body is a stream of payloads (requested, or the API always streams). */
  readonly #stream: boolean;
  #status: number | null = null;
  #retryAfter: string | null = null;
  #firstByteMs: number | null = null;
  #lastDataMs: number | null = null;
  #failure: Failure | null = null;
  #done = false;
  #usage: Usage | null = null;
  #finishReason: string | null = null;
  #runningCompletion = 0;
  #source: TokensPerEventSource = 'continuous_usage';
  readonly #eventTimes: number[] = [];
  readonly #eventTokens: number[] = [];
  /** Index of the token-bearing event the decoder dispatched last, or -1 when its last event bore none. */
  #lastEventIndex = -1;
  /** Texts of events whose counts wait for the tokenizer, by event index (made on first need). */
  #pendingTexts: Map<number, string> | null = null;
  #bodyChunks: Buffer[] = [];
  #bodyBytes = 0;

  constructor(identity: RequestIdentity, options: MeasureOptions) {
    this.#identity = identity;
    this.#options = options;
    this.#stream = options.stream || options.api.alwaysStreams === true;
    this.#decoder = options.api.framing === 'json-objects' ? new JsonObjectDecoder(this) : new SseDecoder(this);
  }

  /** For the decoder only: one complete SSE event. */
  onEvent(event: SseEvent): void {
    this.#onEvent(event.data, event.atMs);
  }

  /** For the decoder only: the event dispatched last completed with this later read (a CRLF cut between CR and LF). */
  onEventLastByte(atMs: number): void {
    if (this.#lastEventIndex >= 0) this.#eventTimes[this.#lastEventIndex] = atMs;
  }

  /** For the decoder only: one complete JSON object. */
  onObject(object: JsonObjectText): void {
    this.#onEvent(object.text, object.atMs);
  }

  /** `retryAfter`: the response's Retry-After header, kept in a refusal's failure message. */
  response(status: number, retryAfter: string | null = null): void {
    this.#status = status;
    this.#retryAfter = retryAfter;
  }

  data(chunk: Uint8Array, atMs: number): void {
    if (this.#firstByteMs === null) this.#firstByteMs = atMs;
    this.#lastDataMs = atMs;
    const status = this.#status ?? 0;
    if (status < 200 || status >= 300 || !this.#stream) {
      if (this.#bodyBytes < (this.#stream ? ERROR_BODY_LIMIT : Infinity)) {
        this.#bodyChunks.push(Buffer.from(chunk));
        this.#bodyBytes += chunk.byteLength;
      }
      return;
    }
    this.#decoder.feed(chunk, atMs);
  }

  /** The response ended normally (all bytes read). */
  end(atMs: number): RequestRecord {
    const status = this.#status ?? 0;
    if (status < 200 || status >= 300) return this.#finish(atMs, this.#httpFailure(status));
    if (!this.#stream) return this.#finishBody(atMs);
    const pending = this.#decoder.end();
    if ('strayBytes' in pending) {
      if (pending.strayBytes > 0) this.#fail('malformed', `${pending.strayBytes} bytes between JSON objects are not JSON`);
      if (pending.pendingBytes > 0) this.#fail('truncated', `stream ended inside a JSON object (${pending.pendingBytes} bytes)`);
      if (this.#failure === null && !this.#done && this.#options.api.needsTerminator) this.#fail('truncated', 'stream ended without its end-of-stream object');
      return this.#finish(atMs, this.#failure);
    }
    if (this.#failure === null && !this.#done && this.#options.api.needsTerminator) {
      const detail = pending.pendingEvent || pending.pendingBytes > 0 ? ` (${pending.pendingBytes} bytes of an unfinished event)` : '';
      this.#fail('truncated', `stream ended without data: [DONE]${detail}`);
    }
    return this.#finish(atMs, this.#failure);
  }

  /** The request failed in transport (refused, reset, timed out). */
  error(kind: FailureKind, message: string, atMs: number): RequestRecord {
    if (this.#status !== null && kind === 'connect_error') kind = 'disconnected';
    if (this.#failure === null || kind === 'timeout') this.#failure = { kind, message };
    return this.#finish(atMs, this.#failure);
  }

  #onEvent(data: string, atMs: number): void {
    this.#lastEventIndex = -1;
    if (this.#done) return;
    const payload = this.#options.api.interpret(data);
    if (payload === null) return this.#fail('malformed', `event data is not a JSON object: ${data.slice(0, 200)}`);
    if (payload.done) {
      this.#done = true;
      return;
    }
    if (payload.error !== null) return this.#fail('stream_error', payload.error);
    if (payload.finishReason !== null) this.#finishReason = payload.finishReason;
    const usage = toUsage(payload.usage);
    if (!payload.tokenBearing) {
      if (usage !== null) {
        this.#usage = usage;
        this.#runningCompletion = usage.completionTokens;
      }
      return;
    }
    let tokens = 1;
    let source: TokensPerEventSource = 'one_per_event';
    if (payload.dialectTokens !== null && payload.dialectTokens > 0) {
      tokens = payload.dialectTokens;
      source = 'dialect';
    }
    if (usage !== null) {
      this.#usage = usage;
      const delta = usage.completionTokens - this.#runningCompletion;
      this.#runningCompletion = usage.completionTokens;
      if (delta > 0) {
        tokens = delta;
        source = 'continuous_usage';
      }
    }
    if (source === 'one_per_event' && this.#options.tokenizerFallback) {
      (this.#pendingTexts ??= new Map()).set(this.#eventTimes.length, payload.text);
      source = 'tokenizer';
    }
    if (SOURCE_RANK[source] > SOURCE_RANK[this.#source]) this.#source = source;
    this.#lastEventIndex = this.#eventTimes.length;
    this.#eventTimes.push(atMs);
    this.#eventTokens.push(tokens);
  }

  #fail(kind: FailureKind, message: string): void {
    if (this.#failure === null) this.#failure = { kind, message };
  }

  #httpFailure(status: number): Failure {
    const body = Buffer.concat(this.#bodyChunks).toString('utf8');
    let message = body.slice(0, 500);
    try {
      const parsed = JSON.parse(body) as { error?: { message?: unknown } | string; detail?: unknown; message?: unknown };
      const inner = typeof parsed.error === 'object' && parsed.error !== null ? parsed.error.message : parsed.error;
      const candidate = inner ?? parsed.message ?? parsed.detail;
      if (candidate !== undefined) message = typeof candidate === 'string' ? candidate : JSON.stringify(candidate);
    } catch {
      // Keep the raw body text as the message.
    }
    // A 429 or 503 says when to come back; a gateway test wants to see it.
    if (this.#retryAfter !== null) message += ` (Retry-After: ${this.#retryAfter})`;
    return { kind: `http_${status}`, message };
  }

  #finishBody(atMs: number): RequestRecord {
    const text = Buffer.concat(this.#bodyChunks).toString('utf8');
    const payload = this.#options.api.interpret(text);
    if (payload === null || payload.done) return this.#finish(atMs, { kind: 'malformed', message: `response body is not a JSON object: ${text.slice(0, 200)}` });
    if (payload.error !== null) return this.#finish(atMs, { kind: 'stream_error', message: payload.error });
    this.#usage = toUsage(payload.usage);
    this.#finishReason = payload.finishReason;
    if (payload.tokenBearing) {
      // The one event's count, from the best source the body has (recorded as such).
      let tokens = 1;
      let source: TokensPerEventSource = 'one_per_event';
      if (this.#usage !== null) {
        tokens = this.#usage.completionTokens;
        source = 'usage';
      } else if (payload.dialectTokens !== null && payload.dialectTokens > 0) {
        tokens = payload.dialectTokens;
        source = 'dialect';
      } else if (this.#options.tokenizerFallback) {
        tokens = countTokens(payload.text);
        source = 'tokenizer';
      }
      this.#source = source;
      this.#eventTimes.push(this.#lastDataMs ?? atMs);
      this.#eventTokens.push(Math.max(tokens, 1));
    }
    return this.#finish(atMs, null);
  }

  #finish(endMs: number, failure: Failure | null): RequestRecord {
    if (this.#pendingTexts !== null) for (const [index, text] of this.#pendingTexts) this.#eventTokens[index] = Math.max(countTokens(text), 1);
    const events = this.#eventTimes.map((atMs, i) => ({ atMs, tokens: this.#eventTokens[i] as number }));
    const eventSum = this.#eventTokens.reduce((a, b) => a + b, 0);
    const usage = this.#usage;
    const outputTokens = usage?.completionTokens ?? eventSum;
    const id = this.#identity;
    const record: RequestRecord = {
      index: id.index,
      requestId: id.requestId,
      stage: id.stage,
      warmup: id.warmup,
      scheduledMs: id.scheduledMs,
      startMs: id.startMs,
      firstByteMs: this.#firstByteMs,
      endMs,
      status: this.#status,
      failure,
      events,
      tokensPerEventSource: events.length === 0 ? 'one_per_event' : this.#source,
      outputTokens,
      outputTokensSource: usage !== null ? 'usage' : 'events',
      // The client's count is the events' sum even when it is 0: usage claiming tokens no event carried disagrees too.
      tokenCountMismatch: usage !== null && usage.completionTokens !== eventSum,
      promptTokens: usage?.promptTokens ?? id.promptTokens,
      promptTokensSource: usage !== null ? 'usage' : 'client',
      usage,
      finishReason: this.#finishReason,
      metrics: null,
    };
    if (failure === null) record.metrics = requestMetrics({ startMs: id.startMs, endMs, events, outputTokens });
    this.#bodyChunks = [];
    return record;
  }
}
