/**
 * The API module each of pi-ai's built-in providers streams through, for those whose factory hands
 * `createProvider` one API module's lazy wrapper as is: `start()` registers them to call that module
 * directly once it is loaded (`withApiOnLoad`), as the Worker build's entry does with the modules it
 * loads beside the providers (build/provider-apis.ts reads the same fact from each factory's
 * source; builtin-apis.test.ts checks this table against it for the installed pi-ai, which the
 * package pins). A provider not named here keeps pi-ai's own path.
 */
import type { ApiModule } from '../runtime/model/providers.ts';

/** Each API module, loaded by a literal import so a bundler (`flue build --target node`) finds it. */
const API_MODULES = {
  'anthropic-messages': () => import('@earendil-works/pi-ai/api/anthropic-messages'),
  'google-generative-ai': () => import('@earendil-works/pi-ai/api/google-generative-ai'),
  'google-vertex': () => import('@earendil-works/pi-ai/api/google-vertex'),
  'mistral-conversations': () => import('@earendil-works/pi-ai/api/mistral-conversations'),
  'openai-codex-responses': () => import('@earendil-works/pi-ai/api/openai-codex-responses'),
  'openai-completions': () => import('@earendil-works/pi-ai/api/openai-completions'),
  'openai-responses': () => import('@earendil-works/pi-ai/api/openai-responses'),
} satisfies Record<string, () => Promise<ApiModule>>;

export type BuiltinApi = keyof typeof API_MODULES;

/** Built-in provider id → the API module it streams through. */
export const BUILTIN_APIS: Readonly<Record<string, BuiltinApi>> = {
  anthropic: 'anthropic-messages',
  'ant-ling': 'openai-completions',
  baseten: 'openai-completions',
  cerebras: 'openai-completions',
  deepseek: 'openai-completions',
  google: 'google-generative-ai',
  'google-vertex': 'google-vertex',
  groq: 'openai-completions',
  huggingface: 'openai-completions',
  'kimi-coding': 'openai-completions',
  meta: 'openai-responses',
  minimax: 'anthropic-messages',
  'minimax-cn': 'anthropic-messages',
  mistral: 'mistral-conversations',
  moonshotai: 'openai-completions',
  'moonshotai-cn': 'openai-completions',
  nvidia: 'openai-completions',
  openai: 'openai-responses',
  'openai-codex': 'openai-codex-responses',
  'qwen-token-plan': 'openai-completions',
  'qwen-token-plan-cn': 'openai-completions',
  'qwen-token-plan-individual': 'openai-completions',
  'qwen-token-plan-individual-cn': 'openai-completions',
  together: 'openai-completions',
  'vercel-ai-gateway': 'anthropic-messages',
  xai: 'openai-responses',
  xiaomi: 'openai-completions',
  'xiaomi-token-plan-ams': 'openai-completions',
  'xiaomi-token-plan-cn': 'openai-completions',
  'xiaomi-token-plan-sgp': 'openai-completions',
  zai: 'openai-completions',
  'zai-coding-cn': 'openai-completions',
};

/** What loads the API module the built-in provider `id` streams through; undefined for one that keeps pi-ai's path. */
export function builtinApiLoader(id: string): (() => Promise<ApiModule>) | undefined {
  const api = Object.hasOwn(BUILTIN_APIS, id) ? BUILTIN_APIS[id] : undefined;
  return api === undefined ? undefined : API_MODULES[api];
}
