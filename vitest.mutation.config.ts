import { defineConfig } from 'vitest/config';

/**
 * The tests Stryker runs against each mutant (npm run mutation): the ones that import the
 * mutated modules from source. The CLI tests run the built bundle, which no mutant reaches.
 */
export default defineConfig({
  test: {
    include: [
      'test/units/**/*.test.ts',
      'test/channel/mentions.test.ts',
      'test/channel/proposals.test.ts',
      'test/channel/documents.test.ts',
      'test/engine/*.test.ts',
      'test/workflow/expression.test.ts',
      'test/workflow/schema-holds.test.ts',
    ],
    // The experiment's design simulated: minutes under instrumentation; its code is held by hand in experiment-statistics.test.ts.
    exclude: ['test/units/experiment-simulation.test.ts'],
    testTimeout: 20_000,
  },
});
