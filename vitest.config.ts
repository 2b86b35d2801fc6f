import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    globalSetup: ['test/global-setup.ts'],
    // Two cores here, and the files mostly wait on child processes, servers and timers: three at a
    // time take about three quarters of the wall time of two (529 s against 694 s for the suite).
    maxWorkers: 3,
  },
});
