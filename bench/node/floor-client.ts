/**
 * The floor's only imports: pi-ai 1.6.0 (our dependency) alone, no framework. The twin of
 * ours-runtime.ts and ../original/runtime.mjs for bench/node/side-by-side-child.ts.
 */
export { createModels, createProvider } from '@earendil-works/pi-ai';
export * as anthropicMessages from '@earendil-works/pi-ai/api/anthropic-messages';
export const label = 'floor: pi-ai 1.6.0 alone';
