// The ORIGINAL runtime's public surface, as bench/node/side-by-side-child.ts drives it.
//
// Plain JavaScript on purpose: bare specifiers here resolve from bench/original/node_modules (the
// published @flue/runtime 2.1.0 and the pi-ai 0.83 it depends on), and the repo's tsconfig does not
// type-check .mjs files, so a fresh clone type-checks without this folder installed.
// bench/node/ours-runtime.ts exports the same names from our runtime.
export { start } from '@flue/runtime/node';
export { defineTool, init, useModel, useTool } from '@flue/runtime';
export { createProvider } from '@earendil-works/pi-ai';
export * as anthropicMessages from '@earendil-works/pi-ai/api/anthropic-messages';
export * as v from 'valibot';
export const label = 'original @flue/runtime 2.1.0 (pi-ai 0.83)';
