/**
 * The one PRNG: xoshiro128** seeded through splitmix32, with per-request streams derived from
 * (seed, key) by hashing, so a request's randomness never depends on what else is in flight.
 */

const UINT32 = 0x1_0000_0000;

/** FNV-1a over the UTF-16 code units of `text`, then avalanche-mixed; stable across platforms. */
export function hashString(text: string, basis = 0x811c9dc5): number {
  let h = basis >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return mix32(h);
}

function mix32(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

export class Rng {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  /** `seed` is any integer (taken modulo 2^32) or a string. */
  constructor(seed: number | string) {
    // splitmix32, written out: a closure here would cost every request (per-request streams).
    const s = typeof seed === 'string' ? hashString(seed) : seed >>> 0;
    this.#a = mix32((s + 0x9e3779b9) >>> 0);
    this.#b = mix32((s + 2 * 0x9e3779b9) >>> 0);
    this.#c = mix32((s + 3 * 0x9e3779b9) >>> 0);
    this.#d = mix32((s + 4 * 0x9e3779b9) >>> 0);
    if ((this.#a | this.#b | this.#c | this.#d) === 0) this.#d = 1;
  }

  /** A uniformly distributed unsigned 32-bit integer. */
  u32(): number {
    const result = Math.imul(rotl(Math.imul(this.#b, 5), 7), 9) >>> 0;
    const t = this.#b << 9;
    this.#c ^= this.#a;
    this.#d ^= this.#b;
    this.#b ^= this.#c;
    this.#a ^= this.#d;
    this.#c ^= t;
    this.#d = rotl(this.#d, 11);
    return result;
  }

  /** Uniform in [0, 1) with 53 bits of precision. */
  float(): number {
    const hi = this.u32() >>> 5;
    const lo = this.u32() >>> 6;
    return (hi * 67108864 + lo) / 9007199254740992;
  }

  /** Uniform integer in [min, max] (inclusive). */
  int(min: number, max: number): number {
    if (!Number.isInteger(min) || !Number.isInteger(max) || max < min) {
      throw new RangeError(`Rng.int needs integers min <= max, got ${min}, ${max}`);
    }
    const span = max - min + 1;
    if (span <= UINT32) {
      // Rejection sampling keeps the distribution exactly uniform.
      const limit = UINT32 - (UINT32 % span);
      let x = this.u32();
      while (x >= limit) x = this.u32();
      return min + (x % span);
    }
    return min + Math.floor(this.float() * span);
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return p > 0 && this.float() < p;
  }

  /** Standard normal by Box-Muller (one value per call keeps the stream position simple). */
  normal(mean = 0, sd = 1): number {
    let u = this.float();
    while (u === 0) u = this.float();
    const v = this.float();
    return mean + sd * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  exponential(mean: number): number {
    let u = this.float();
    while (u === 0) u = this.float();
    return -Math.log(u) * mean;
  }

  /** Gamma(shape, scale) by Marsaglia-Tsang. */
  gamma(shape: number, scale: number): number {
    if (shape < 1) {
      const u = this.float();
      return this.gamma(shape + 1, scale) * Math.pow(u === 0 ? Number.MIN_VALUE : u, 1 / shape);
    }
    const d = shape - 1 / 3;
    const c = 1 / Math.sqrt(9 * d);
    for (;;) {
      const x = this.normal();
      const v0 = 1 + c * x;
      if (v0 <= 0) continue;
      const v = v0 * v0 * v0;
      const u = this.float();
      if (u < 1 - 0.0331 * x * x * x * x || Math.log(u) < 0.5 * x * x + d * (1 - v + Math.log(v))) {
        return d * v * scale;
      }
    }
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('Rng.pick needs a non-empty list');
    return items[this.int(0, items.length - 1)] as T;
  }

  /**
   * An independent stream for `key` (a request id, a stage name); same inputs, same stream.
   * All 128 bits of state come from the key (four hashes from different bases): seeded from one
   * 32-bit hash, two of 100,000 random request ids would share a stream more often than not
   * (the birthday bound), and two requests would get the same text and timing.
   */
  derive(key: string): Rng {
    const base = this.u32Peek();
    const child = new Rng(0);
    child.#a = hashString(key, base);
    child.#b = hashString(key, mix32(base ^ 0x9e3779b9));
    child.#c = hashString(key, mix32(base ^ 0x3c6ef372));
    child.#d = hashString(key, mix32(base ^ 0xdaa66d2b));
    if ((child.#a | child.#b | child.#c | child.#d) === 0) child.#d = 1;
    return child;
  }

  // Derivation must not consume from this stream, or the parent would depend on how many
  // children were derived; the seed state's first word is a stable identity instead.
  private u32Peek(): number {
    return mix32(this.#a ^ rotl(this.#b, 13) ^ rotl(this.#c, 21) ^ this.#d);
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

/** The per-request stream of DESIGN §2: a pure function of (server seed, request key). */
export function requestRng(seed: number, requestKey: string): Rng {
  return new Rng(seed).derive(requestKey);
}

/** 32 lowercase hex characters from a stream, used for deterministic ids. */
export function hex32(rng: Rng): string {
  let out = '';
  for (let i = 0; i < 4; i++) out += rng.u32().toString(16).padStart(8, '0');
  return out;
}
