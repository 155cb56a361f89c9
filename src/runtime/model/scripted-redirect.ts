/**
 * `FLUE_SCRIPTED_MODEL_URL`: every model specifier resolves to a scripted model server. Only the
 * Anthropic Messages API is used here, and through pi-ai's lazy wrapper: this module is in every
 * Worker, and evaluating the Anthropic client at startup cost a Worker that never redirects about
 * 7 ms of startup CPU; it loads on the first scripted model call instead.
 * A product feature (`flue dev` runs offline with it); `@flue/runtime/testing` re-exports it.
 *
 * No node:* imports: this module also runs inside workerd, where the server runs elsewhere.
 */

import type { Api, Model } from '@earendil-works/pi-ai';
import { anthropicMessagesApi } from '@earendil-works/pi-ai/api/anthropic-messages.lazy';
import { redirectModels } from './model-registry.ts';
import { setProvider } from './providers.ts';
import { buildModel, createScriptedProvider } from './scripted-model.ts';

/**
 * Points every model specifier of this process (or isolate) at a scripted model server: each
 * `provider/model` the agents use resolves to a scripted model of that name, spoken to over the
 * Anthropic Messages wire format. The hosts call this when `FLUE_SCRIPTED_MODEL_URL` is set, so
 * an app runs offline in development and end-to-end tests without changing its code.
 */
export function useScriptedModels(baseUrl: string): void {
  const seen = new Map<string, Set<string>>();
  redirectModels((providerId, modelId) => {
    let ids = seen.get(providerId);
    if (ids === undefined) seen.set(providerId, (ids = new Set()));
    if (!ids.has(modelId)) {
      ids.add(modelId);
      setProvider(
        createScriptedProvider(
          { baseUrl, id: providerId, models: [...ids], api: 'anthropic-messages' },
          { 'anthropic-messages': anthropicMessagesApi() },
        ),
      );
    }
    return buildModel(modelId, providerId, 'anthropic-messages', baseUrl.replace(/\/+$/, ''), { baseUrl }) as Model<Api>;
  });
}
