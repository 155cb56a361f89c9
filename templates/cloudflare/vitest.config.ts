/**
 * `npm test`: two projects. `workers`: the Worker that `flue build` generated (npm test builds it
 * first), run in workerd with its agents' Durable Objects; every model is the scripted one
 * test/global-setup.ts starts, so tests are offline and their replies exact. `node`: tests that
 * run in Node (`*.replay.test.ts`: recorded conversations replayed against the agents).
 */
import { cloudflareTest } from '@cloudflare/vitest-plugin';
import { defineConfig } from 'vitest/config';

// Keep wrangler (inside the test plugin) offline, and its files inside the project.
process.env['WRANGLER_SEND_METRICS'] ??= 'false';
process.env['CLOUDFLARE_CF_FETCH_ENABLED'] ??= 'false';
process.env['XDG_CONFIG_HOME'] ??= new URL('./.xdg', import.meta.url).pathname;

const NODE_TESTS = 'test/**/*.replay.test.ts';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    projects: [
      {
        extends: true,
        plugins: [
          cloudflareTest(({ inject }) => ({
            wrangler: { configPath: './.flue.wrangler.json' },
            miniflare: { bindings: { FLUE_SCRIPTED_MODEL_URL: inject('scriptedModelUrl') } },
          })),
        ],
        test: { name: 'workers', include: ['test/**/*.test.ts'], exclude: [NODE_TESTS], globalSetup: ['./test/global-setup.ts'] },
      },
      { extends: true, test: { name: 'node', include: [NODE_TESTS], environment: 'node' } },
    ],
  },
});
