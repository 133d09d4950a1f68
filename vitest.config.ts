import { defineConfig } from 'vitest/config';

// Two tiers, named by suffix: `test/unit/*.test.ts` (pure, no services) and
// `test/integration/*.integration.test.ts` (real MariaDB, Redis, RabbitMQ, Chromium).
// `npm run test:unit` and `npm run test:integration` run one tier; `npm test` runs both.
export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 180_000,
    hookTimeout: 180_000,
    reporters: process.env.CI
      ? ['default', ['json', { outputFile: 'test-results/vitest.json' }]]
      : ['default'],
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      { extends: true, test: { name: 'integration', include: ['test/integration/**/*.test.ts'] } },
    ],
  },
});
