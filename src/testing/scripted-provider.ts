/**
 * A pi-ai provider whose models point at a scripted model server (see scripted-model-server.ts).
 * It uses pi-ai's real request/stream code, so tests exercise the same wire path as production.
 *
 * No node:* imports: this module also runs inside workerd, where the server runs elsewhere.
 */

import type { Provider } from '../runtime/model/model-types.ts';
// The non-lazy API modules on purpose: bundling the `.lazy` variants next to `createModels()`
// can fail at load time with `ModelsImpl is not a constructor` (toolchain.md §7).
import * as anthropicMessages from '@earendil-works/pi-ai/api/anthropic-messages';
import * as openaiCompletions from '@earendil-works/pi-ai/api/openai-completions';
import { createScriptedProvider } from '../runtime/model/scripted-model.ts';
import type { ScriptedProviderOptions } from '../runtime/model/scripted-options.ts';

export type { ScriptedApi, ScriptedProviderOptions } from '../runtime/model/scripted-options.ts';

export function scriptedProvider(options: ScriptedProviderOptions): Provider {
  return createScriptedProvider(options, { 'anthropic-messages': anthropicMessages, 'openai-completions': openaiCompletions });
}
