import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { conditions: ['baton-source'] },
  ssr: { resolve: { conditions: ['baton-source'] } },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 30_000,
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
  },
});
