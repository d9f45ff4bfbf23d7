import { defineConfig } from 'vitest/config';

// Tests import workspace packages from source through the `@ferrum/source` export condition,
// so a test run never depends on a stale `dist/`.
const conditions = ['@ferrum/source', 'import', 'module', 'node', 'default'];

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions, externalConditions: conditions } },
  test: {
    include: ['packages/*/src/**/*.test.ts', 'packages/*/test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});
