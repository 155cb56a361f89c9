/** Types of scripts/build-node.mjs, for tests that build dist/node/ before running it. */
export function isStale(): boolean;
export function buildNode(): Promise<void>;
