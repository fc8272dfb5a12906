import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Real-socket tests measure timing; two cores shared by many forks would make tolerances flaky.
    maxWorkers: 2,
  },
});
