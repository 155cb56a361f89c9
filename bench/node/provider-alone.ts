/**
 * The baseline Worker of the bundle and startup benchmarks: nothing but one pi-ai provider. It
 * registers the provider, streams one reply and returns its text, the least code a Worker that
 * talks to that model through pi-ai must ship and evaluate.
 */
import * as esbuild from 'esbuild';
import { packageRoot } from '../../src/build/package-root.ts';

export const factoryName = (provider: string) => `${provider.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())}Provider`;

export function providerAloneEntry(provider: string): string {
  const factory = factoryName(provider);
  return `
import { createModels } from '@earendil-works/pi-ai';
import { ${factory} } from '@earendil-works/pi-ai/providers/${provider}';
export default {
  async fetch(request, env) {
    const models = createModels({ authContext: { env: async (name) => env[name], fileExists: async () => false } });
    models.setProvider(${factory}());
    const model = models.getProviders()[0].getModels()[0];
    const reply = await models.completeSimple(model, { messages: [{ role: 'user', content: await request.text(), timestamp: Date.now() }] });
    return new Response(reply.content.map((part) => part.type === 'text' ? part.text : '').join(''));
  },
};`;
}

/** The Worker build's esbuild settings (browser platform, workerd conditions, Node built-ins external). */
export function workerBundleOptions(minify: boolean) {
  return {
    bundle: true,
    format: 'esm',
    platform: 'browser',
    conditions: ['workerd', 'worker', 'browser'],
    target: 'es2022',
    external: ['cloudflare:*', 'node:*'],
    minify,
    write: false,
    metafile: true,
    logLevel: 'silent',
  } satisfies esbuild.BuildOptions;
}

/** Bundled with the Worker build's settings. */
export async function buildProviderAlone(provider: string, minify: boolean) {
  return esbuild.build({
    stdin: { contents: providerAloneEntry(provider), resolveDir: packageRoot(), sourcefile: 'provider-alone.mjs', loader: 'js' },
    ...workerBundleOptions(minify),
  });
}
