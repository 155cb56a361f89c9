/** Types of scripts/build-dist.mjs, for tests that build dist/ before running it. */
export function isStale(): boolean;
export function buildDist(): Promise<void>;
