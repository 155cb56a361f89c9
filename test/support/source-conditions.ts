/**
 * Tests run the TypeScript sources of @flue/runtime, never the built dist/ that plain Node and
 * Worker builds import (package.json: "flue-source" comes before "types" and "import"). Applied by every vitest config: to
 * Vite's resolver, and through NODE_OPTIONS to the Node processes tests spawn (crash children,
 * end-to-end fixtures), so a test can never pass against a stale build.
 */
import { defaultServerConditions } from 'vite';

export const SOURCE_CONDITION = 'flue-source';

const flag = `--conditions=${SOURCE_CONDITION}`;
if (!(process.env.NODE_OPTIONS ?? '').includes(flag)) {
  process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} ${flag}`.trim();
}

export const sourceResolve = {
  resolve: { conditions: [SOURCE_CONDITION, ...defaultServerConditions] },
  ssr: { resolve: { conditions: [SOURCE_CONDITION, ...defaultServerConditions] } },
};
