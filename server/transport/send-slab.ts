/**
 * Buffers for framed sends, carved from 64 KiB slabs of our own. Node's pool behind
 * Buffer.allocUnsafe makes a new 8 KiB ArrayBuffer every thirty-odd token writes, and at 100,000
 * writes a second making them (each an external allocation V8 accounts for) was 2–3 % of the
 * server's CPU. A slab is never written twice: a send still queued in its socket keeps its bytes,
 * and the slab is freed with the last send carved from it.
 */
const SLAB_BYTES = 64 * 1024;
/** Larger sends (a late stream's many writes at once) take a buffer of their own. */
const LARGEST_CARVED = 8 * 1024;

let slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
let used = 0;

/** An uninitialised buffer of `size` bytes that nothing else will write to. */
export function sendBuffer(size: number): Buffer {
  if (size > LARGEST_CARVED) return Buffer.allocUnsafeSlow(size);
  if (used + size > SLAB_BYTES) {
    slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
    used = 0;
  }
  const carved = slab.subarray(used, used + size);
  // 8-byte steps, as Node's own pool keeps them.
  used = (used + size + 7) & ~7;
  return carved;
}
