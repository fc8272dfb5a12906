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

/** What the response's headers say, as far as the measurement cares. */
export interface ResponseHeaderFacts {
  /** Retry-After, kept in a refusal's failure message. */
  retryAfter?: string | null;
  /** Location, kept in a redirect's failure message (a POST is never followed). */
  location?: string | null;
  /** Content-Type, named when a streamed body cannot be read as the API's stream. */
  contentType?: string | null;
  /** Content-Encoding: the client asks for none, so any but identity is unreadable. */
  contentEncoding?: string | null;
}

/** How much of a streamed body is kept until its first payload is read (quoted if none ever is). */
const BODY_START_LIMIT = 4096;
/**
 * How much of a non-2xx body is kept for its failure's message (a validation error may quote a
 * long prompt back); the rest is read and dropped: an error page that never ends costs no more.
 */
const ERROR_BODY_LIMIT = 1024 * 1024;
/**
 * The largest event (SSE) or object (JSON objects) the client reads, and the largest non-streamed
 * body: past them the request fails as malformed and is cut off, where a server that never ends
 * a line or a body would otherwise grow one request's memory until the process dies. Far above
 * any real answer: a vLLM event is a few KB with logprobs, a whole 131,072-token body with
 * top-20 logprobs about 100 MB.
 */
export const MAX_EVENT_BYTES = 64 * 1024 * 1024;
export const MAX_BODY_BYTES = 256 * 1024 * 1024;
/** How much of an unreadable body a failure message quotes. */
const BODY_QUOTE_CHARS = 80;
const SOURCE_RANK: Record<TokensPerEventSource, number> = { continuous_usage: 0, usage: 0, dialect: 1, tokenizer: 2, one_per_event: 3 };
const USAGE_COUNTS = ['prompt_tokens', 'completion_tokens', 'total_tokens'] as const;

/**
 * The payload's usage, null when it has none (or lacks the prompt or completion count), or — a
 * string — why it is malformed: a count that is present must be a non-negative integer (DESIGN
 * §4: nothing coerced; a negative or fractional N would make every rate a lie).
 */
/** A usage as read: `promptFromClient` when it gave completion_tokens without prompt_tokens. */
type ReadUsage = Usage & { promptFromClient?: true };

/** One choice's counts: its running usage as the events credited it, and the last usage it showed. */
interface ChoiceCounts {
  running: number;
  lastUsage: number;
}

/**
 * The usage a payload carries, or null when it has no completion count. A server that gives
 * completion_tokens without prompt_tokens still says how many tokens it generated (DESIGN §4:
 * N is `usage.completion_tokens` when present): the prompt count is then the client's.
 */
function readUsage(raw: Payload['usage'], clientPromptTokens: number): ReadUsage | null | string {
  if (raw === null) return null;
  for (const key of USAGE_COUNTS) {
    const value = raw[key];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
      const shown = typeof value === 'number' ? String(value) : (JSON.stringify(value) ?? String(value));
      return `usage.${key} is ${shown.slice(0, 80)}, not a non-negative integer`;
    }
  }
  const { prompt_tokens: p, completion_tokens: c, total_tokens: t } = raw;
  if (typeof c !== 'number') return null;
  if (typeof p !== 'number') return { promptTokens: clientPromptTokens, completionTokens: c, totalTokens: typeof t === 'number' ? t : clientPromptTokens + c, promptFromClient: true };
  return { promptTokens: p, completionTokens: c, totalTokens: typeof t === 'number' ? t : p + c };
}

/**
 * The message of an error body: `{"error": {"message"}}`, `{"error": "…"}`, a flat
 * `{"message"}` or FastAPI's `{"detail"}`; null when the text is not JSON or has none of them.
 */
function errorMessageOf(text: string): string | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null) return null;
  const { error, message, detail } = parsed as { error?: unknown; message?: unknown; detail?: unknown };
  const inner = typeof error === 'object' && error !== null ? (error as { message?: unknown }).message : error;
  const candidate = inner ?? message ?? detail;
  if (candidate === undefined || candidate === null) return null;
  return typeof candidate === 'string' ? candidate : JSON.stringify(candidate);
}

/** An encoding the client can read: none, or identity (what its `accept-encoding` asks for). */
function readableEncoding(encoding: string | null | undefined): boolean {
  const value = encoding?.trim().toLowerCase() ?? '';
  return value === '' || value === 'identity';
}

/** Each measurer is its decoder's handler: no closure per request on the measuring path. */
export class ResponseMeasurer implements SseHandlers, JsonObjectHandlers {
  readonly #identity: RequestIdentity;
  readonly #options: MeasureOptions;
  readonly #decoder: SseDecoder | JsonObjectDecoder;
  /** The body is a stream of payloads (requested, or the API always streams). */
  readonly #stream: boolean;
  #status: number | null = null;
  #headers: ResponseHeaderFacts = {};
  /** The body is in an encoding the client cannot read: it is not decoded at all. */
  #unreadable = false;
  #firstByteMs: number | null = null;
  #lastDataMs: number | null = null;
  #failure: Failure | null = null;
  #done = false;
  /** The last payload read may end the stream without its terminator (Payload.mayEnd). */
  #mayEndHere = false;
  #usage: ReadUsage | null = null;
  #finishReason: string | null = null;
  #finishReasonMs: number | null = null;
  /** The payload the decoder dispatched last carried a finish reason (its arrival is corrected with the event's). */
  #lastEventFinished = false;
  /** …and its text-less growth was kept (the last triple of #textlessGrowth is its). */
  #lastEventGrew = false;
  /**
   * Running counts per choice (Payload.choice): vLLM's continuous usage on a chunk counts that
   * chunk's choice alone (`previous_num_tokens[i]`), so with n > 1 an event's tokens are the
   * delta of its own choice's count. The first choice named keeps its counts in #firstCounts;
   * #otherCounts is made when a second one appears (at most one entry per choice).
   */
  #firstChoice: number | null = null;
  readonly #firstCounts: ChoiceCounts = { running: 0, lastUsage: 0 };
  #otherCounts: Map<number, ChoiceCounts> | null = null;
  /** The usage of a payload with no choice (vLLM's usage-only chunk: with n > 1, the sum over choices). */
  #finalUsage: ReadUsage | null = null;
  /**
   * Whether the server sends a running usage on every event, decided by the stream's first
   * token-bearing event: usage there is continuous; usage that first appears later is the final count.
   */
  #continuousUsage: boolean | null = null;
  /** Payloads the API's reading accepted (the terminator included). */
  #payloads = 0;
  #source: TokensPerEventSource = 'continuous_usage';
  readonly #eventTimes: number[] = [];
  readonly #eventTokens: number[] = [];
  /** Index of the token-bearing event the decoder dispatched last, or -1 when its last event bore none. */
  #lastEventIndex = -1;
  /**
   * Running-usage growth on text-less finish chunks since the last token-bearing event, as
   * (arrival, running count, choice) triples: vLLM's EOS is such a chunk, its usage one higher.
   * Credited to those chunks when no later text of their choice carries it (see
   * #creditTrailingGrowth): at the next text of another choice, or at the end.
   */
  #textlessGrowth: number[] | null = null;
  /** Every token-bearing event so far carried the running usage (a growth is measured against it). */
  #usageOnEveryEvent = true;
  /** A text-less payload came without usage: the stream's usage is not a running one. */
  #textlessWithoutUsage = false;
  /** Texts of events whose counts wait for the tokenizer, by event index (made on first need). */
  #pendingTexts: Map<number, string> | null = null;
  #bodyChunks: Buffer[] = [];
  #bodyBytes = 0;
  /** The response passed a size bound: nothing more is read, and its reader should be cut off. */
  #gaveUp = false;

  constructor(identity: RequestIdentity, options: MeasureOptions) {
    this.#identity = identity;
    this.#options = options;
    this.#stream = options.stream || options.api.alwaysStreams === true;
    this.#decoder = options.api.framing === 'json-objects' ? new JsonObjectDecoder(this) : new SseDecoder(this);
  }

  /** For the decoder only: one complete SSE event. */
  onEvent(event: SseEvent): void {
    if (event.event === 'error') return this.#onErrorEvent(event.data);
    this.#onEvent(event.data, event.atMs);
  }

  /** For the decoder only: an `error:` line (llama.cpp's in-stream error). */
  onErrorField(value: string): void {
    this.#onErrorEvent(value);
  }

  /**
   * Whether the usage seen so far is a running one, on every event: decided by the first
   * token-bearing event, or, before any (every chunk's text held back behind a stop string that
   * then matched), by every text-less payload having carried one.
   */
  #runningUsageSoFar(): boolean {
    if (this.#continuousUsage === null) return !this.#textlessWithoutUsage;
    return this.#continuousUsage && this.#usageOnEveryEvent;
  }

  /** For the decoder only: the event dispatched last completed with this later read (a CRLF cut between CR and LF). */
  onEventLastByte(atMs: number): void {
    if (this.#lastEventIndex >= 0) this.#eventTimes[this.#lastEventIndex] = atMs;
    if (this.#lastEventFinished) this.#finishReasonMs = atMs;
    const growth = this.#textlessGrowth;
    if (this.#lastEventGrew && growth !== null) growth[growth.length - 3] = atMs;
  }

  /** For the decoder only: one complete JSON object. */
  onObject(object: JsonObjectText): void {
    this.#onEvent(object.text, object.atMs);
  }

  response(status: number, headers: ResponseHeaderFacts = {}): void {
    this.#status = status;
    this.#headers = headers;
    if (status >= 200 && status < 300 && !readableEncoding(headers.contentEncoding)) {
      this.#unreadable = true;
      this.#fail('malformed', `response has content-encoding ${JSON.stringify(headers.contentEncoding)}, which the client cannot read (it asks for identity and decodes no content coding)`);
    }
  }

  data(chunk: Uint8Array, atMs: number): void {
    if (this.#firstByteMs === null) this.#firstByteMs = atMs;
    this.#lastDataMs = atMs;
    if (this.#unreadable || this.#gaveUp) return;
    const status = this.#status ?? 0;
    if (status < 200 || status >= 300) {
      if (this.#bodyBytes < ERROR_BODY_LIMIT) this.#keep(chunk);
      return;
    }
    if (!this.#stream) {
      if (this.#bodyBytes + chunk.byteLength > MAX_BODY_BYTES) return this.#giveUp(`the response body passed ${MAX_BODY_BYTES / 1024 / 1024} MiB, the most the client reads`);
      this.#keep(chunk);
      return;
    }
    // Until the first payload is read, keep the body's start: if none ever is, the failure
    // quotes it (an HTML error page, a JSON error, a non-streamed answer).
    if (this.#payloads === 0 && this.#bodyBytes < BODY_START_LIMIT) this.#keep(chunk);
    this.#decoder.feed(chunk, atMs);
    if (this.#payloads > 0 && this.#bodyChunks.length > 0) this.#bodyChunks = [];
    if (this.#decoder.bufferedLength > MAX_EVENT_BYTES) {
      const what = this.#options.api.framing === 'json-objects' ? 'a JSON object' : 'an event';
      this.#giveUp(`${what} passed ${MAX_EVENT_BYTES / 1024 / 1024} MiB without its end, the most the client reads`);
    }
  }

  /** True once the response passed a size bound (see MAX_EVENT_BYTES): its reader should stop and cut the request off. */
  get gaveUp(): boolean {
    return this.#gaveUp;
  }

  #giveUp(message: string): void {
    this.#gaveUp = true;
    this.#fail('malformed', message);
    // A non-streamed body's bytes go (a stream keeps only its first few KB).
    if (!this.#stream) this.#bodyChunks = [];
  }

  /**
   * The request is cut off: after a size bound (gaveUp, whose failure stands) or with `failure`
   * (its measuring threw). Its record as it stands.
   */
  abandon(atMs: number, failure?: Failure): RequestRecord {
    if (failure !== undefined) this.#fail(failure.kind, failure.message);
    return this.#finish(atMs, this.#failure);
  }

  #keep(chunk: Uint8Array): void {
    this.#bodyChunks.push(Buffer.from(chunk));
    this.#bodyBytes += chunk.byteLength;
  }

  /** The response ended normally (all bytes read). */
  end(atMs: number): RequestRecord {
    if (this.#gaveUp) return this.#finish(atMs, this.#failure);
    const status = this.#status ?? 0;
    if (status < 200 || status >= 300) return this.#finish(atMs, this.#httpFailure(status));
    if (this.#unreadable) return this.#finish(atMs, this.#failure);
    if (!this.#stream) return this.#finishBody(atMs);
    const pending = this.#decoder.end();
    if ('strayBytes' in pending) {
      if (pending.strayBytes > 0) this.#fail('malformed', `${pending.strayBytes} bytes between JSON objects are not JSON`);
      if (pending.pendingBytes > 0) this.#fail('truncated', `stream ended inside a JSON object (${pending.pendingBytes} bytes)`);
      if (this.#failure === null && !this.#done && !this.#mayEndHere && this.#options.api.needsTerminator) this.#fail('truncated', 'stream ended without its end-of-stream object');
    } else if (this.#failure === null && !this.#done && !this.#mayEndHere && this.#options.api.needsTerminator) {
      const detail = pending.pendingBytes > 0 ? ` (${pending.pendingBytes} bytes of an unfinished event)` : pending.pendingEvent ? ' (an event whose blank line never came)' : '';
      this.#fail('truncated', `stream ended without data: [DONE]${this.#payloads === 0 ? '' : detail}`);
    }
    return this.#finish(atMs, this.#failure === null || this.#payloads > 0 ? this.#failure : this.#unreadStreamFailure(this.#failure));
  }

  /**
   * A streamed body of which not one payload could be read: a JSON error body (a server that
   * answers a stream request with `application/json` `{"error": …}`) is the server's error;
   * anything else keeps its kind and names the content-type and the body's start, which say
   * more than the decoder's view of bytes that were never an event stream.
   */
  #unreadStreamFailure(failure: Failure): Failure {
    if (failure.kind !== 'truncated' && failure.kind !== 'malformed') return failure;
    const contentType = this.#headers.contentType ?? null;
    const body = Buffer.concat(this.#bodyChunks).toString('utf8');
    if (contentType !== null && /^\s*application\/json\b/i.test(contentType)) {
      const message = errorMessageOf(body);
      if (message !== null) return { kind: 'stream_error', message };
    }
    const start = body.length === 0 ? 'an empty body' : `a body starting ${JSON.stringify(body.slice(0, BODY_QUOTE_CHARS))}`;
    return { kind: failure.kind, message: `${failure.message}: content-type ${contentType ?? '(none)'}, ${start}` };
  }

  /** The request failed in transport (refused, reset, timed out). */
  error(kind: FailureKind, message: string, atMs: number): RequestRecord {
    if (this.#status !== null && kind === 'connect_error') kind = 'disconnected';
    if (this.#failure === null || kind === 'timeout') this.#failure = { kind, message };
    return this.#finish(atMs, this.#failure);
  }

  /** An SSE event named `error` is the server's in-stream error, whatever its data says. */
  #onErrorEvent(data: string): void {
    this.#lastEventIndex = -1;
    this.#lastEventFinished = false;
    this.#lastEventGrew = false;
    this.#fail('stream_error', errorMessageOf(data) ?? (data.slice(0, 200) || 'an error event without data'));
  }

  #onEvent(data: string, atMs: number): void {
    this.#lastEventIndex = -1;
    this.#lastEventFinished = false;
    this.#lastEventGrew = false;
    const payload = this.#options.api.interpret(data);
    if (payload === null) return this.#fail('malformed', `event data is not a payload this API sends: ${data.slice(0, 200)}`);
    this.#payloads++;
    this.#mayEndHere = payload.mayEnd === true;
    if (payload.done) {
      this.#done = true;
      return;
    }
    if (payload.error !== null) return this.#fail('stream_error', payload.error);
    if (this.#done) {
      // Tokens after the terminator: the stream is not what it claimed (a late usage or role chunk is harmless).
      if (payload.tokenBearing) this.#fail('malformed', `a token-bearing payload came after the stream's terminator: ${data.slice(0, 200)}`);
      return;
    }
    if (payload.finishReason !== null) {
      this.#finishReason = payload.finishReason;
      this.#finishReasonMs = atMs;
      this.#lastEventFinished = true;
    }
    const usage = readUsage(payload.usage, this.#identity.promptTokens);
    if (typeof usage === 'string') return this.#fail('malformed', usage);
    if (payload.tokenBearing) this.#continuousUsage ??= usage !== null;
    // An API without choices is one stream (choice 0); null: a payload with no choice.
    const choice = payload.choice === undefined ? 0 : payload.choice;
    const counts = choice === null ? null : this.#countsOf(choice);
    if (usage !== null && this.#continuousUsage === true) {
      // A choice's running count never goes below its last one, nor below a final count already
      // read; the final count (no choice) never below the choices' counts together.
      const lastSeen = counts === null ? this.#choicesUsageSum() : Math.max(counts.lastUsage, this.#finalUsage?.completionTokens ?? 0);
      if (usage.completionTokens < lastSeen) {
        return this.#fail('malformed', `usage.completion_tokens went down from ${lastSeen} to ${usage.completionTokens} (a running usage never decreases)`);
      }
    }
    if (usage !== null) {
      if (counts === null) this.#finalUsage = usage;
      else counts.lastUsage = usage.completionTokens;
    }
    if (!payload.tokenBearing) {
      // The running count stays where the last token-bearing event left it: vLLM sends a chunk
      // with no text while usage grows (a token ending inside a UTF-8 character, a held-back stop
      // string), and those tokens reach the reader with the next text, so they are that event's.
      if (usage !== null) {
        // Only a choice's finish chunk: a usage-only chunk (`choices: []`) carries no token, and
        // its count may sum several choices.
        if (payload.finishReason !== null && counts !== null && this.#runningUsageSoFar()) {
          const seen = this.#grownTo(choice as number, counts);
          if (usage.completionTokens > seen) {
            (this.#textlessGrowth ??= []).push(atMs, usage.completionTokens, choice as number);
            this.#lastEventGrew = true;
          }
        }
        this.#usage = usage;
      } else {
        this.#textlessWithoutUsage = true;
      }
      return;
    }
    // Token-bearing: never without a choice (text comes in one); read as choice 0 if it were.
    const own = counts ?? this.#countsOf(0);
    const ownChoice = choice ?? 0;
    if (this.#textlessGrowth !== null) this.#settleGrowth(ownChoice);
    if (usage === null && this.#continuousUsage === true) this.#usageOnEveryEvent = false;
    let tokens = 1;
    let source: TokensPerEventSource = 'one_per_event';
    if (payload.dialectTokens !== null && payload.dialectTokens > 0) {
      tokens = payload.dialectTokens;
      source = 'dialect';
    }
    if (usage !== null) {
      this.#usage = usage;
      // Only a running usage counts this event's tokens; a final count on a later event does not.
      if (this.#continuousUsage === true) {
        const delta = usage.completionTokens - own.running;
        own.running = usage.completionTokens;
        if (delta > 0) {
          tokens = delta;
          source = 'continuous_usage';
        }
      }
    }
    // A running usage missing from one event: that event's token is the running count's too, or
    // the next usage's delta would credit it a second time.
    if (usage === null && this.#continuousUsage === true) own.running += tokens;
    if (source === 'one_per_event' && this.#options.tokenizerFallback) {
      (this.#pendingTexts ??= new Map()).set(this.#eventTimes.length, payload.text);
      source = 'tokenizer';
    }
    if (SOURCE_RANK[source] > SOURCE_RANK[this.#source]) this.#source = source;
    this.#lastEventIndex = this.#eventTimes.length;
    this.#eventTimes.push(atMs);
    this.#eventTokens.push(tokens);
  }

  /**
   * Growth no later text carried: its tokens reached the reader with the text-less events that
   * showed it. vLLM streams the EOS token it counts in `completion_tokens` this way, in a finish
   * chunk with empty text; left out, every naturally stopped request would disagree with usage and
   * lose its last gap from TPOT (a one-word answer's TPOT would be an invented 0).
   */
  #creditTrailingGrowth(growth: readonly number[], except: number | null = null): void {
    this.#textlessGrowth = null;
    for (let i = 0; i < growth.length; i += 3) {
      const choice = growth[i + 2] as number;
      if (choice === except) continue;
      const counts = this.#countsOf(choice);
      const running = growth[i + 1] as number;
      this.#eventTimes.push(growth[i] as number);
      this.#eventTokens.push(running - counts.running);
      counts.running = running;
    }
  }

  /**
   * A token-bearing event of `choice` came after text-less growth: that choice's growth is in
   * this event's delta (its text carries those tokens); another choice's finished with its own
   * chunks, which arrived before this event, so it is credited to them now (arrival order kept).
   */
  #settleGrowth(choice: number): void {
    const growth = this.#textlessGrowth as number[];
    this.#textlessGrowth = null;
    for (let i = 2; i < growth.length; i += 3) {
      if (growth[i] !== choice) return this.#creditTrailingGrowth(growth, choice);
    }
  }

  /** The running count `choice` shows so far: its last text-less growth, else its running count. */
  #grownTo(choice: number, counts: ChoiceCounts): number {
    const growth = this.#textlessGrowth;
    if (growth !== null) for (let i = growth.length - 1; i >= 2; i -= 3) if (growth[i] === choice) return growth[i - 1] as number;
    return counts.running;
  }

  /** `choice`'s counts; the map of the others is made when a second choice appears. */
  #countsOf(choice: number): ChoiceCounts {
    if (this.#firstChoice === choice) return this.#firstCounts;
    if (this.#firstChoice === null) {
      this.#firstChoice = choice;
      return this.#firstCounts;
    }
    const others = (this.#otherCounts ??= new Map());
    let counts = others.get(choice);
    if (counts === undefined) others.set(choice, (counts = { running: 0, lastUsage: 0 }));
    return counts;
  }

  /** The choices' last usage counts together (one choice: its own). */
  #choicesUsageSum(): number {
    let sum = this.#firstCounts.lastUsage;
    if (this.#otherCounts !== null) for (const counts of this.#otherCounts.values()) sum += counts.lastUsage;
    return sum;
  }

  /**
   * The usage N comes from: the last one read — with several choices under a running usage, the
   * final usage-only chunk's sum, or without it (a server or fault that drops it) the sum of every
   * choice's last count, each of which counts its choice alone.
   */
  #outputUsage(): ReadUsage | null {
    const usage = this.#usage;
    if (usage === null || this.#otherCounts === null || this.#continuousUsage === false) return usage;
    if (this.#finalUsage !== null) return this.#finalUsage;
    const sum = this.#choicesUsageSum();
    return { ...usage, completionTokens: sum, totalTokens: usage.promptTokens + sum };
  }

  #fail(kind: FailureKind, message: string): void {
    if (this.#failure === null) this.#failure = { kind, message };
  }

  #httpFailure(status: number): Failure {
    const body = Buffer.concat(this.#bodyChunks).toString('utf8');
    const parts = [errorMessageOf(body) ?? body.slice(0, 500)];
    const { retryAfter, location } = this.#headers;
    // A 429 or 503 says when to come back; a gateway test wants to see it.
    if (status >= 400 && typeof retryAfter === 'string') parts.push(`(Retry-After: ${retryAfter})`);
    // A redirect is never followed (the request is a POST): say where it pointed.
    if (status >= 300 && status < 400) parts.push(typeof location === 'string' ? `(Location: ${location})` : '(no Location header)');
    return { kind: `http_${status}`, message: parts.filter((part) => part !== '').join(' ') };
  }

  #finishBody(atMs: number): RequestRecord {
    const text = Buffer.concat(this.#bodyChunks).toString('utf8');
    const payload = this.#options.api.interpret(text);
    if (payload === null || payload.done) return this.#finish(atMs, { kind: 'malformed', message: `response body is not a payload this API sends: ${text.slice(0, 200)}` });
    if (payload.error !== null) return this.#finish(atMs, { kind: 'stream_error', message: payload.error });
    const usage = readUsage(payload.usage, this.#identity.promptTokens);
    if (typeof usage === 'string') return this.#finish(atMs, { kind: 'malformed', message: usage });
    this.#usage = usage;
    this.#finishReason = payload.finishReason;
    // The body's one payload arrived with its last byte, as its event does.
    this.#finishReasonMs = payload.finishReason === null ? null : (this.#lastDataMs ?? atMs);
    // A body whose text is empty while its usage counts tokens (a stop string that matched at
    // once; the EOS) still delivered them, with its last byte: its one event carries them, as a
    // stream's text-less finish chunk carries its running usage's growth.
    const counted = this.#usage !== null && this.#usage.completionTokens > 0;
    if (payload.tokenBearing || counted) {
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
    if (this.#textlessGrowth !== null) this.#creditTrailingGrowth(this.#textlessGrowth);
    if (this.#pendingTexts !== null) for (const [index, text] of this.#pendingTexts) this.#eventTokens[index] = Math.max(countTokens(text), 1);
    const events = this.#eventTimes.map((atMs, i) => ({ atMs, tokens: this.#eventTokens[i] as number }));
    const eventSum = this.#eventTokens.reduce((a, b) => a + b, 0);
    const usage = this.#outputUsage();
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
      promptTokensSource: usage !== null && usage.promptFromClient !== true ? 'usage' : 'client',
      // Without prompt_tokens from the server the record's usage holds the client's (promptTokensSource says so).
      usage: usage === null ? null : { promptTokens: usage.promptTokens, completionTokens: usage.completionTokens, totalTokens: usage.totalTokens },
      finishReason: this.#finishReason,
      finishReasonMs: this.#finishReasonMs,
      metrics: null,
      ...(this.#stream ? {} : { streamed: false }),
    };
    // N = 0 from usage although events carried text: no output token to time (DESIGN §4 defines
    // TTFT for ≥ 1 output token), so no TTFT and no gaps; the mismatch is counted above.
    if (failure === null) record.metrics = requestMetrics({ startMs: id.startMs, endMs, events, outputTokens });
    this.#bodyChunks = [];
    return record;
  }
}
