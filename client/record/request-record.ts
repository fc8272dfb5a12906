/**
 * One request as the client saw it (inference-perf keeps the same separation of scheduled,
 * start and end). Times are milliseconds on the contract clock.
 */
import type { RequestMetrics, TokenEventTiming } from '../../contracts/metrics.ts';

export type FailureKind =
  | `http_${number}`
  | 'stream_error'
  | 'disconnected'
  | 'truncated'
  | 'malformed'
  | 'timeout'
  | 'connect_error'
  /** In flight in a `--workers` thread that died: the client, not the server, lost it. */
  | 'worker_crashed';

export interface Failure {
  kind: FailureKind;
  message: string;
  /**
   * A request cut off at start + timeout: its latency, exactly the timeout. Its endMs is that
   * deadline, but endMs − startMs in doubles can miss the timeout by a rounding step (a start of
   * 3,900 ms and a 500 ms timeout end in the next binade).
   */
  timeoutMs?: number;
}

/** A record's request latency: end − start, or exactly the timeout of one cut off by it. */
export function requestLatencyMs(record: Pick<RequestRecord, 'startMs' | 'endMs' | 'failure'>): number {
  return record.failure?.timeoutMs ?? record.endMs - record.startMs;
}

/** Where a count came from, so reports can say how much to trust it. */
/** `usage`: a non-streamed body's one event, counted by its `usage.completion_tokens`. */
export type TokensPerEventSource = 'continuous_usage' | 'usage' | 'dialect' | 'tokenizer' | 'one_per_event';
export type OutputTokensSource = 'usage' | 'events';
export type PromptTokensSource = 'usage' | 'client';

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export interface RequestRecord {
  index: number;
  /** The x-request-id the client sent; the server's truth is filed under it. */
  requestId: string;
  /** The model (or LoRA adapter) the request named, when the run set it. */
  model?: string;
  /** The LoRA adapter of a run that splits its traffic over adapters (inference-perf's per-adapter reports). */
  loraAdapter?: string;
  stage: number;
  warmup: boolean;
  scheduledMs: number;
  startMs: number;
  /** Arrival of the first response body byte (null when none arrived). */
  firstByteMs: number | null;
  endMs: number;
  status: number | null;
  failure: Failure | null;
  /** Token-bearing events: arrival time and tokens carried. */
  events: TokenEventTiming[];
  tokensPerEventSource: TokensPerEventSource;
  outputTokens: number;
  outputTokensSource: OutputTokensSource;
  /** usage.completion_tokens differs from the client's count (the events' sum, possibly 0). */
  tokenCountMismatch: boolean;
  promptTokens: number;
  promptTokensSource: PromptTokensSource;
  usage: Usage | null;
  finishReason: string | null;
  /**
   * Arrival of the payload that carried finishReason (null when none did): a request cut off by its
   * timeout keeps a finish reason that came before the deadline (a stream stalled after its finish chunk).
   */
  finishReasonMs: number | null;
  /** Computed once when the request ends; null for failures. */
  metrics: RequestMetrics | null;
  /** False when the response was read as one body, not a stream (absent: a stream). */
  streamed?: boolean;
}

/** Whether the request got past connecting: anything but a connect_error reached the server. */
export function reachedServer(record: Pick<RequestRecord, 'failure'>): boolean {
  return record.failure?.kind !== 'connect_error';
}
