/**
 * The benchmark's servers (benchtruth's target and the node:http baseline) collect garbage on
 * SIGUSR2 and print what the JS heap and its off-heap buffers still hold, so the idle-memory
 * figure can be split: RSS also counts pages of fixed cost (V8's young generation becoming
 * resident as it grows to its 16 MiB semi-spaces), which a per-stream RSS figure spreads over the
 * streams; retained bytes are what the streams themselves keep.
 */
export const RETAINED_LINE = /RETAINED (\d+)/g;

export function reportRetainedOnSignal(): void {
  process.on('SIGUSR2', () => {
    const gc = (globalThis as { gc?: () => void }).gc;
    // Twice: array buffers whose wrappers die in one collection are released in the next.
    gc?.();
    gc?.();
    const memory = process.memoryUsage();
    process.stdout.write(`RETAINED ${memory.heapUsed + memory.external}\n`);
  });
}
