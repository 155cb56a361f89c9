/**
 * `npm test`: the Worker that `flue build` generated (npm test builds it first), run in workerd
 * with its agents' Durable Objects. Every model is the scripted one test/global-setup.ts starts,
 * so tests are offline and their replies exact.
 */
import { cloudflareTest } from '@cloudflare/vitest-plugin';
import { defineConfig } from 'vitest/config';

// Keep wrangler (inside the test plugin) offline, and its files inside the project.
process.env['WRANGLER_SEND_METRICS'] ??= 'false';
process.env['CLOUDFLARE_CF_FETCH_ENABLED'] ??= 'false';
process.env['XDG_CONFIG_HOME'] ??= new URL('./.xdg', import.meta.url).pathname;

export default defineConfig({
  plugins: [
    cloudflareTest(({ inject }) => ({
      wrangler: { configPath: './.flue.wrangler.json' },
      miniflare: { bindings: { FLUE_SCRIPTED_MODEL_URL: inject('scriptedModelUrl') } },
    })),
  ],
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['./test/global-setup.ts'],
    testTimeout: 30_000,
  },
});
