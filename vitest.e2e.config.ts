import { defineConfig } from 'vitest/config';

/**
 * The real-socket tests: one file at a time, one worker, so the contract's timing tolerances are
 * measured on a quiet process. A 1 MiB young generation keeps every scavenge well under a
 * millisecond; V8's default lets single scavenges in this large test process take 4–6 ms, which
 * a reader stamping arrivals would otherwise see as latency.
 */
export default defineConfig({
  test: {
    include: ['test/e2e/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    maxWorkers: 1,
    fileParallelism: false,
    execArgv: ['--max-semi-space-size=1'],
  },
});
