import { defineConfig } from 'vitest/config';
import { sourceResolve } from './test/support/source-conditions.ts';

// Suites that build, spawn processes (crash children, wrangler, flue dev, a browser) or move tens
// of megabytes: single tests there take up to a minute on a loaded 2-core machine. Each keeps the
// timeouts it sets per test; the rest of their tests get SLOW_TEST_TIMEOUT_MS.
const SLOW = [
  'src/build/**/*.test.ts',
  'test/e2e/**/*.test.ts',
  'test/crash/**/*.test.ts',
  'test/page/**/*.test.ts',
  'test/interop/cloudflare-sdk.test.ts',
  'test/large-values.test.ts',
  'test/declarations.test.ts',
  'test/doc-snippets.test.ts',
];
const SLOW_TEST_TIMEOUT_MS = 120_000;
// Every other test takes at most ~5 s on such a machine: a hang shows after 30 s, not 90.
const TEST_TIMEOUT_MS = 30_000;

// The workerd suite (Cloudflare target) runs under vitest.workers.config.ts.
const EXCLUDE = ['test/workers/**', 'node_modules/**'];

// Node-hosted tests: the engine on node:sqlite, the scripted model server on loopback, crash
// tests in child processes.
export default defineConfig({
  ...sourceResolve,
  test: {
    environment: 'node',
    // Vitest's default on a 2-core machine is one worker (cores - 1), but most of this suite waits
    // on child processes (npm, wrangler, flue dev, crash children): two workers take the Node suite
    // from ~640 s to ~420 s. Every test makes its own temporary project, port and database.
    maxWorkers: 2,
    hookTimeout: 30_000,
    // Vitest queues projects by name: 'slow' sorts before 'unit', so the long suites start first
    // and the short ones fill the other worker around them (queued last, one of them would finish
    // minutes after everything else).
    projects: [
      { extends: true, test: { name: 'slow', include: SLOW, exclude: EXCLUDE, testTimeout: SLOW_TEST_TIMEOUT_MS } },
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
          exclude: [...EXCLUDE, ...SLOW],
          testTimeout: TEST_TIMEOUT_MS,
        },
      },
    ],
  },
});
