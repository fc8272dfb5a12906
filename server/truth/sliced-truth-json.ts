/**
 * Truth records made into JSON text a slice at a time, in the emission scheduler's gaps: a
 * record of thousands of writes is hundreds of kilobytes of JSON, and made in one go it held the
 * thread for 10–20 ms, so the next request's arrival was stamped that late. Each record's text
 * is still handed over whole, once (one line of the truth log, one event of /_truth/stream).
 */
import { truthJsonPieces, type TruthRecord } from '../../contracts/truth.ts';

/**
 * List items per piece (at most about half a millisecond's work), and pieces per turn while
 * nothing waits: each turn takes more pieces as records wait, so the text never falls behind
 * the requests that end (the work is the same as in one go).
 */
const ITEMS_PER_PIECE = 128;
const PIECES_PER_TURN = 2;
const WAITING_PER_EXTRA_PIECE = 4;

export interface SlicedTruthJsonOptions {
  /** Runs a job in a coming turn (the emission scheduler's gaps). */
  defer: (job: () => void) => void;
  /** A record's whole JSON text (as `JSON.stringify(truthToJson(record))`). */
  done: (record: TruthRecord, json: string) => void;
  /** A record that could not be serialized: it is left out whole, never handed over cut short. */
  failed: (record: TruthRecord, error: unknown) => void;
  /** A record leaves the queue for serializing. */
  taken?: (record: TruthRecord) => void;
  /** A turn ended with nothing left to serialize. */
  idle?: () => void;
}

export class SlicedTruthJson {
  readonly #options: SlicedTruthJsonOptions;
  readonly #waiting: TruthRecord[] = [];
  /** The record being serialized, its pieces still to come, and its text so far. */
  #current: TruthRecord | null = null;
  #pieces: Generator<string> | null = null;
  #text = '';
  #scheduled = false;

  constructor(options: SlicedTruthJsonOptions) {
    this.#options = options;
  }

  /** Records waiting, not yet begun. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** Records waiting or being serialized. */
  get pending(): number {
    return this.#waiting.length + (this.#current === null ? 0 : 1);
  }

  push(record: TruthRecord): void {
    this.#waiting.push(record);
    this.#schedule();
  }

  /** Serializes everything still waiting now, in this turn (a closing log). */
  flush(): void {
    this.#serialize(Infinity);
  }

  /** Forgets everything waiting (its consumer is gone). */
  clear(): void {
    this.#waiting.length = 0;
    this.#current = null;
    this.#pieces = null;
    this.#text = '';
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    this.#options.defer(this.#turn);
  }

  readonly #turn = (): void => {
    this.#scheduled = false;
    try {
      this.#serialize(PIECES_PER_TURN + Math.floor(this.#waiting.length / WAITING_PER_EXTRA_PIECE));
    } finally {
      // A consumer that threw (its job's failure is said by the scheduler) must not stall the rest.
      if (this.pending > 0) this.#schedule();
      else this.#options.idle?.();
    }
  };

  #serialize(pieces: number): void {
    for (let n = 0; n < pieces; n++) {
      if (this.#pieces === null) {
        const next = this.#waiting.shift();
        if (next === undefined) return;
        this.#options.taken?.(next);
        this.#current = next;
        this.#pieces = truthJsonPieces(next, ITEMS_PER_PIECE);
      }
      const record = this.#current as TruthRecord;
      let piece: IteratorResult<string>;
      try {
        piece = this.#pieces.next();
      } catch (error) {
        this.#finishRecord();
        this.#options.failed(record, error);
        continue;
      }
      if (piece.done !== true) {
        this.#text += piece.value;
        continue;
      }
      const json = this.#text;
      this.#finishRecord();
      this.#options.done(record, json);
    }
  }

  #finishRecord(): void {
    this.#current = null;
    this.#pieces = null;
    this.#text = '';
  }
}
