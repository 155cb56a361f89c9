import path from 'node:path';
import { cloudflareTest } from '@cloudflare/vitest-plugin';
import { type Plugin, defineConfig } from 'vitest/config';
import { packageSkillDirectory, skillModuleSource } from './src/build/plugins.ts';
import { SOURCE_CONDITION, sourceResolve } from './test/support/source-conditions.ts';
import { WEBHOOK_SECRET } from './test/support/github-webhook.ts';

// Keep wrangler (inside the test plugin) offline and its state inside the project.
process.env.WRANGLER_SEND_METRICS ??= 'false';
process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= 'false';
process.env.XDG_CONFIG_HOME ??= new URL('./.xdg', import.meta.url).pathname;

/** `SKILL.md` imports packaged exactly as `flue build` packages them (src/build/plugins.ts). */
function skillMarkdown(): Plugin {
  return {
    name: 'flue-skill-md',
    async load(id) {
      const file = id.split('?')[0]!;
      if (path.basename(file) !== 'SKILL.md') return null;
      const packaged = await packageSkillDirectory(path.dirname(file));
      return skillModuleSource(packaged.reference);
    },
  };
}

// The Cloudflare host in real workerd: Durable Objects, alarms and RPC. The scripted model server
// runs in Node (global setup) and the Worker reaches it over loopback.
// Importing the module sets NODE_OPTIONS, so Node processes the tests spawn resolve @flue/runtime to
// its sources; the Worker always does (no "node" condition in workerd).
void SOURCE_CONDITION;

export default defineConfig({
  // The Worker under test runs the sources too: `flue-source` ahead of the conditions the plugin
  // adds for workerd, and ahead of vite's defaults in the ssr environment (where vitest resolves).
  resolve: { conditions: [SOURCE_CONDITION] },
  ssr: sourceResolve.ssr,
  plugins: [
    skillMarkdown(),
    cloudflareTest(({ inject }) => ({
      wrangler: { configPath: './test/workers/wrangler.jsonc' },
      // GITHUB_WEBHOOK_SECRET: the secret the test app's GitHub channel reads (test/workers/channel-app.ts).
      // FLUE_FUZZ_SEED replays a router fuzz run (test/workers/router-fuzz.test.ts).
      miniflare: {
        bindings: {
          SCRIPTED_MODEL_URL: inject('scriptedModelUrl'),
          FLUE_FUZZ_SEED: process.env.FLUE_FUZZ_SEED ?? '',
          GITHUB_WEBHOOK_SECRET: WEBHOOK_SECRET,
        },
      },
    })),
  ],
  test: {
    include: ['test/workers/**/*.test.ts'],
    globalSetup: ['./test/workers/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
