import { defineConfig } from 'vitest/config';
import { sourceResolve } from './test/support/source-conditions.ts';

// Node-hosted tests: the engine on node:sqlite, the scripted model server on loopback, crash
// tests in child processes. The workerd suite (Cloudflare target) gets its own config.
export default defineConfig({
  ...sourceResolve,
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // The workerd suite runs under vitest.workers.config.ts.
    exclude: ['test/workers/**', 'node_modules/**'],
    environment: 'node',
    testTimeout: 90_000,
    hookTimeout: 30_000,
  },
});
