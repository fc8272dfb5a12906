/**
 * An API the client can drive: where requests go, what their bodies look like, and how a
 * response's payloads are framed and interpreted. One adapter per API keeps the sender, the
 * measurer and the load generator free of per-API branches.
 */
import type { UsageRequest } from '../run/bench-options.ts';

export type ApiName = 'completions' | 'chat' | 'jetstream-proxy' | 'jetstream-http' | 'jetstream-grpc';

/** What one payload (an SSE event's data, or a whole non-streamed body) means to the measurement. */
/** Payload.choice of a payload that carries several choices at once. */
export const SEVERAL_CHOICES = -1;

export interface Payload {
  /** Carries ≥ 1 output token (non-empty text, content, reasoning or tool-call delta, token ids). */
  tokenBearing: boolean;
  /** The generated text the payload carries (for tokenizer fallback). */
  text: string;
  /** Tokens the payload carries when the dialect says so itself (JetStream token ids); else null. */
  dialectTokens: number | null;
  usage: { prompt_tokens?: unknown; completion_tokens?: unknown; total_tokens?: unknown } | null;
  finishReason: string | null;
  error: string | null;
  /**
   * The choice the payload's tokens and running usage belong to (vLLM's `choices[].index`; a
   * choice without a non-negative integer index counts as 0): with n > 1 vLLM sends each
   * choice's chunk apart, its continuous usage counting that choice alone. SEVERAL_CHOICES: the payload
   * carries several choices (its usage, if any, counts them together); null: it carries none
   * (vLLM's usage-only chunk, whose usage sums every choice). Absent: an API without choices
   * (one stream of tokens, as choice 0).
   */
  choice?: number | null;
  /** The stream's terminator (`data: [DONE]`). */
  done: boolean;
  /**
   * The stream may end cleanly right after this payload without a terminator: JetStream's
   * stop-token step (token ids, no text), after which newer JetStream closes the stream with
   * no empty EOS step. Absent means false.
   */
  mayEnd?: boolean;
}

export interface RequestInput {
  model: string;
  prompt: string;
  maxTokens: number;
  stream: boolean;
  usage: UsageRequest;
  /** Ask the server to ignore end-of-sequence (default true: outputs run to max tokens). */
  ignoreEos?: boolean;
}

export interface ApiAdapter {
  name: ApiName;
  path: string;
  /**
   * A GET the API's servers answer without generating (vLLM's /v1/models, JetStream's health
   * checks), sent once, unmeasured, before a run over HTTP starts (http-request-sender.ts);
   * none for an API with a transport of its own (gRPC connects its channel instead).
   */
  readyPath?: string;
  /** How a streamed body is cut into payloads. */
  framing: 'sse' | 'json-objects';
  /** Whether a streamed response must end with an explicit terminator payload (or a payload that may end it). */
  needsTerminator: boolean;
  /** The API streams whatever the request says (JetStream's /v1/generate and gRPC Decode). */
  alwaysStreams?: boolean;
  body(input: RequestInput): string;
  /** Null when the payload is not what the API promises (a malformed stream). */
  interpret(payload: string): Payload | null;
}
