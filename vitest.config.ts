import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 180_000,
    hookTimeout: 180_000,
    reporters: process.env.CI
      ? ['default', ['json', { outputFile: 'test-results/vitest.json' }]]
      : ['default'],
  },
});
