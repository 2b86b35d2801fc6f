import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    globalSetup: ['test/global-setup.ts'],
    // vitest runs one file at a time on two cores (its default leaves one core free); the files
    // mostly wait on child processes and timers, so two at a time halves the wall time.
    maxWorkers: 2,
  },
});
