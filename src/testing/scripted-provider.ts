/**
 * A pi-ai provider whose models point at a scripted model server (see scripted-model-server.ts).
 * It uses pi-ai's real request/stream code, so tests exercise the same wire path as production.
 *
 * No node:* imports: this module also runs inside workerd, where the server runs elsewhere.
 */

import type { Provider } from '../runtime/model/model-types.ts';
import { lazyApi } from '@earendil-works/pi-ai/api/lazy';
import { createScriptedProvider } from '../runtime/model/scripted-model.ts';
import type { ScriptedProviderOptions } from '../runtime/model/scripted-options.ts';

export type { ScriptedApi, ScriptedProviderOptions } from '../runtime/model/scripted-options.ts';

// Each wire format's client (the provider's SDK, hundreds of modules) loads with the first model
// call that speaks it: a test run's global setup imports this entry for the server alone, and
// vitest transforms every module it loads. The non-lazy API modules, imported here on first use:
// pi-ai's own `.lazy` variants, bundled next to `createModels()`, can fail at load time with
// `ModelsImpl is not a constructor` (toolchain.md §7).
const apis = {
  'anthropic-messages': lazyApi(() => import('@earendil-works/pi-ai/api/anthropic-messages')),
  'openai-completions': lazyApi(() => import('@earendil-works/pi-ai/api/openai-completions')),
};

export function scriptedProvider(options: ScriptedProviderOptions): Provider {
  return createScriptedProvider(options, apis);
}
