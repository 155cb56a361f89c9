import { cloudflareTest } from '@cloudflare/vitest-plugin';
import { defineConfig } from 'vitest/config';

// Keep wrangler (inside the test plugin) offline and its state inside the project.
process.env.WRANGLER_SEND_METRICS ??= 'false';
process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= 'false';
process.env.XDG_CONFIG_HOME ??= new URL('./.xdg', import.meta.url).pathname;

// The Cloudflare host in real workerd: Durable Objects, alarms and RPC. The scripted model server
// runs in Node (global setup) and the Worker reaches it over loopback.
export default defineConfig({
  plugins: [
    cloudflareTest(({ inject }) => ({
      wrangler: { configPath: './test/workers/wrangler.jsonc' },
      miniflare: { bindings: { SCRIPTED_MODEL_URL: inject('scriptedModelUrl') } },
    })),
  ],
  test: {
    include: ['test/workers/**/*.test.ts'],
    globalSetup: ['./test/workers/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
