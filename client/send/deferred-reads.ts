/**
 * Keeps non-urgent work off the read path. When the server writes to many streams at once, the
 * reads of one burst are handed to JavaScript one socket after another; whatever each read costs
 * before the next one is stamped delays every later stamp of the burst. So a read is only stamped
 * and queued here (no copy: undici hands over a view of that read's own buffer, which nothing
 * reuses), and the queued reads are decoded together once the event loop has taken every ready
 * socket (`setImmediate`, which runs after the poll phase). A response's end is queued the same
 * way, so building its record, folding it into the samples and sending the next request of a
 * closed loop wait too. The stamps stay the moments the bytes reached JavaScript (DESIGN §4);
 * only SSE decoding, JSON parsing and record keeping move later.
 */
import { realClock } from '../../contracts/clock.ts';
import type { RequestRecord } from '../record/request-record.ts';
import { measuringFailed, type MeasuredRequest } from './measured-request.ts';

/** The transport's way to cut a request off (its later reads and end are then never delivered). */
export interface CutOff {
  abort(reason: Error): void;
}

/** The reads (and the end) of one response not yet fed to its measurer, in arrival order. */
export class DeferredReads {
  readonly #request: MeasuredRequest;
  readonly #transport: CutOff;
  /** The request was cut off (its measurement gave up or failed): later reads are dropped. */
  #cutOff = false;
  // Reused slots (count, not length: truncating an array is a slow native call on this path).
  readonly #chunks: Uint8Array[] = [];
  readonly #stamps: number[] = [];
  #count = 0;
  #endAtMs: number | null = null;
  #lastAtMs = 0;
  #queued = false;

  constructor(request: MeasuredRequest, transport: CutOff) {
    this.#request = request;
    this.#transport = transport;
  }

  push(chunk: Uint8Array, atMs: number): void {
    if (this.#cutOff) return;
    this.#chunks[this.#count] = chunk;
    this.#stamps[this.#count] = atMs;
    this.#count++;
    this.#lastAtMs = atMs;
    this.#enqueue();
  }

  /** The response ended normally at `atMs`; its record is made with the queued reads. */
  end(atMs: number): void {
    this.#endAtMs = atMs;
    this.#enqueue();
  }

  /** Feeds every queued read to the measurer now (before a failure is recorded). */
  flush(): void {
    const chunks = this.#chunks;
    const stamps = this.#stamps;
    const count = this.#count;
    this.#count = 0;
    const measurer = this.#request.measurer;
    for (let i = 0; i < count; i++) {
      const chunk = chunks[i] as Uint8Array;
      chunks[i] = NO_BYTES; // the read's buffer is not kept past its decoding
      if (this.#cutOff) continue;
      measurer.data(chunk, stamps[i] as number);
      // Past a size bound: the record is made now, at this read, and the rest is never read.
      if (measurer.gaveUp) this.#cut(measurer.abandon(stamps[i] as number));
    }
  }

  /** Settles the request with `record` and cuts its transport off: nothing more of it is read. */
  #cut(record: RequestRecord): void {
    this.#cutOff = true;
    this.#endAtMs = null;
    this.#request.settle(record);
    this.#transport.abort(new Error(record.failure?.message ?? 'cut off'));
  }

  #enqueue(): void {
    if (this.#queued) return;
    this.#queued = true;
    waiting.push(this);
    if (!flushScheduled) {
      flushScheduled = true;
      setImmediate(flushWaiting);
    }
  }

  /**
   * Measuring threw (a bug, not the server's fault): the request still ends as a record, as it
   * did when undici caught the throw on the read path; the other queued responses go on.
   */
  failed(error: unknown): void {
    const atMs = this.#endAtMs ?? this.#lastAtMs;
    // Cut off too: a transport left reading a settled request is one no deadline or signal
    // ends (the deadline sweep forgets it once settled), and the run would wait for it forever.
    this.#cut(this.#request.measurer.abandon(atMs, measuringFailed(error)));
  }

  /** Called by the shared flush only. */
  flushQueued(): void {
    this.#queued = false;
    this.flush();
    if (this.#cutOff) return;
    const endAtMs = this.#endAtMs;
    if (endAtMs !== null) {
      this.#endAtMs = null;
      this.#request.settle(this.#request.measurer.end(endAtMs));
    }
  }
}

const NO_BYTES = new Uint8Array(0);

/**
 * How long one flush may decode before the event loop polls again. A burst's backlog (after a
 * GC pause, say) decoded in one go would hold every read that arrives meanwhile unstamped.
 */
const FLUSH_SLICE_MS = 0.5;

let waiting: DeferredReads[] = [];
let spare: DeferredReads[] = [];
let nextWaiting = 0;
let flushScheduled = false;

function flushWaiting(): void {
  flushScheduled = false;
  const batch = waiting;
  const deadline = realClock.now() + FLUSH_SLICE_MS;
  while (nextWaiting < batch.length) {
    const reads = batch[nextWaiting++] as DeferredReads;
    try {
      reads.flushQueued();
    } catch (error) {
      reads.failed(error);
    }
    if (realClock.now() > deadline) break;
  }
  if (nextWaiting < batch.length) {
    flushScheduled = true;
    setImmediate(flushWaiting);
    return;
  }
  nextWaiting = 0;
  waiting = spare;
  batch.length = 0;
  spare = batch;
}
