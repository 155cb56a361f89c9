/**
 * Our runtime's public surface, as bench/node/side-by-side-child.ts drives it; the twin of
 * bench/original/runtime.mjs (the published original). Same names, same shapes.
 */
export { start } from '@flue/runtime/node';
export { defineTool, init, observe, useModel, useTool } from '@flue/runtime';
export { createProvider } from '@earendil-works/pi-ai';
export * as anthropicMessages from '@earendil-works/pi-ai/api/anthropic-messages';
export * as v from 'valibot';
export const label = 'ours (pi-ai 1.6.0)';
