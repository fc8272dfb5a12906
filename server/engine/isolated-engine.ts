/**
 * The isolated scheduler: every request runs as if alone, so its plan is a pure function of
 * (seed, request) — plus the running count at arrival when --time-factor-under-load > 1, as in
 * llm-d-inference-sim. The engine only counts requests in flight and reports their outcomes.
 */
import type { Clock } from '../../contracts/clock.ts';
import type { TruthRecord } from '../../contracts/truth.ts';
import type { ServerOptions } from '../options.ts';
import type { TruthStore } from '../truth/truth-store.ts';
import type { Admitted, Engine, EngineState } from './engine.ts';
import { EngineEvents, type EngineListener, type EngineRequest, type FinishedReason } from './engine-events.ts';
import { ModelTimings } from './model-timing.ts';
import { deliveredTokenTimes, latencyTokenTimes } from './token-times.ts';

/**
 * The engine's reason for a request it ran (vLLM's FinishReason). A stream spoiled after its
 * last token went out — no `[DONE]`, a malformed event, a connection dropped after it — spoils
 * the transport, not the generation: the engine had finished the request with its own reason.
 * An error event is the engine failing it, and a request that ended before its last token was
 * produced is an abort. `produced` are the times the metrics count (token-times.ts
 * `latencyTokenTimes`): a stream's token when its write left (a stalled or slowly cut stream has
 * not produced what it has not sent), a one-body answer's token at its engine time.
 */
export function finishedReason(record: TruthRecord, produced: readonly number[]): FinishedReason {
  const end = record.end;
  if (end === null || record.status >= 400) return 'abort';
  const planned = record.finishReason === 'stop' ? 'stop' : 'length';
  if (end.how === 'completed') return planned;
  if (record.fault?.kind === 'error') return 'abort';
  return produced.length === record.tokens.length ? planned : 'abort';
}

/**
 * An HTTP-error fault is answered before any stream: like a refusal, the engine never runs it
 * (vLLM counts nothing for it), so no engine event and no place in the queue or batch.
 */
export function answeredBeforeEngine(record: TruthRecord): boolean {
  return record.fault?.kind === 'http';
}

export class IsolatedEngine implements Engine {
  readonly kind = 'isolated';
  readonly #options: ServerOptions;
  readonly #events = new EngineEvents();
  readonly #inFlight = new Map<TruthRecord, { request: EngineRequest; blocks: number }>();
  readonly #loras = new Map<string, number>();
  readonly #timings: ModelTimings;
  /** Sequences admitted, not yet run: counted by the load factor of the requests admitted after them. */
  #admittedNotRun = 0;
  /** KV blocks the in-flight requests would hold (prompt + output), for the usage gauge. */
  #blocks = 0;
  /** Sequences in flight (n choices of each prompt are each a request to vLLM's engine), for the running gauge. */
  #sequences = 0;
  readonly #unsubscribe: () => void;

  constructor(options: ServerOptions, _clock: Clock, truth: TruthStore) {
    this.#options = options;
    this.#timings = new ModelTimings(options);
    this.#unsubscribe = truth.subscribe((record) => this.#ended(record));
  }

  admit(request: EngineRequest): Admitted {
    // Requests admitted but not yet run (their planning waits for the scheduler's next gap) are
    // running for the load factor too: a burst read in one turn sees 1, 2, 3 … as llm-d counts.
    // Sequences, not requests: llm-d splits a request of n choices into n requests, each one
    // running (simulator.go req.split), and times a request by those before it and itself.
    const sequences = request.sequences ?? 1;
    const running = this.#sequences + this.#admittedNotRun + 1;
    this.#admittedNotRun += sequences;
    let pending = true;
    const leave = (): void => {
      if (!pending) return;
      pending = false;
      this.#admittedNotRun -= sequences;
    };
    return {
      ok: true,
      timing: { deferred: false, model: this.#timings.of(request.model), running },
      // Its timing was fixed at admission; nothing else waits on the plan.
      plansLater: true,
      abandon: leave,
      run: (record, play) => {
        leave();
        if (answeredBeforeEngine(record)) {
          play();
          return;
        }
        // Counted before it plays: a response can end inside play() (its client already gone).
        const blocks = this.#blocksOf(request, record);
        this.#inFlight.set(record, { request, blocks });
        this.#blocks += blocks;
        this.#sequences += request.sequences ?? 1;
        if (request.lora !== null) this.#loras.set(request.lora, (this.#loras.get(request.lora) ?? 0) + 1);
        this.#events.queued(request, request.arrivalMono);
        this.#events.scheduled(request, request.arrivalMono);
        play();
      },
    };
  }

  #ended(record: TruthRecord): void {
    const held = this.#inFlight.get(record);
    if (held === undefined) return;
    const { request } = held;
    this.#inFlight.delete(record);
    this.#blocks -= held.blocks;
    this.#sequences -= request.sequences ?? 1;
    if (request.lora !== null) {
      const left = (this.#loras.get(request.lora) ?? 1) - 1;
      if (left > 0) this.#loras.set(request.lora, left);
      else this.#loras.delete(request.lora);
    }
    // A one-body answer's tokens were produced at their due times, not when the body left.
    const times = latencyTokenTimes(record, deliveredTokenTimes(record));
    // Token order is release order: with n > 1 and stop strings a choice's held-back token
    // comes after another choice's later one, so the phases take the earliest and the latest.
    let first: number | undefined;
    let last: number | undefined;
    for (const at of times) {
      if (first === undefined || at < first) first = at;
      if (last === undefined || at > last) last = at;
    }
    if (first !== undefined) this.#events.firstToken(request, request.arrivalMono + first);
    this.#events.finished({
      request,
      record,
      reason: finishedReason(record, times),
      queuedMs: 0,
      prefillMs: first ?? null,
      decodeMs: first === undefined || last === undefined ? null : last - first,
      generatedTokens: times.length,
      deliveredMs: times,
    });
  }

  /**
   * The KV blocks a request holds at its largest: every sequence (n choices of each prompt) its
   * own copy of its prompt and its share of the output but the last token (sampled, never fed
   * back), in blocks of its own, as vLLM (and the batching engine) allocate them. Booked whole
   * for the request's life: this engine has no steps.
   */
  #blocksOf(request: EngineRequest, record: TruthRecord): number {
    const sequences = request.sequences ?? 1;
    const prompt = Math.max(1, request.sequencePromptTokens ?? request.promptTokens);
    const output = Math.max(1, Math.ceil(record.tokens.length / sequences));
    return sequences * Math.ceil((prompt + output - 1) / this.#options.blockSize);
  }

  subscribe(listener: EngineListener): () => void {
    return this.#events.subscribe(listener);
  }

  state(): EngineState {
    return { running: this.#sequences, waiting: 0, kvUsage: Math.min(1, this.#blocks / this.#options.kvCacheBlocks), runningLoras: [...this.#loras.keys()], waitingLoras: [], preemptions: 0 };
  }

  close(): void {
    this.#unsubscribe();
  }
}
