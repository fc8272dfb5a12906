/**
 * JetStream's admission: a fixed number of decode slots; requests beyond them wait in the
 * prefill backlog, and once the backlog is full a new request is refused (gRPC
 * RESOURCE_EXHAUSTED, HTTP 503). The isolated timing model does not slow queued requests down,
 * so the backlog shows load without changing any planned time.
 */
import type { TruthRecord } from '../../../contracts/truth.ts';
import type { JetstreamMetrics } from './jetstream-metrics.ts';

export class DecodeSlots {
  readonly slots: number;
  /** Most requests in flight (in slots plus backlog); beyond it requests are refused. */
  readonly limit: number;
  readonly #metrics: JetstreamMetrics;
  /** Each admitted record, and whether it carries a start time (jetstream-admission.ts). */
  readonly #admitted = new Map<TruthRecord, boolean>();

  constructor(slots: number, limit: number, metrics: JetstreamMetrics) {
    this.slots = slots;
    this.limit = limit;
    this.#metrics = metrics;
    metrics.usage({ active: 0, slots });
  }

  get active(): number {
    return this.#admitted.size;
  }

  /** The prefill queue is full: the next request is refused. */
  get full(): boolean {
    return this.#admitted.size >= this.limit;
  }

  /** False when the queue is full: the caller refuses the request. */
  admit(record: TruthRecord, startTime = false): boolean {
    if (this.full) return false;
    this.#admitted.set(record, startTime);
    this.#metrics.usage({ active: this.#admitted.size, slots: this.slots });
    return true;
  }

  /**
   * Called for every request the engine finishes; only admitted JetStream records count.
   * `queuedMs` is the engine's arrival → scheduled wait.
   */
  release(record: TruthRecord, queuedMs: number): void {
    const startTime = this.#admitted.get(record);
    if (startTime === undefined) return;
    this.#admitted.delete(record);
    this.#metrics.observe(record, queuedMs, startTime);
    this.#metrics.usage({ active: this.#admitted.size, slots: this.slots });
  }
}
