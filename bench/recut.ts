/**
 * For the decode benchmarks: the same stream re-cut at seeded random offsets (reads of 1 to
 * twice the mean part size), so a decoder is timed on reads that end anywhere.
 */
import { Rng } from '../contracts/rng.ts';

export function recutAtRandom(parts: readonly Uint8Array[], seed = 1): Uint8Array[] {
  const all = Buffer.concat(parts);
  const rng = new Rng(seed);
  const mean = Math.round(all.length / parts.length);
  const out: Uint8Array[] = [];
  for (let p = 0; p < all.length; ) {
    const n = rng.int(1, 2 * mean);
    // A copy per read, as a socket hands over its own buffer for each.
    out.push(new Uint8Array(all.subarray(p, Math.min(all.length, p + n))));
    p += n;
  }
  return out;
}
