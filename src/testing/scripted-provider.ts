/**
 * A pi-ai provider whose models point at a scripted model server (see scripted-model-server.ts).
 * It uses pi-ai's real request/stream code, so tests exercise the same wire path as production.
 *
 * No node:* imports: this module also runs inside workerd, where the server runs elsewhere.
 */

import type { Provider } from '../runtime/model/model-types.ts';
import { lazyApi } from '@earendil-works/pi-ai/api/lazy';
import { createScriptedProvider, scriptedApiOf } from '../runtime/model/scripted-model.ts';
import type { ScriptedApi, ScriptedProviderOptions } from '../runtime/model/scripted-options.ts';

export type { ScriptedApi, ScriptedProviderOptions } from '../runtime/model/scripted-options.ts';

/** What a pi-ai API module exports: its stream functions. */
type ApiModule = Awaited<ReturnType<Parameters<typeof lazyApi>[0]>>;

// Each wire format's client (the provider's SDK, hundreds of modules) is not loaded by importing
// this entry: a test run's global setup imports it for the server alone, and vitest transforms
// every module it loads. A scripted provider starts loading its own wire format's client when it
// is made, and its first model call waits for it. The non-lazy API modules, imported on first
// use: pi-ai's own `.lazy` variants, bundled next to `createModels()`, can fail at load time with
// `ModelsImpl is not a constructor` (toolchain.md §7).
const loaders: Record<ScriptedApi, () => Promise<ApiModule>> = {
  'anthropic-messages': () => import('@earendil-works/pi-ai/api/anthropic-messages'),
  'openai-completions': () => import('@earendil-works/pi-ai/api/openai-completions'),
};

export function scriptedProvider(options: ScriptedProviderOptions): Provider {
  const api = scriptedApiOf(options);
  // A failed load is reported by the first model call, as pi-ai reports any failed setup.
  loaders[api]().catch(() => {});
  return createScriptedProvider(options, { [api]: lazyApi(loaders[api]) });
}
