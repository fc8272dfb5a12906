/**
 * The continuous-batching scheduler as a pure simulation driven by the caller's clock: no
 * timers, no I/O. Feed it arrivals and aborts at times that never go backwards and call
 * `advanceTo(t)`; it runs engine steps (vLLM V1's loop) and reports when each token exists.
 * The same trace of calls gives the same per-token schedule, in virtual or real time.
 *
 * One step, starting at time t:
 *  1. admit waiting requests in arrival order while a running slot (--max-num-seqs), KV blocks
 *     for the whole prefill, and a LoRA slot (--max-loras) are free; a request whose adapter
 *     cannot be loaded is skipped, one that lacks KV blocks stops admission (FCFS);
 *  2. every decoding sequence takes one token of the step's budget (--max-num-batched-tokens),
 *     growing its KV blocks, preempting the newest running sequence when blocks run out
 *     (recompute: it returns to the head of the queue and re-prefills prompt + output so far);
 *  3. prefilling sequences take chunks of the remaining budget (chunked prefill);
 *  4. the step lasts factor × (ITL sample of the slowest decoding model + per-seq × decodes +
 *     the largest fixed prefill cost among prefills starting now + Σ chunk × per-token prefill
 *     time), where factor is llm-d-inference-sim's --time-factor-under-load at the running count;
 *  5. at its end every decode produces a token, every completed prefill its next token.
 */
import type { Rng } from '../../contracts/rng.ts';
import type { EngineOptions } from './engine-options.ts';
import { loadFactor, sampleMs, type Distribution, type TimingModel } from './timing.ts';

/** The engine's capacity settings (engine-options.ts) and its step model. */
export interface BatchingConfig extends Pick<EngineOptions, 'maxNumSeqs' | 'maxWaitingQueueLength' | 'maxNumBatchedTokens' | 'kvCacheBlocks' | 'blockSize' | 'maxLoras'> {
  /** The step model: decode base time (ITL), per-seq time and load factor. */
  timing: TimingModel;
  /**
   * How long after the latest arrival a prefill-only step still takes the next one (default
   * PREFILL_JOIN_WINDOW_MS; at most 5 windows after the step opened, while it has prefill
   * budget left and starts every prefill in it — see #canJoinStep): the step restarts at the
   * arrival with the larger batch, as the engine was still gathering its forward pass. Requests
   * sent "at once" then share one prefill instead of queueing behind the first one's.
   */
  prefillJoinWindowMs?: number;
}

/** Default join window: requests a client sends "at once" land within a few ms of each other. */
const PREFILL_JOIN_WINDOW_MS = 10;
/** A burst may hold a step open for at most this many windows, so a steady stream cannot starve it. */
const JOIN_WINDOWS_MAX = 5;

export interface CoreRequest {
  promptTokens: number;
  /** Tokens to produce before finishing. */
  outputTokens: number;
  lora: string | null;
  /** Time to prefill the whole prompt when unloaded (already sampled for this request). */
  prefillMs: number;
  /**
   * The part of a prefill that grows with its tokens (--prefill-time-per-token; default 0).
   * The rest of `prefillMs` is a fixed cost (TTFT or --prefill-overhead) that a step pays once,
   * however many prefills it batches.
   */
  prefillPerTokenMs?: number;
  /** This request's model's decode time (per-model timing); default the config's ITL. */
  itl?: Distribution;
  /**
   * Sequences whose KV the request holds (default 1): vLLM runs each of n choices of each
   * prompt as its own sequence, and with prefix caching off (as cache_config_info says) each
   * holds its own copy of its prompt plus its own output. They advance in lockstep, so they
   * are one Sequence here for slots, budget and timing, but their KV blocks are all counted.
   */
  sequences?: number;
  /** The prompt one of those sequences holds (default promptTokens; the longest of a list). */
  sequencePromptTokens?: number;
}

export interface CoreListener {
  scheduled(seq: Sequence, at: number): void;
  token(seq: Sequence, index: number, at: number): void;
  preempted(seq: Sequence, at: number): void;
  finished(seq: Sequence, at: number): void;
}

export class Sequence {
  readonly request: CoreRequest;
  readonly arrivedAt: number;
  /** Tokens whose KV is computed; prefill is done when it reaches `target`. */
  computed = 0;
  target: number;
  generated = 0;
  blocks = 0;
  scheduledAt: number | null = null;
  firstTokenAt: number | null = null;
  lastTokenAt: number | null = null;
  state: 'waiting' | 'running' | 'done' = 'waiting';
  /** This step's prefill chunk (0 = decoding or idle). */
  chunk = 0;
  decoding = false;

  constructor(request: CoreRequest, arrivedAt: number) {
    this.request = request;
    this.arrivedAt = arrivedAt;
    this.target = request.promptTokens;
  }

  get prefillPerTokenMs(): number {
    return this.request.prefillPerTokenMs ?? 0;
  }

  /** KV blocks this request's sequences hold once each has `extra` tokens beyond its prompt. */
  blocksWith(extra: number, blockSize: number): number {
    const width = this.request.sequences ?? 1;
    return width * Math.ceil(((this.request.sequencePromptTokens ?? this.request.promptTokens) + extra) / blockSize);
  }

  /** The fixed cost of starting this sequence's prefill (paid with its first chunk). */
  get prefillFixedMs(): number {
    return Math.max(0, this.request.prefillMs - this.prefillPerTokenMs * this.request.promptTokens);
  }
}

export type ArriveResult = { ok: true; seq: Sequence } | { ok: false; reason: 'queue_full' | 'too_large' };

export class BatchingCore {
  readonly #config: BatchingConfig;
  readonly #rng: Rng;
  readonly #listener: CoreListener;
  #waiting: Sequence[] = [];
  #running: Sequence[] = [];
  #freeBlocks: number;
  #stepEnd = Infinity;
  /** When the step in progress opened, and whether it decodes (only a prefill-only step takes joiners). */
  #stepOpenedAt = -Infinity;
  #stepStartedAt = -Infinity;
  #stepDecodes = 0;
  /** Prefill budget the step in progress left unused: a joiner needs some to share its pass. */
  #stepBudgetLeft = 0;
  #now = -Infinity;
  preemptions = 0;

  constructor(config: BatchingConfig, rng: Rng, listener: CoreListener) {
    this.#config = config;
    this.#rng = rng;
    this.#listener = listener;
    this.#freeBlocks = config.kvCacheBlocks;
  }

  /** The end of the step in progress; Infinity when idle. */
  get nextEventAt(): number {
    return this.#stepEnd;
  }

  get running(): readonly Sequence[] {
    return this.#running;
  }

  get waiting(): readonly Sequence[] {
    return this.#waiting;
  }

  get kvUsage(): number {
    return 1 - this.#freeBlocks / this.#config.kvCacheBlocks;
  }

  /** Whether a request of this size could ever run, and whether the queue has room for it. */
  canAccept(request: Pick<CoreRequest, 'promptTokens' | 'outputTokens' | 'lora' | 'sequences' | 'sequencePromptTokens'>): 'ok' | 'queue_full' | 'too_large' {
    const newcomer = new Sequence({ ...request, prefillMs: 0 }, this.#now);
    if (newcomer.blocksWith(request.outputTokens, this.#config.blockSize) > this.#config.kvCacheBlocks) return 'too_large';
    // Waiting requests (the newcomer included) that the next step will admit are not queued in
    // vLLM's sense: only the rest counts against the limit. A free slot alone does not admit:
    // a request held back by its LoRA adapter or by KV blocks (a preempted sequence, say) is
    // queued however many slots are free.
    const queued = this.#waiting.length + 1 - this.#admissible(newcomer).length;
    if (queued > this.#config.maxWaitingQueueLength) return 'queue_full';
    return 'ok';
  }

  /**
   * The admission rule, changing nothing: the waiting sequences (then `newcomer`, if given) a
   * step starting now takes, in order — FCFS while slots and KV blocks last, skipping (not
   * stopping at) one whose LoRA adapter has no slot.
   */
  #admissible(newcomer: Sequence | null): Sequence[] {
    const { maxNumSeqs, maxLoras } = this.#config;
    const loras = this.#activeLoras();
    let slots = maxNumSeqs - this.#running.length;
    let blocks = this.#freeBlocks;
    const taken: Sequence[] = [];
    const count = this.#waiting.length + (newcomer === null ? 0 : 1);
    for (let i = 0; i < count && slots > 0; i++) {
      const seq = this.#waiting[i] ?? (newcomer as Sequence);
      const lora = seq.request.lora;
      if (lora !== null && !loras.has(lora) && loras.size >= maxLoras) continue;
      const needed = this.#admissionBlocks(seq);
      if (needed > blocks) break;
      blocks -= needed;
      slots--;
      taken.push(seq);
      if (lora !== null) loras.add(lora);
    }
    return taken;
  }

  /**
   * A request arrives. `queueChecked`: the caller already asked canAccept (a moment ago, at
   * admission) and has committed to the request, so only its size can refuse it now; a step
   * that ended in between (a preemption, say) must not turn the admitted request away.
   */
  arrive(request: CoreRequest, at: number, queueChecked = false): ArriveResult {
    this.advanceTo(at);
    const verdict = this.canAccept(request);
    if (verdict === 'too_large' || (verdict === 'queue_full' && !queueChecked)) return { ok: false, reason: verdict };
    const seq = new Sequence(request, at);
    this.#waiting.push(seq);
    if (this.#stepEnd === Infinity) this.#startStep(at);
    else if (this.#canJoinStep(at)) this.#rejoinStep(at);
    return { ok: true, seq };
  }

  /** The client went away: the sequence leaves at once and its slot and blocks are free. */
  abort(seq: Sequence, at: number): void {
    this.advanceTo(at);
    if (seq.state === 'done') return;
    if (seq.state === 'waiting') this.#waiting.splice(this.#waiting.indexOf(seq), 1);
    else this.#release(seq);
    seq.state = 'done';
    // A step left with no work (the aborted sequence was all of it) ends now rather than
    // idling to its planned end: the freed slot serves the queue at once.
    if (this.#stepEnd !== Infinity && !this.#running.some((s) => s.decoding || s.chunk > 0)) {
      this.#stepEnd = Infinity;
      if (this.#running.length > 0 || this.#waiting.length > 0) this.#startStep(at);
      return;
    }
    // An idle engine with admissible work (the abort freed room) starts a step now.
    if (this.#stepEnd === Infinity && this.#waiting.length > 0) this.#startStep(at);
  }

  /** Runs every step that ends at or before `t`. */
  advanceTo(t: number): void {
    if (t < this.#now) throw new RangeError(`batching core cannot go back from ${this.#now} to ${t}`);
    this.#now = t;
    while (this.#stepEnd <= t) {
      const end = this.#stepEnd;
      this.#finishStep(end);
      this.#stepEnd = Infinity;
      if (this.#running.length > 0 || this.#waiting.length > 0) this.#startStep(end);
    }
  }

  /** Blocks to admit a sequence: its prompt, the output it already has (after preemption) and one more. */
  #admissionBlocks(seq: Sequence): number {
    return seq.blocksWith(seq.generated + 1, this.#config.blockSize);
  }

  #release(seq: Sequence): void {
    const i = this.#running.indexOf(seq);
    if (i >= 0) this.#running.splice(i, 1);
    this.#freeBlocks += seq.blocks;
    seq.blocks = 0;
    seq.chunk = 0;
    seq.decoding = false;
  }

  #activeLoras(): Set<string> {
    const loras = new Set<string>();
    for (const s of this.#running) if (s.request.lora !== null) loras.add(s.request.lora);
    return loras;
  }

  #admit(at: number): void {
    for (const seq of this.#admissible(null)) {
      this.#waiting.splice(this.#waiting.indexOf(seq), 1);
      const needed = this.#admissionBlocks(seq);
      this.#freeBlocks -= needed;
      seq.blocks = needed;
      seq.computed = 0;
      seq.state = 'running';
      this.#running.push(seq);
      if (seq.scheduledAt === null) {
        seq.scheduledAt = at;
        this.#listener.scheduled(seq, at);
      }
    }
  }

  #preemptFor(seq: Sequence, at: number, blocks: number): boolean {
    while (this.#freeBlocks < blocks) {
      const victim = this.#running[this.#running.length - 1];
      if (victim === undefined) return false;
      this.#release(victim);
      victim.state = 'waiting';
      victim.computed = 0;
      victim.target = victim.request.promptTokens + victim.generated;
      this.#waiting.unshift(victim);
      this.preemptions++;
      this.#listener.preempted(victim, at);
      if (victim === seq) return false;
    }
    return true;
  }

  #canJoinStep(at: number): boolean {
    const window = this.#config.prefillJoinWindowMs ?? PREFILL_JOIN_WINDOW_MS;
    return (
      this.#stepDecodes === 0 &&
      this.#stepBudgetLeft > 0 &&
      // Only a step that starts every prefill in it may wait for company: a sequence is held
      // by joiners once (its first chunk), never again at each later chunk of a long prompt.
      this.#running.every((s) => s.chunk === 0 || (s.computed === 0 && s.generated === 0)) &&
      at - this.#stepStartedAt <= window &&
      at - this.#stepOpenedAt <= JOIN_WINDOWS_MAX * window &&
      this.#running.length < this.#config.maxNumSeqs
    );
  }

  /** Re-plans the prefill-only step in progress from `at`, with the newly admitted requests. */
  #rejoinStep(at: number): void {
    const openedAt = this.#stepOpenedAt;
    const before = this.#running.length;
    this.#admit(at);
    // Nothing admitted (no KV blocks or LoRA slot for it): the step goes on as planned.
    if (this.#running.length === before) return;
    // No chunk of this step has been computed yet (it never ended): plan them all again.
    for (const seq of this.#running) seq.chunk = 0;
    this.#startStep(at);
    this.#stepOpenedAt = openedAt;
  }

  #startStep(at: number, retried = false): void {
    this.#stepOpenedAt = at;
    this.#stepStartedAt = at;
    this.#admit(at);
    let budget = this.#config.maxNumBatchedTokens;
    let decodes = 0;
    // A step batches its prefills into one forward pass: the fixed cost once (the largest
    // among prefills starting now), plus the per-token cost of every chunk.
    let prefillFixedMs = 0;
    let prefillTokensMs = 0;
    // Snapshot: preemption below shrinks the running list while we walk it.
    for (const seq of [...this.#running]) {
      if (seq.state !== 'running' || seq.computed < seq.target || budget <= 0) continue;
      const held = seq.blocksWith(seq.generated + 1, this.#config.blockSize);
      if (held > seq.blocks) {
        if (!this.#preemptFor(seq, at, held - seq.blocks)) continue;
        this.#freeBlocks -= held - seq.blocks;
        seq.blocks = held;
      }
      seq.decoding = true;
      budget -= 1;
    }
    // Counted afterwards: a sequence marked above may have been preempted by a later one.
    for (const seq of this.#running) if (seq.decoding) decodes++;
    for (const seq of this.#running) {
      if (seq.computed >= seq.target || budget <= 0) continue;
      if (seq.computed === 0) prefillFixedMs = Math.max(prefillFixedMs, seq.prefillFixedMs);
      seq.chunk = Math.min(seq.target - seq.computed, budget);
      budget -= seq.chunk;
      prefillTokensMs += seq.chunk * seq.prefillPerTokenMs;
    }
    if (decodes === 0 && this.#running.every((s) => s.chunk === 0)) {
      // Nothing runnable (everything waits for a LoRA slot or blocks): idle until an arrival,
      // abort or finish changes that. An empty engine admits any request that fits alone, so
      // one more admission round settles the case where preemption just emptied it.
      this.#stepEnd = Infinity;
      if (!retried && this.#running.length === 0 && this.#waiting.length > 0) this.#startStep(at, true);
      return;
    }
    const timing = this.#config.timing;
    this.#stepDecodes = decodes;
    this.#stepBudgetLeft = budget;
    const decodeMs = decodes > 0 ? sampleMs(this.#rng, this.#decodeItl()) + timing.decodePerSeqMs * decodes : 0;
    this.#stepEnd = at + loadFactor(timing, this.#running.length) * (decodeMs + prefillFixedMs + prefillTokensMs);
  }

  /** A batch decodes in lockstep: its step takes as long as its slowest model's (largest mean ITL). */
  #decodeItl(): Distribution {
    let itl: Distribution | null = null;
    for (const seq of this.#running) {
      if (!seq.decoding) continue;
      const own = seq.request.itl ?? this.#config.timing.itl;
      if (itl === null || own.meanMs > itl.meanMs) itl = own;
    }
    return itl ?? this.#config.timing.itl;
  }

  #finishStep(at: number): void {
    for (const seq of [...this.#running]) {
      if (seq.decoding) {
        seq.decoding = false;
        this.#emit(seq, at);
      } else if (seq.chunk > 0) {
        seq.computed += seq.chunk;
        seq.chunk = 0;
        if (seq.computed >= seq.target) this.#emit(seq, at);
      }
    }
  }

  #emit(seq: Sequence, at: number): void {
    const index = seq.generated++;
    if (seq.firstTokenAt === null) seq.firstTokenAt = at;
    seq.lastTokenAt = at;
    // Prefill of prompt + output so far is done: the KV now holds one more token.
    seq.computed = seq.request.promptTokens + seq.generated;
    seq.target = seq.computed;
    this.#listener.token(seq, index, at);
    if (seq.generated >= seq.request.outputTokens) {
      this.#release(seq);
      seq.state = 'done';
      this.#listener.finished(seq, at);
    }
  }
}
