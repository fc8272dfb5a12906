/**
 * What the engine tells the rest of the server. Metric sets (vLLM's, JetStream's) subscribe
 * here instead of reaching into a scheduler. Listener methods rather than event objects keep
 * the per-token path free of allocation.
 *
 * Isolated scheduler: `queued` and `scheduled` fire at arrival, `firstToken` and `finished`
 * when the response ends (times are what the truth record measured); `token` and `preempted`
 * are batching-only, fired at the step that produced them (engine time).
 */
import type { TruthRecord } from '../../contracts/truth.ts';

/** Why a request left the engine, in vLLM's `finished_reason` words. */
export type FinishedReason = 'stop' | 'length' | 'abort';

/** One request as the engine sees it; allocated once per request. */
export interface EngineRequest {
  id: string;
  /** The key of the request's random stream (DESIGN §2). */
  key: string;
  /** The name the request asked for: the served model or a LoRA adapter. */
  model: string;
  lora: string | null;
  promptTokens: number;
  maxTokens: number;
  /**
   * Sequences the request runs (default 1): n choices per prompt of a prompt list (vLLM makes
   * each its own sequence, holding its own KV), and the prompt tokens of the longest one.
   */
  sequences?: number;
  sequencePromptTokens?: number;
  /**
   * The request's own max_tokens when the engine runs more steps than it asked for (JetStream's
   * EOS step): what `vllm:request_params_max_tokens` observes; default maxTokens.
   */
  maxTokensParam?: number;
  /** The prompt tokens of all its sequences together (n × the prompts); default promptTokens. */
  prefilledPromptTokens?: number;
  /** Monotonic clock reading of arrival. */
  arrivalMono: number;
  /**
   * The request's plan answers it with an HTTP-error fault (drawn before admission,
   * drawsHttpFault): it never reaches the engine, so no full queue or KV limit refuses it.
   */
  answeredBeforeEngine?: boolean;
}

/** Everything measured about a request once its response has ended (milliseconds). */
export interface RequestOutcome {
  request: EngineRequest;
  record: TruthRecord;
  reason: FinishedReason;
  /** Arrival → scheduled (first admitted to a running slot). */
  queuedMs: number;
  /** Scheduled → first token produced. */
  prefillMs: number | null;
  /** First token → last token produced. */
  decodeMs: number | null;
  /** Tokens the engine produced (the client may have seen fewer on an abort). */
  generatedTokens: number;
  /** Truth time (ms after arrival) of every token the client was sent (token-times.ts). */
  deliveredMs: readonly number[];
}

export interface EngineListener {
  queued?(request: EngineRequest, atMono: number): void;
  scheduled?(request: EngineRequest, atMono: number): void;
  firstToken?(request: EngineRequest, atMono: number): void;
  token?(request: EngineRequest, index: number, atMono: number): void;
  preempted?(request: EngineRequest, atMono: number): void;
  finished?(outcome: RequestOutcome): void;
  /** Batching only: an engine step produced `tokens` iteration tokens (batching-core.ts stepEnded). */
  stepEnded?(tokens: number, atMono: number): void;
}

/** A tiny fan-out; listeners are few and long-lived. */
export class EngineEvents {
  #listeners: EngineListener[] = [];

  subscribe(listener: EngineListener): () => void {
    this.#listeners = [...this.#listeners, listener];
    return () => {
      this.#listeners = this.#listeners.filter((l) => l !== listener);
    };
  }

  queued(request: EngineRequest, at: number): void {
    for (const l of this.#listeners) l.queued?.(request, at);
  }

  scheduled(request: EngineRequest, at: number): void {
    for (const l of this.#listeners) l.scheduled?.(request, at);
  }

  firstToken(request: EngineRequest, at: number): void {
    for (const l of this.#listeners) l.firstToken?.(request, at);
  }

  token(request: EngineRequest, index: number, at: number): void {
    for (const l of this.#listeners) l.token?.(request, index, at);
  }

  preempted(request: EngineRequest, at: number): void {
    for (const l of this.#listeners) l.preempted?.(request, at);
  }

  finished(outcome: RequestOutcome): void {
    for (const l of this.#listeners) l.finished?.(outcome);
  }

  stepEnded(tokens: number, at: number): void {
    for (const l of this.#listeners) l.stepEnded?.(tokens, at);
  }
}
