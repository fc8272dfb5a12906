/**
 * An append-only Float64 column that grows by doubling: per-request values and pooled gaps
 * live here instead of in per-request JS objects, so a finished request costs a few words.
 */
export class GrowableColumn {
  #data: Float64Array;
  #length = 0;

  constructor(initialCapacity = 64) {
    this.#data = new Float64Array(Math.max(1, initialCapacity));
  }

  static from(values: ArrayLike<number>): GrowableColumn {
    const column = new GrowableColumn(values.length);
    column.#data.set(values);
    column.#length = values.length;
    return column;
  }

  get length(): number {
    return this.#length;
  }

  /** Bytes held, including the unused tail of the doubling buffer. */
  get retainedBytes(): number {
    return this.#data.byteLength;
  }

  push(value: number): void {
    if (this.#length === this.#data.length) this.#grow(this.#length + 1);
    this.#data[this.#length++] = value;
  }

  append(values: ArrayLike<number>): void {
    if (this.#length + values.length > this.#data.length) this.#grow(this.#length + values.length);
    this.#data.set(values, this.#length);
    this.#length += values.length;
  }

  /** A view of the filled part (shares memory; copy before mutating). */
  view(): Float64Array {
    return this.#data.subarray(0, this.#length);
  }

  /** Drops the unused tail of the buffer (when no more values will come). */
  trim(): void {
    if (this.#data.length > this.#length) this.#data = this.#data.slice(0, Math.max(1, this.#length));
  }

  #grow(needed: number): void {
    let capacity = this.#data.length * 2;
    while (capacity < needed) capacity *= 2;
    const next = new Float64Array(capacity);
    next.set(this.#data.subarray(0, this.#length));
    this.#data = next;
  }
}
