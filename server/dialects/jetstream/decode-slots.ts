/**
 * JetStream's admission: a fixed number of decode slots; requests beyond them wait in the
 * prefill backlog, and once the backlog is full a new request is refused (gRPC
 * RESOURCE_EXHAUSTED, HTTP 503). The isolated timing model does not slow queued requests down,
 * so the backlog shows load without changing any planned time.
 *
 * The gauges follow JetStream's orchestrator: a request is in prefill until its first token (when
 * the engine produces it), and only then takes a decode slot; past-prefill requests beyond the
 * slots are its generate backlog. Its prefill thread takes a request off the prefill backlog
 * before prefilling it (`_prefill_backlog.get()` in `_prefill_thread`), so of the requests in
 * prefill one is being prefilled (one prefill engine, JetStream's usual setup) and the others
 * are the backlog: a lone request's backlog is 0.
 */
import type { TruthRecord } from '../../../contracts/truth.ts';
import type { EngineRequest } from '../../engine/engine-events.ts';
import type { EmissionScheduler } from '../../transport/emission-scheduler.ts';
import type { JetstreamMetrics } from './jetstream-metrics.ts';

/** Requests JetStream prefills at once, each taken off the backlog: one per prefill engine. */
const PREFILL_ENGINES = 1;

interface Admitted {
  /** The request carries a start time (jetstream-admission.ts). */
  startTime: boolean;
  /** Its first token was produced: prefill is over. */
  decoding: boolean;
}

export class DecodeSlots {
  readonly slots: number;
  /** Most requests in the prefill backlog (not yet past prefill); beyond it requests are refused. */
  readonly limit: number;
  readonly #metrics: JetstreamMetrics;
  readonly #scheduler: EmissionScheduler;
  readonly #admitted = new Map<TruthRecord, Admitted>();
  /** The engine's request of each admitted record (ids may repeat: a client's x-request-id). */
  readonly #byRequest = new WeakMap<EngineRequest, TruthRecord>();
  #decoding = 0;

  constructor(slots: number, limit: number, metrics: JetstreamMetrics, scheduler: EmissionScheduler) {
    this.slots = slots;
    this.limit = limit;
    this.#metrics = metrics;
    this.#scheduler = scheduler;
    this.#report();
  }

  get active(): number {
    return this.#admitted.size;
  }

  /** Requests waiting in the prefill backlog: in prefill, less the one being prefilled. */
  get #backlog(): number {
    return Math.max(0, this.#admitted.size - this.#decoding - PREFILL_ENGINES);
  }

  /**
   * The prefill queue is full: the next request is refused. As in JetStream, whose
   * `place_request_on_prefill_queue` fails on its prefill backlog alone, neither the request
   * being prefilled nor those past prefill (decoding, or waiting for a slot) count.
   */
  get full(): boolean {
    return this.#backlog >= this.limit;
  }

  /**
   * False when the queue is full: the caller refuses the request. `firstTokenAtMono`: when its
   * first token is planned (the isolated engine knows it now); the batching engine says so
   * later, through `firstToken` with the `request` it was admitted as.
   */
  admit(record: TruthRecord, request: EngineRequest, startTime = false, firstTokenAtMono = Infinity): boolean {
    if (this.full) return false;
    this.#admitted.set(record, { startTime, decoding: false });
    this.#byRequest.set(request, record);
    if (firstTokenAtMono < Infinity) {
      this.#scheduler.schedule({ run: () => (this.#prefillDone(record), null) }, firstTokenAtMono);
    }
    this.#report();
    return true;
  }

  /** The engine produced `request`'s first token: its prefill is over. */
  firstToken(request: EngineRequest): void {
    const record = this.#byRequest.get(request);
    if (record !== undefined) this.#prefillDone(record);
  }

  /**
   * Called for every request the engine finishes; only admitted JetStream records count.
   * `queuedMs` is the engine's arrival → scheduled wait.
   */
  release(record: TruthRecord, queuedMs: number): void {
    const admitted = this.#admitted.get(record);
    if (admitted === undefined) return;
    this.#admitted.delete(record);
    if (admitted.decoding) this.#decoding--;
    this.#metrics.observe(record, queuedMs, admitted.startTime);
    this.#report();
  }

  #prefillDone(record: TruthRecord): void {
    const admitted = this.#admitted.get(record);
    if (admitted === undefined || admitted.decoding) return;
    admitted.decoding = true;
    this.#decoding++;
    this.#report();
  }

  #report(): void {
    this.#metrics.usage({ prefillBacklog: this.#backlog, decoding: this.#decoding, slots: this.slots });
  }
}
