/**
 * The Cloudflare-target benchmark (not a test): `npx vitest run -c bench/workers/vitest.config.ts`.
 * Same plugin and layout as vitest.workers.config.ts, with its own Worker and wrangler config.
 * BENCH_RUNS (default 7) sets how many measured runs each figure's median is taken over.
 */
import { fileURLToPath } from 'node:url';
import { cloudflareTest } from '@cloudflare/vitest-plugin';
import { defineConfig } from 'vitest/config';
import { SOURCE_CONDITION, sourceResolve } from '../../test/support/source-conditions.ts';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

// Keep wrangler (inside the plugin) offline and its state inside the project.
process.env.WRANGLER_SEND_METRICS ??= 'false';
process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= 'false';
process.env.XDG_CONFIG_HOME ??= here('../../.xdg');

export default defineConfig({
  root: here('../..'),
  // The Worker runs the sources of @flue/runtime, like the workerd tests (vitest.workers.config.ts).
  resolve: { conditions: [SOURCE_CONDITION] },
  ssr: sourceResolve.ssr,
  plugins: [
    cloudflareTest(({ inject }) => ({
      wrangler: { configPath: here('./wrangler.jsonc') },
      miniflare: {
        bindings: {
          SCRIPTED_MODEL_URL: inject('scriptedModelUrl'),
          BENCH_RUNS: process.env.BENCH_RUNS ?? '7',
        },
      },
    })),
  ],
  test: {
    include: ['bench/workers/**/*.bench.ts'],
    globalSetup: [here('../../test/workers/global-setup.ts')],
    testTimeout: 20 * 60_000,
    hookTimeout: 60_000,
  },
});
