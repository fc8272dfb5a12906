/**
 * Where truth records live: an in-memory map bounded by count (oldest evicted first), an
 * optional JSONL log appended as each request ends, and listeners for live feeds.
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { truthToJson, type TruthRecord } from '../../contracts/truth.ts';

export type TruthListener = (record: TruthRecord) => void;

export class TruthStore {
  readonly #records = new Map<string, TruthRecord>();
  readonly #capacity: number;
  readonly #log: WriteStream | null;
  readonly #listeners = new Set<TruthListener>();

  constructor(options: { capacity: number; logPath?: string | undefined }) {
    this.#capacity = options.capacity;
    this.#log = options.logPath ? createWriteStream(options.logPath, { flags: 'a' }) : null;
  }

  /** Records a request as soon as it is planned, so in-flight truth can be asked for. */
  begin(record: TruthRecord): void {
    this.#records.delete(record.id);
    this.#records.set(record.id, record);
    if (this.#records.size > this.#capacity) {
      const oldest = this.#records.keys().next().value;
      if (oldest !== undefined) this.#records.delete(oldest);
    }
  }

  /** Called once when the request's response has ended, however it ended. */
  finish(record: TruthRecord): void {
    if (this.#log !== null) this.#log.write(`${JSON.stringify(truthToJson(record))}\n`);
    for (const listener of this.#listeners) listener(record);
  }

  get(id: string): TruthRecord | undefined {
    return this.#records.get(id);
  }

  all(): IterableIterator<TruthRecord> {
    return this.#records.values();
  }

  get size(): number {
    return this.#records.size;
  }

  subscribe(listener: TruthListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async close(): Promise<void> {
    const log = this.#log;
    if (log === null) return;
    await new Promise<void>((resolve) => log.end(resolve));
  }
}
