/**
 * A pi-ai provider whose models point at a scripted model server (see scripted-model-server.ts).
 * It uses pi-ai's real request/stream code, so tests exercise the same wire path as production.
 *
 * No node:* imports: this module also runs inside workerd, where the server runs elsewhere.
 */

import { createProvider } from '@earendil-works/pi-ai';
import type { Api, Model, Provider, ProviderAuth } from '@earendil-works/pi-ai';
import { redirectModels, setProvider } from '../runtime/model-registry.ts';
// The non-lazy API modules on purpose: bundling the `.lazy` variants next to `createModels()`
// can fail at load time with `ModelsImpl is not a constructor` (toolchain.md, "Later finding").
import * as anthropicMessages from '@earendil-works/pi-ai/api/anthropic-messages';
import * as openaiCompletions from '@earendil-works/pi-ai/api/openai-completions';

export type ScriptedApi = 'openai-completions' | 'anthropic-messages';

export interface ScriptedProviderOptions {
  /** The server's origin, e.g. `http://127.0.0.1:PORT` (no `/v1`; added where the API needs it). */
  baseUrl: string;
  /** Provider id. Default `'scripted'`. */
  id?: string;
  /** Model ids to expose. Default `['model']`. */
  models?: string[];
  /** Wire format. Default `'openai-completions'`. */
  api?: ScriptedApi;
  /** Default 128000. */
  contextWindow?: number;
  /** Default 8192. */
  maxTokens?: number;
  /** Marks the models as reasoning models (changes what pi-ai sends). Default false. */
  reasoning?: boolean;
}

const SCRIPTED_API_KEY = 'scripted';

// The server ignores credentials, but pi-ai refuses to call a provider whose auth resolves to
// nothing, so resolve a fixed placeholder key.
const keylessAuth: ProviderAuth = {
  apiKey: {
    name: 'scripted',
    resolve: async () => ({ auth: { apiKey: SCRIPTED_API_KEY }, source: 'scripted' }),
  },
};

export function scriptedProvider(options: ScriptedProviderOptions): Provider {
  const id = options.id ?? 'scripted';
  const api = options.api ?? 'openai-completions';
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
    api: api === 'openai-completions' ? openaiCompletions : anthropicMessages,
  });
}

function buildModel(
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
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
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
      setProvider(scriptedProvider({ baseUrl, id: providerId, models: [...ids], api: 'anthropic-messages' }));
    }
    return buildModel(modelId, providerId, 'anthropic-messages', baseUrl.replace(/\/+$/, ''), { baseUrl }) as Model<Api>;
  });
}
