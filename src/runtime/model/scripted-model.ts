/**
 * The parts of a scripted provider that do not depend on a wire format: models, placeholder auth,
 * and a provider over whichever pi-ai API implementation the caller passes.
 *
 * No node:* imports: this module also runs inside workerd, where the server runs elsewhere.
 */

import { createProvider } from '@earendil-works/pi-ai';
import type { Model, Provider, ProviderAuth } from '@earendil-works/pi-ai';
import type { ScriptedApi, ScriptedProviderOptions } from './scripted-options.ts';

const SCRIPTED_API_KEY = 'scripted';

// The server ignores credentials, but pi-ai refuses to call a provider whose auth resolves to
// nothing, so resolve a fixed placeholder key.
const keylessAuth: ProviderAuth = {
  apiKey: {
    name: 'scripted',
    resolve: async () => ({ auth: { apiKey: SCRIPTED_API_KEY }, source: 'scripted' }),
  },
};

/** The pi-ai API implementations a scripted provider can speak, by wire format. */
export type ScriptedApiModules = Partial<Record<ScriptedApi, Parameters<typeof createProvider<ScriptedApi>>[0]['api']>>;

/**
 * A provider over the given API implementation. Callers pass only the API modules they use, so a
 * Worker bundle that redirects to Anthropic Messages does not carry the OpenAI client.
 */
export function createScriptedProvider(options: ScriptedProviderOptions, apis: ScriptedApiModules): Provider {
  const id = options.id ?? 'scripted';
  const api = scriptedApiOf(options);
  const origin = options.baseUrl.replace(/\/+$/, '');
  // The OpenAI SDK appends `/chat/completions` to the base URL; the Anthropic SDK appends
  // `/v1/messages` itself.
  const baseUrl = api === 'openai-completions' ? `${origin}/v1` : origin;
  const modelIds = options.models ?? ['model'];
  const models = modelIds.map((modelId) => buildModel(modelId, id, api, baseUrl, options));
  return createProvider<ScriptedApi>({
    id,
    name: id,
    baseUrl,
    auth: keylessAuth,
    models,
    api: apiModule(apis, api),
  });
}

/** The wire format a scripted provider speaks: OpenAI Chat Completions unless told. */
export function scriptedApiOf(options: ScriptedProviderOptions): ScriptedApi {
  return options.api ?? 'openai-completions';
}

export function buildModel(
  modelId: string,
  providerId: string,
  api: ScriptedApi,
  baseUrl: string,
  options: ScriptedProviderOptions,
): Model<ScriptedApi> {
  const common = {
    id: modelId,
    name: modelId,
    provider: providerId,
    baseUrl,
    input: ['text', 'image'] as Model<ScriptedApi>['input'],
    reasoning: options.reasoning ?? false,
    contextWindow: options.contextWindow ?? 128_000,
    maxTokens: options.maxTokens ?? 8192,
    cost: options.cost ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  };
  if (api === 'anthropic-messages') {
    const model: Model<'anthropic-messages'> = { ...common, api };
    return model;
  }
  // Without these flags pi-ai sends OpenAI-only fields (store, developer role, reasoning_effort,
  // max_completion_tokens) that a generic compatible server would not expect.
  const model: Model<'openai-completions'> = {
    ...common,
    api,
    compat: {
      supportsStore: false,
      supportsDeveloperRole: false,
      supportsReasoningEffort: false,
      maxTokensField: 'max_tokens',
    },
  };
  return model;
}

function apiModule(apis: ScriptedApiModules, api: ScriptedApi) {
  const module = apis[api];
  if (module === undefined) throw new Error(`[flue] The scripted provider was built without the "${api}" API.`);
  return module;
}
