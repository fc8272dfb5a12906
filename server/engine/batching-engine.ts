/**
 * The batching scheduler in real time: the pure BatchingCore driven by the real clock through
 * the one emission scheduler (its step ends are tasks in the same heap as the writes). Each
 * token the core produces resolves the due times of the writes anchored to it and wakes the
 * request's player; a response that ends early (client gone, fault) aborts its sequence.
 */
import type { Clock } from '../../contracts/clock.ts';
import { requestRng, Rng } from '../../contracts/rng.ts';
import type { TruthRecord } from '../../contracts/truth.ts';
import type { ServerOptions } from '../options.ts';
import type { EmissionScheduler, ScheduledTask } from '../transport/emission-scheduler.ts';
import type { TruthStore } from '../truth/truth-store.ts';
import { BatchingCore, widthOf, type CoreListener, type CoreRequest, type Sequence } from './batching-core.ts';
import type { Admitted, Engine, EngineState, PlayedResponse, Refused } from './engine.ts';
import { EngineEvents, type EngineListener, type EngineRequest } from './engine-events.ts';
import { answeredBeforeEngine, finishedReason } from './isolated-engine.ts';
import { ModelTimings } from './model-timing.ts';
import { prefillMeanMs, samplePrefillMs, usesPrefillCost } from './timing.ts';
import { deliveredTokenTimes, latencyTokenTimes } from './token-times.ts';
import { deferTiming, tokenAvailable, type DeferredTiming } from './token-availability.ts';

interface Tracked {
  request: EngineRequest;
  record: TruthRecord;
  player: PlayedResponse;
  timing: DeferredTiming;
  seq: Sequence | null;
}

/**
 * A request still waiting in the queue this long after its arrival drops its rendered plan
 * until the engine schedules it (PlayedResponse.sleep): a deep queue then holds requests, not
 * their whole responses. Beyond any wait a request meets in a queue that keeps up.
 */
const WAITING_SLEEP_MS = 1000;

/** Tokens whose engine time is known (tokenAvailable fills a token's due when its step ran). */
function producedTokens(record: TruthRecord): number {
  let count = 0;
  for (const token of record.tokens) if (token.dueMs < Infinity) count++;
  return count;
}

export class BatchingEngine implements Engine {
  readonly kind = 'batching';
  readonly #options: ServerOptions;
  readonly #timings: ModelTimings;
  readonly #clock: Clock;
  readonly #scheduler: EmissionScheduler;
  readonly #events = new EngineEvents();
  readonly #core: BatchingCore;
  readonly #bySeq = new Map<Sequence, Tracked>();
  readonly #byRecord = new Map<TruthRecord, Tracked>();
  readonly #unsubscribe: () => void;
  #armed: ScheduledTask | null = null;
  #armedAt = Infinity;
  /** The request inside core.arrive(): an idle core schedules it before arrive returns its Sequence. */
  #arriving: { request: CoreRequest; tracked: Tracked } | null = null;

  constructor(options: ServerOptions, clock: Clock, truth: TruthStore, scheduler: EmissionScheduler) {
    this.#options = options;
    this.#timings = new ModelTimings(options);
    this.#clock = clock;
    this.#scheduler = scheduler;
    const listener: CoreListener = {
      scheduled: (seq, at) =>
        this.#withRequest(seq, (t) => {
          // Its first token is a prefill step away: a response sleeping in the queue renders its plan in the gaps meanwhile.
          t.player.render?.('soon');
          this.#events.scheduled(t.request, at);
        }),
      token: (seq, index, at) => this.#token(seq, index, at),
      preempted: (seq, at) => this.#withRequest(seq, (t) => this.#events.preempted(t.request, at)),
      finished: () => {},
      stepEnded: (tokens, at) => this.#events.stepEnded(tokens, at),
    };
    this.#core = new BatchingCore(
      {
        maxNumSeqs: options.maxNumSeqs,
        maxWaitingQueueLength: options.maxWaitingQueueLength,
        maxNumBatchedTokens: options.maxNumBatchedTokens,
        kvCacheBlocks: options.kvCacheBlocks,
        blockSize: options.blockSize,
        maxLoras: options.maxLoras,
        timing: this.#timings.of(options.model),
      },
      new Rng(options.seed).derive('batching-steps'),
      listener,
    );
    this.#unsubscribe = truth.subscribe((record) => this.#ended(record));
  }

  admit(request: EngineRequest): Admitted | Refused {
    // The queue as it stood when the request arrived: steps that ended by then have run.
    this.#core.advanceTo(this.#arrivalTime(request));
    const kv = { sequences: request.sequences ?? 1, sequencePromptTokens: request.sequencePromptTokens ?? request.promptTokens, prefilledPromptTokens: request.prefilledPromptTokens ?? request.promptTokens };
    // An answer the wire fault gives before any stream takes no place in the queue (run ignores it).
    const verdict = request.answeredBeforeEngine === true ? 'ok' : this.#core.canAccept({ promptTokens: request.promptTokens, outputTokens: Math.max(1, request.maxTokens), lora: request.lora, ...kv });
    if (verdict === 'queue_full') {
      return { ok: false, status: 429, message: `The waiting queue is full (${this.#options.maxWaitingQueueLength} requests); retry later.` };
    }
    if (verdict === 'too_large') {
      const blocks = this.#options.kvCacheBlocks * this.#options.blockSize;
      // The last output token is sampled, never fed back: it takes no KV slot (vLLM).
      const perSequence = kv.sequencePromptTokens + Math.max(1, request.maxTokens) - 1;
      const needed = kv.sequences * perSequence;
      const what = kv.sequences === 1 ? '' : ` (${kv.sequences} sequences of ${perSequence})`;
      return { ok: false, status: 400, message: `This request needs ${needed} tokens of KV cache${what}, more than the ${blocks} the engine has.` };
    }
    const model = this.#timings.of(request.model);
    return {
      ok: true,
      timing: { deferred: true, model },
      // Admission checked the queue as it stands: the request must join it in the same turn.
      plansLater: false,
      // A rendering waits for the engine's times as the first did (every due unknown until its token).
      replanned: (fresh) => void deferTiming(fresh),
      // Nothing is held for a request until it runs.
      abandon: () => {},
      run: (record, play) => {
        const timing = deferTiming(record);
        const player = play();
        if (record.end !== null || record.tokens.length === 0 || answeredBeforeEngine(record)) return;
        const tracked: Tracked = { request, record, player, timing, seq: null };
        this.#byRecord.set(record, tracked);
        this.#events.queued(request, request.arrivalMono);
        const prefillMs = samplePrefillMs(requestRng(this.#options.seed, request.key).derive('timing'), model, request.promptTokens);
        const prefillPerTokenMs = usesPrefillCost(model) ? model.prefillPerTokenMs : 0;
        // Every timing knob of this request's model (per-model overrides included) prices its steps.
        const priced = {
          prefillMs,
          prefillMeanMs: prefillMeanMs(model, request.promptTokens),
          prefillPerTokenMs,
          itl: model.itl,
          decodePerSeqMs: model.decodePerSeqMs,
          timeFactorUnderLoad: model.timeFactorUnderLoad,
        };
        // One engine step gives every choice (n > 1, several prompts) its next token.
        const coreRequest: CoreRequest = { promptTokens: request.promptTokens, outputTokens: timing.steps, lora: request.lora, ...priced, ...kv };
        this.#arriving = { request: coreRequest, tracked };
        let arrived: ReturnType<BatchingCore['arrive']>;
        try {
          arrived = this.#core.arrive(coreRequest, this.#arrivalTime(request), true);
        } finally {
          this.#arriving = null;
        }
        // admit() checked the same capacity a moment ago, in the same turn.
        if (!arrived.ok) throw new Error(`batching engine refused an admitted request: ${arrived.reason}`);
        tracked.seq = arrived.seq;
        this.#bySeq.set(arrived.seq, tracked);
        if (arrived.seq.state === 'waiting' && player.sleep !== undefined) this.#scheduler.schedule(this.#sleepWhileWaiting(tracked), request.arrivalMono + WAITING_SLEEP_MS);
        this.#arm();
      },
    };
  }

  /**
   * When the core sees a request: its arrival as the truth record stamps it, as the isolated
   * engine times from, so TTFT excludes the server's own parsing and tokenising and the
   * schedule follows the arrival trace, not the server's speed. A request whose body took
   * longer than a step the core has already run joins at the core's time (the core never goes
   * back).
   */
  #arrivalTime(request: EngineRequest): number {
    return Math.max(this.#core.now, request.arrivalMono);
  }

  #withRequest(seq: Sequence, act: (tracked: Tracked) => void): void {
    const arriving = this.#arriving;
    const tracked = this.#bySeq.get(seq) ?? (arriving !== null && arriving.request === seq.request ? arriving.tracked : undefined);
    if (tracked !== undefined) act(tracked);
  }

  #token(seq: Sequence, index: number, at: number): void {
    const tracked = this.#bySeq.get(seq);
    if (tracked === undefined) return;
    const { request, record } = tracked;
    // The times go into the rendered plan: a response still asleep renders it now. Only the
    // first token can find it asleep (a request the core scheduled never sleeps).
    if (index === 0) tracked.player.render?.('now');
    const due = tokenAvailable(record, tracked.timing, index, at - request.arrivalMono);
    if (due < Infinity) this.#scheduler.wake(tracked.player, request.arrivalMono + due);
    if (index === 0) this.#events.firstToken(request, at);
    this.#events.token(request, index, at);
  }

  /** Keeps exactly one live step task in the scheduler, due at the core's next step end. */
  #arm(): void {
    const next = this.#core.nextEventAt;
    if (next >= this.#armedAt) return;
    const task: ScheduledTask = {
      run: (now) => {
        if (task !== this.#armed) return null;
        this.#core.advanceTo(Math.max(now, this.#clock.now()));
        const following = this.#core.nextEventAt;
        this.#armedAt = following;
        if (following === Infinity) this.#armed = null;
        return following === Infinity ? null : following;
      },
    };
    this.#armed = task;
    this.#armedAt = next;
    this.#scheduler.schedule(task, next);
  }

  /**
   * A task in the one scheduler, WAITING_SLEEP_MS after a request joined the queue: if it still
   * waits, its response drops its rendered plan until the request is scheduled. It writes
   * nothing, so its run is not a write's lateness (`preparing`).
   */
  #sleepWhileWaiting(tracked: Tracked): ScheduledTask {
    return {
      preparing: true,
      run: () => {
        // Never scheduled yet: the core's `scheduled` (which asks it to render) comes once, the first time.
        if (tracked.seq?.state === 'waiting' && tracked.seq.scheduledAt === null && this.#byRecord.has(tracked.record)) tracked.player.sleep?.();
        return null;
      },
    };
  }

  #ended(record: TruthRecord): void {
    const tracked = this.#byRecord.get(record);
    if (tracked === undefined) return;
    this.#byRecord.delete(record);
    const { seq, request } = tracked;
    if (seq !== null) {
      if (seq.state !== 'done') {
        this.#core.abort(seq, this.#clock.now());
        this.#arm();
      }
      this.#bySeq.delete(seq);
    }
    const end = request.arrivalMono + (record.end?.atMs ?? 0);
    const scheduledAt = seq?.scheduledAt ?? null;
    const first = seq?.firstTokenAt ?? null;
    const last = seq?.lastTokenAt ?? null;
    const delivered = deliveredTokenTimes(record);
    this.#events.finished({
      request,
      record,
      reason: finishedReason(record, latencyTokenTimes(record, delivered)),
      queuedMs: (scheduledAt ?? end) - request.arrivalMono,
      prefillMs: scheduledAt === null || first === null ? null : first - scheduledAt,
      decodeMs: first === null || last === null ? null : last - first,
      // Every choice's tokens (n > 1, prompt lists), as the isolated engine counts: one step
      // gives each choice a token, so the step count alone undercounts.
      generatedTokens: seq === null ? 0 : producedTokens(record),
      deliveredMs: delivered,
    });
  }

  subscribe(listener: EngineListener): () => void {
    return this.#events.subscribe(listener);
  }

  state(): EngineState {
    const loras = (seqs: readonly Sequence[]): string[] => [...new Set(seqs.flatMap((s) => (s.request.lora === null ? [] : [s.request.lora])))];
    return {
      running: widthOf(this.#core.running),
      waiting: widthOf(this.#core.waiting),
      kvUsage: this.#core.kvUsage,
      runningLoras: loras(this.#core.running),
      waitingLoras: loras(this.#core.waiting),
      preemptions: this.#core.preemptions,
    };
  }

  close(): void {
    this.#unsubscribe();
    this.#armed = null;
    this.#armedAt = Infinity;
  }
}
