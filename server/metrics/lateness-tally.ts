/**
 * How late the emission scheduler runs its tasks (actual − due), kept as a fixed histogram so
 * that counting costs one array increment on the hot path: 5 µs buckets up to 20 ms, then
 * 1 ms buckets up to 10 s. Percentiles are exact to the bucket width; the maximum is exact.
 */
const FINE_MS = 0.005;
const FINE_BUCKETS = 4000; // 0–20 ms
const COARSE_MS = 1;
const COARSE_BUCKETS = 9980; // 20 ms – 10 s; later runs land in the last bucket
const FINE_LIMIT_MS = FINE_MS * FINE_BUCKETS;

export interface LatenessSummary {
  count: number;
  meanMs: number | null;
  p50Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
}

function bucketOf(lateMs: number): number {
  if (lateMs < FINE_LIMIT_MS) return Math.floor(lateMs / FINE_MS);
  return FINE_BUCKETS + Math.min(COARSE_BUCKETS - 1, Math.floor((lateMs - FINE_LIMIT_MS) / COARSE_MS));
}

function upperEdge(bucket: number): number {
  return bucket < FINE_BUCKETS ? (bucket + 1) * FINE_MS : FINE_LIMIT_MS + (bucket - FINE_BUCKETS + 1) * COARSE_MS;
}

export class LatenessTally {
  #counts = new Uint32Array(FINE_BUCKETS + COARSE_BUCKETS);
  #count = 0;
  #sum = 0;
  #max = 0;

  add(lateMs: number): void {
    const late = lateMs > 0 ? lateMs : 0;
    const bucket = bucketOf(late);
    this.#counts[bucket] = (this.#counts[bucket] as number) + 1;
    this.#count++;
    this.#sum += late;
    if (late > this.#max) this.#max = late;
  }

  reset(): void {
    this.#counts.fill(0);
    this.#count = 0;
    this.#sum = 0;
    this.#max = 0;
  }

  /** Upper edge of the bucket holding the p-th percentile (never above the true maximum). */
  percentileMs(p: number): number | null {
    if (this.#count === 0) return null;
    const rank = Math.max(1, Math.ceil((p / 100) * this.#count));
    let seen = 0;
    for (let i = 0; i < this.#counts.length; i++) {
      seen += this.#counts[i] as number;
      if (seen >= rank) return Math.min(this.#max, upperEdge(i));
    }
    return this.#max;
  }

  summary(): LatenessSummary {
    const empty = this.#count === 0;
    return {
      count: this.#count,
      meanMs: empty ? null : this.#sum / this.#count,
      p50Ms: this.percentileMs(50),
      p99Ms: this.percentileMs(99),
      maxMs: empty ? null : this.#max,
    };
  }
}
