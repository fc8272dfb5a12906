/**
 * The continuous-batching scheduler as a pure simulation driven by the caller's clock: no
 * timers, no I/O. Feed it arrivals and aborts at times that never go backwards and call
 * `advanceTo(t)`; it runs engine steps (vLLM V1's loop) and reports when each token exists.
 * The same trace of calls gives the same per-token schedule, in virtual or real time.
 *
 * One step, starting at time t, in vLLM V1's order (vllm/v1/core/sched/scheduler.py):
 *  1. running sequences first, oldest first, while the step's token budget
 *     (--max-num-batched-tokens) lasts: each takes its pending tokens (1 to decode, else the
 *     next chunk of its prefill, cut to the budget), growing its KV blocks to cover every token
 *     computed by the end of the step; when blocks run out the newest running sequence is
 *     preempted (recompute: it returns to the head of the queue, frees its blocks and later
 *     re-prefills prompt + output so far), and if that is the sequence itself, scheduling stops;
 *  2. only if nothing was preempted and budget is left, waiting requests are admitted in
 *     arrival order while a running slot (--max-num-seqs) is free, each taking at most the
 *     remaining budget as its first chunk and KV blocks for that chunk only; a request whose
 *     LoRA adapter has no slot (--max-loras) is skipped, one that lacks blocks stops admission;
 *  3. the step lasts: decode part = ITL sample of the slowest decoding model (its mean × the load
 *     factor) + factor × per-seq time × decodes; prefill part = factor × (the largest fixed
 *     prefill cost among prefills starting now + Σ chunk × per-token time) + that prefill's
 *     sampled deviation, floored at 0. The factor is llm-d-inference-sim's
 *     --time-factor-under-load at the running count (the largest among the step's models);
 *     like llm-d it scales means, never spreads;
 *  4. at its end every sequence whose computed tokens caught up produces its next token.
 *
 * A sequence's KV holds the tokens it has computed (vLLM's num_computed_tokens): the prompt
 * during prefill, prompt + output − 1 once decoding (the newest token is not yet in the cache).
 */
import type { Rng } from '../../contracts/rng.ts';
import type { EngineOptions } from './engine-options.ts';
import { loadFactor, sampleMs, type Distribution, type TimingModel } from './timing.ts';

/** The engine's capacity settings (engine-options.ts) and its step model. */
export interface BatchingConfig extends Pick<EngineOptions, 'maxNumSeqs' | 'maxWaitingQueueLength' | 'maxNumBatchedTokens' | 'kvCacheBlocks' | 'blockSize' | 'maxLoras'> {
  /** The step model: decode base time (ITL), per-seq time and load factor (each a default a request may override). */
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
   * The mean `prefillMs` was sampled around (default prefillMs: no deviation). The load factor
   * scales the mean only, as llm-d-inference-sim does; the sampled deviation is kept as is.
   */
  prefillMeanMs?: number;
  /**
   * The part of a prefill that grows with its tokens (--prefill-time-per-token; default 0).
   * The rest of the mean is a fixed cost (TTFT or --prefill-overhead) that a step pays once,
   * however many prefills it batches.
   */
  prefillPerTokenMs?: number;
  /** This request's model's decode time (per-model timing); default the config's ITL. */
  itl?: Distribution;
  /** This request's model's --decode-time-per-seq; default the config's. */
  decodePerSeqMs?: number;
  /** This request's model's --time-factor-under-load; default the config's. */
  timeFactorUnderLoad?: number;
  /**
   * Sequences whose KV the request holds (default 1): vLLM runs each of n choices of each
   * prompt as its own sequence, and with prefix caching off (as cache_config_info says) each
   * holds its own copy of its prompt plus its own output. They advance in lockstep, so they
   * are one Sequence here for the token budget and its steps, but each takes a running slot
   * (--max-num-seqs), counts in the running and waiting gauges and the per-seq decode time, and
   * holds its own KV blocks. They are admitted together: a request wider than every slot runs
   * alone, where vLLM would run as many of its children as there are slots.
   */
  sequences?: number;
  /** The prompt one of those sequences holds (default promptTokens; the longest of a list). */
  sequencePromptTokens?: number;
  /**
   * The prompt tokens of all its sequences together, as vLLM's iteration stats count them
   * (each child request its own prompt: n × the prompts); default promptTokens.
   */
  prefilledPromptTokens?: number;
}

export interface CoreListener {
  scheduled(seq: Sequence, at: number): void;
  token(seq: Sequence, index: number, at: number): void;
  preempted(seq: Sequence, at: number): void;
  finished(seq: Sequence, at: number): void;
  /**
   * A step produced tokens: vLLM's iteration tokens, its prompt tokens (a request's whole prompt,
   * counted by the step that made its first token) plus the tokens it generated (one per sequence).
   */
  stepEnded?(tokens: number, at: number): void;
}

export class Sequence {
  readonly request: CoreRequest;
  readonly arrivedAt: number;
  /** Tokens whose KV is computed (vLLM's num_computed_tokens; prompt first, then output). */
  computed = 0;
  /** Where the prefill in progress ends: the prompt, or prompt + output after a preemption. */
  target: number;
  generated = 0;
  blocks = 0;
  scheduledAt: number | null = null;
  firstTokenAt: number | null = null;
  lastTokenAt: number | null = null;
  state: 'waiting' | 'running' | 'done' = 'waiting';
  /** Tokens this step computes for it (0 = not scheduled in the step in progress). */
  chunk = 0;
  /** Whether this step's chunk is a decode (one token after a finished prefill). */
  decoding = false;

  constructor(request: CoreRequest, arrivedAt: number) {
    this.request = request;
    this.arrivedAt = arrivedAt;
    this.target = this.prompt;
  }

  /**
   * The positions the prefill computes: the prompt, and at least one. An empty prompt (the fake
   * tokenizer's count of empty text, where vLLM's template or BOS would hold a token) would
   * otherwise have nothing pending, and no step would ever schedule it.
   */
  get prompt(): number {
    return Math.max(1, this.request.promptTokens);
  }

  /** vLLM's num_tokens: prompt + output so far; the step schedules what is not yet computed. */
  get tokens(): number {
    return this.prompt + this.generated;
  }

  get pending(): number {
    return this.tokens - this.computed;
  }

  /** Running slots it takes: one per sequence (vLLM schedules each child request on its own). */
  get width(): number {
    return this.request.sequences ?? 1;
  }

  get prefillPerTokenMs(): number {
    return this.request.prefillPerTokenMs ?? 0;
  }

  /**
   * KV blocks this request's sequences hold once `computed` tokens are computed. With a list of
   * prompts (`sequencePromptTokens` < promptTokens) each sequence's share of the prompt grows
   * in proportion; past the prompt every sequence holds its own output tokens.
   */
  blocksAt(computed: number, blockSize: number): number {
    const prompt = this.prompt;
    const own = Math.max(1, this.request.sequencePromptTokens ?? prompt);
    const held = computed <= prompt ? Math.ceil((own * computed) / prompt) : own + computed - prompt;
    return (this.request.sequences ?? 1) * Math.ceil(held / blockSize);
  }

  /** The fixed part of this prefill's unloaded mean (TTFT or overhead), scaled by the load factor. */
  get prefillFixedMeanMs(): number {
    return (this.request.prefillMeanMs ?? this.request.prefillMs) - this.prefillPerTokenMs * this.request.promptTokens;
  }

  /** How far this request's sampled prefill lies from its mean (signed; not scaled by load). */
  get prefillDeviationMs(): number {
    return this.request.prefillMs - (this.request.prefillMeanMs ?? this.request.prefillMs);
  }
}

export type ArriveResult = { ok: true; seq: Sequence } | { ok: false; reason: 'queue_full' | 'too_large' };

/** One sequence's share of a step: the tokens it computes and the blocks it holds after. */
interface Scheduled {
  seq: Sequence;
  tokens: number;
  blocks: number;
}

/** What a step starting now would do, computed without changing anything. */
interface StepPlan {
  /** Running sequences scheduled, in order. */
  running: Scheduled[];
  /** Newest first, as they were taken. */
  preempted: Sequence[];
  /** Waiting sequences admitted, in order. */
  admitted: Scheduled[];
}

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
  #stepPreempted = false;
  /** Token budget the step in progress left unused: a joiner needs some to share its pass. */
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

  /** The latest time the core was driven to (arrivals, aborts and advanceTo never go before it). */
  get now(): number {
    return this.#now;
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
    // The most it ever holds: prompt + every output token but the last, which is sampled and
    // never fed back (nor recomputed after a preemption).
    const peak = Math.max(1, request.promptTokens) + Math.max(1, request.outputTokens) - 1;
    if (newcomer.blocksAt(peak, this.#config.blockSize) > this.#config.kvCacheBlocks) return 'too_large';
    // Waiting requests (the newcomer included) that the next step would admit are not queued
    // in vLLM's sense: only the rest counts against the limit. A free slot alone does not
    // admit: a request held back by its LoRA adapter, by KV blocks or by the token budget the
    // running sequences take first is queued however many slots are free. The next step is
    // the one in progress when the newcomer would join it (it is planned again), else the one
    // after it: planned as this one leaves things, its chunks computed and the sequences whose
    // last token it makes gone (charging the chunk in progress again refused requests that
    // step admits; leaving the budget out admitted some a long chunked prefill holds back).
    const afterStep = this.#stepEnd !== Infinity && !this.#canJoinStep(this.#now);
    const admitted = this.#plan([...this.#waiting, newcomer], this.#config.maxNumBatchedTokens, afterStep ? this.#finishingThisStep() : [], afterStep).admitted.map((entry) => entry.seq);
    const queued = widthOf(this.#waiting) + newcomer.width - widthOf(admitted);
    if (queued > this.#config.maxWaitingQueueLength) return 'queue_full';
    return 'ok';
  }

  /**
   * The scheduling rule, changing nothing: what a step starting now does with the running
   * sequences and then `waiting`, in vLLM V1's order (see the file comment). Blocks a sequence
   * already holds (the step in progress allocated them) are never given back by a plan.
   * `afterStep`: the running sequences as the step in progress leaves them (its chunks computed,
   * a token more for each it brings to the end of its prefill).
   */
  #plan(waiting: readonly Sequence[], budget = this.#config.maxNumBatchedTokens, gone: readonly Sequence[] = [], afterStep = false): StepPlan {
    const { maxNumSeqs, maxLoras, blockSize } = this.#config;
    const running = this.#running.filter((seq) => !gone.includes(seq));
    const plan: StepPlan = { running: [], preempted: [], admitted: [] };
    let free = this.#freeBlocks;
    for (const seq of gone) free += seq.blocks;
    for (let i = 0; i < running.length && budget > 0; i++) {
      const seq = running[i] as Sequence;
      const computed = afterStep ? seq.computed + seq.chunk : seq.computed;
      const pending = afterStep ? seq.tokens + (seq.chunk > 0 && computed >= seq.target ? 1 : 0) - computed : seq.pending;
      const tokens = Math.min(pending, budget);
      if (tokens <= 0) continue;
      const blocks = Math.max(seq.blocks, seq.blocksAt(computed + tokens, blockSize));
      let fits = true;
      // Only sequences after i can be taken (newest first): those before are scheduled.
      while (blocks - seq.blocks > free) {
        const victim = running.pop() as Sequence;
        free += victim.blocks;
        plan.preempted.push(victim);
        if (victim === seq) {
          fits = false;
          break;
        }
      }
      if (!fits) break;
      free -= blocks - seq.blocks;
      budget -= tokens;
      plan.running.push({ seq, tokens, blocks });
    }
    // A step that preempted admits nobody (vLLM): the freed blocks go to the running first.
    if (plan.preempted.length > 0) return plan;
    const loras = new Set<string>();
    for (const s of running) if (s.request.lora !== null) loras.add(s.request.lora);
    let slots = widthOf(running);
    for (const seq of waiting) {
      if (budget <= 0 || slots >= maxNumSeqs) break;
      // Admitted in arrival order: a wide request waits at the head for its slots.
      if (slots > 0 && slots + seq.width > maxNumSeqs) break;
      const lora = seq.request.lora;
      if (lora !== null && !loras.has(lora) && loras.size >= maxLoras) continue;
      const tokens = Math.min(seq.pending, budget);
      const blocks = seq.blocksAt(seq.computed + tokens, blockSize);
      if (blocks > free) break;
      free -= blocks;
      budget -= tokens;
      plan.admitted.push({ seq, tokens, blocks });
      slots += seq.width;
      if (lora !== null) loras.add(lora);
    }
    return plan;
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
    if (this.#stepEnd !== Infinity && !this.#running.some((s) => s.chunk > 0)) {
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

  #release(seq: Sequence): void {
    const i = this.#running.indexOf(seq);
    if (i >= 0) this.#running.splice(i, 1);
    this.#freeBlocks += seq.blocks;
    seq.blocks = 0;
    seq.chunk = 0;
    seq.decoding = false;
  }

  #preempt(victim: Sequence, at: number): void {
    this.#release(victim);
    victim.state = 'waiting';
    victim.computed = 0;
    victim.target = victim.tokens;
    this.#waiting.unshift(victim);
    this.preemptions++;
    this.#listener.preempted(victim, at);
  }

  /** Gives a scheduled sequence its chunk and the blocks for it. */
  #take({ seq, tokens, blocks }: Scheduled): void {
    this.#freeBlocks -= blocks - seq.blocks;
    seq.blocks = blocks;
    seq.chunk = tokens;
    seq.decoding = seq.computed >= seq.target;
  }

  #canJoinStep(at: number): boolean {
    const window = this.#config.prefillJoinWindowMs ?? PREFILL_JOIN_WINDOW_MS;
    return (
      this.#stepDecodes === 0 &&
      !this.#stepPreempted &&
      this.#stepBudgetLeft > 0 &&
      // Only a step that starts every prefill in it may wait for company: a sequence is held
      // by joiners once (its first chunk), never again at each later chunk of a long prompt.
      this.#running.every((s) => s.chunk === 0 || (s.computed === 0 && s.generated === 0)) &&
      at - this.#stepStartedAt <= window &&
      at - this.#stepOpenedAt <= JOIN_WINDOWS_MAX * window &&
      widthOf(this.#running) < this.#config.maxNumSeqs
    );
  }

  /** Running sequences whose last token the step in progress makes (they leave when it ends). */
  #finishingThisStep(): Sequence[] {
    if (this.#stepEnd === Infinity) return [];
    return this.#running.filter((seq) => seq.chunk > 0 && seq.computed + seq.chunk >= seq.target && seq.generated + 1 >= seq.request.outputTokens);
  }

  /** Re-plans the prefill-only step in progress from `at`, with the newly admissible requests. */
  #rejoinStep(at: number): void {
    // Nothing to add (no slot, blocks, budget or LoRA slot for it): the step goes on as planned.
    if (this.#plan(this.#waiting).admitted.length === 0) return;
    const openedAt = this.#stepOpenedAt;
    // No chunk of this step has been computed yet (it never ended): hand back the blocks taken
    // for them and plan the step again with the joiners.
    for (const seq of this.#running) {
      const kept = seq.blocksAt(seq.computed, this.#config.blockSize);
      this.#freeBlocks += seq.blocks - kept;
      seq.blocks = kept;
      seq.chunk = 0;
    }
    this.#startStep(at);
    this.#stepOpenedAt = openedAt;
  }

  #startStep(at: number): void {
    this.#stepOpenedAt = at;
    this.#stepStartedAt = at;
    const plan = this.#plan(this.#waiting);
    for (const victim of plan.preempted) this.#preempt(victim, at);
    for (const entry of plan.running) this.#take(entry);
    for (const entry of plan.admitted) {
      const { seq } = entry;
      this.#waiting.splice(this.#waiting.indexOf(seq), 1);
      seq.state = 'running';
      this.#running.push(seq);
      this.#take(entry);
      if (seq.scheduledAt === null) {
        seq.scheduledAt = at;
        this.#listener.scheduled(seq, at);
      }
    }
    const scheduled = [...plan.running, ...plan.admitted];
    if (scheduled.length === 0) {
      // Nothing runnable: the running sequence that needed blocks preempted itself (and all
      // newer ones), and a preempting step admits nobody. vLLM's next step, straight after,
      // admits from the queue; an empty engine admits any request that fits alone. Otherwise
      // (everything waits for a LoRA slot) idle until an arrival, abort or finish changes that.
      this.#stepEnd = Infinity;
      if (plan.preempted.length > 0 && this.#waiting.length > 0) this.#startStep(at);
      return;
    }
    this.#stepPreempted = plan.preempted.length > 0;
    this.#stepBudgetLeft = this.#config.maxNumBatchedTokens - scheduled.reduce((sum, e) => sum + e.tokens, 0);
    this.#stepEnd = at + this.#stepMs(scheduled.map((e) => e.seq));
  }

  /** How long a step computing these sequences' chunks takes (see the file comment, 3). */
  #stepMs(seqs: readonly Sequence[]): number {
    const defaults = this.#config.timing;
    const factor = loadFactor(
      { timeFactorUnderLoad: Math.max(...seqs.map((s) => s.request.timeFactorUnderLoad ?? defaults.timeFactorUnderLoad)), maxNumSeqs: this.#config.maxNumSeqs },
      widthOf(this.#running),
    );
    const decoders = seqs.filter((s) => s.decoding);
    this.#stepDecodes = decoders.length;
    let decodeMs = 0;
    if (decoders.length > 0) {
      // A batch decodes in lockstep: its step takes as long as its slowest model's.
      const itl = slowest(decoders.map((s) => s.request.itl ?? defaults.itl));
      const perSeq = Math.max(...decoders.map((s) => s.request.decodePerSeqMs ?? defaults.decodePerSeqMs));
      decodeMs = sampleMs(this.#rng, { ...itl, meanMs: itl.meanMs * factor }) + factor * perSeq * widthOf(decoders);
    }
    // A step batches its prefills into one forward pass: the fixed cost once (the largest
    // among prefills starting now, with its own sampled deviation), plus every chunk's tokens.
    let tokensMs = 0;
    let starting: Sequence | null = null;
    let any = false;
    for (const seq of seqs) {
      if (seq.decoding) continue;
      any = true;
      tokensMs += seq.chunk * seq.prefillPerTokenMs;
      if (seq.computed > 0) continue;
      const cost = (s: Sequence): number => factor * s.prefillFixedMeanMs + s.prefillDeviationMs;
      if (starting === null || cost(seq) > cost(starting)) starting = seq;
    }
    const fixedMs = starting === null ? 0 : factor * starting.prefillFixedMeanMs + starting.prefillDeviationMs;
    const prefillMs = any ? Math.max(0, fixedMs + factor * tokensMs) : 0;
    return decodeMs + prefillMs;
  }

  #finishStep(at: number): void {
    let iterationTokens = 0;
    for (const seq of [...this.#running]) {
      if (seq.chunk === 0) continue;
      seq.computed += seq.chunk;
      seq.chunk = 0;
      seq.decoding = false;
      if (seq.computed >= seq.target) {
        iterationTokens += (seq.generated === 0 ? (seq.request.prefilledPromptTokens ?? seq.request.promptTokens) : 0) + (seq.request.sequences ?? 1);
        this.#emit(seq, at);
      }
    }
    if (iterationTokens > 0) this.#listener.stepEnded?.(iterationTokens, at);
  }

  #emit(seq: Sequence, at: number): void {
    const index = seq.generated++;
    if (seq.firstTokenAt === null) seq.firstTokenAt = at;
    seq.lastTokenAt = at;
    this.#listener.token(seq, index, at);
    if (seq.generated >= seq.request.outputTokens) {
      this.#release(seq);
      seq.state = 'done';
      this.#listener.finished(seq, at);
    }
  }
}

/** Running slots (sequences) these requests take. */
export function widthOf(seqs: readonly Sequence[]): number {
  let width = 0;
  for (const seq of seqs) width += seq.width;
  return width;
}

/** The distribution with the largest mean (ties: the first). */
function slowest(itls: readonly Distribution[]): Distribution {
  return itls.reduce((a, b) => (b.meanMs > a.meanMs ? b : a));
}
