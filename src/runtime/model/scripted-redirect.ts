/**
 * `FLUE_SCRIPTED_MODEL_URL`: every model specifier resolves to a scripted model server. Only the
 * Anthropic Messages API is used here, imported by the first model call: this module is in every
 * Worker, and evaluating the Anthropic client at startup cost a Worker that never redirects about
 * 7 ms of startup CPU. Once loaded it is called directly, as the build has a Worker's pi-ai
 * providers do (providers.ts `withLoadedApi`), not through pi-ai's lazy wrapper.
 * A product feature (`flue dev` runs offline with it); `@flue/runtime/testing` re-exports it.
 *
 * No node:* imports: this module also runs inside workerd, where the server runs elsewhere.
 */

import type { Api, Model } from '@earendil-works/pi-ai';
import { redirectModels, registerOnFirstUse } from './model-registry.ts';
import { setProvider } from './providers.ts';
import { buildModel, createScriptedProvider } from './scripted-model.ts';

/**
 * Points every model specifier of this process (or isolate) at a scripted model server: each
 * `provider/model` the agents use resolves to a scripted model of that name, spoken to over the
 * Anthropic Messages wire format. The hosts call this when `FLUE_SCRIPTED_MODEL_URL` is set, so
 * an app runs offline in development and end-to-end tests without changing its code.
 */
export function useScriptedModels(baseUrl: string): void {
  let anthropicMessages: typeof import('@earendil-works/pi-ai/api/anthropic-messages') | undefined;
  registerOnFirstUse(async () => {
    anthropicMessages = await import('@earendil-works/pi-ai/api/anthropic-messages');
  });
  const seen = new Map<string, Set<string>>();
  redirectModels((providerId, modelId) => {
    // loadModel runs the registration above before it resolves a model.
    if (anthropicMessages === undefined)
      throw new Error('[flue] A scripted model was resolved before the first model call loaded its API.');
    let ids = seen.get(providerId);
    if (ids === undefined) seen.set(providerId, (ids = new Set()));
    if (!ids.has(modelId)) {
      ids.add(modelId);
      setProvider(
        createScriptedProvider(
          { baseUrl, id: providerId, models: [...ids], api: 'anthropic-messages' },
          { 'anthropic-messages': anthropicMessages },
        ),
      );
    }
    return buildModel(modelId, providerId, 'anthropic-messages', baseUrl.replace(/\/+$/, ''), { baseUrl }) as Model<Api>;
  });
}
