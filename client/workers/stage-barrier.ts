/**
 * Lines worker threads up: a key (say "stage 2 ready") is released once every worker still
 * running has arrived at it. A worker that finishes or dies leaves, so the others never wait
 * for it. Pure bookkeeping; the caller decides what a release means (a shared start epoch).
 */
export class StageBarrier<Key> {
  readonly #live: Set<number>;
  readonly #arrived = new Map<Key, Set<number>>();
  readonly #onRelease: (key: Key) => void;

  constructor(workers: number, onRelease: (key: Key) => void) {
    this.#live = new Set(Array.from({ length: workers }, (_, i) => i));
    this.#onRelease = onRelease;
  }

  arrive(key: Key, worker: number): void {
    let arrived = this.#arrived.get(key);
    if (arrived === undefined) this.#arrived.set(key, (arrived = new Set()));
    arrived.add(worker);
    this.#check(key, arrived);
  }

  /** The worker will arrive nowhere any more (finished or died). */
  leave(worker: number): void {
    if (!this.#live.delete(worker)) return;
    for (const [key, arrived] of [...this.#arrived]) this.#check(key, arrived);
  }

  #check(key: Key, arrived: Set<number>): void {
    for (const worker of this.#live) if (!arrived.has(worker)) return;
    this.#arrived.delete(key);
    this.#onRelease(key);
  }
}
