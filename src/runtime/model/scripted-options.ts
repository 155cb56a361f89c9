/**
 * The options of a scripted provider, apart from scripted-model.ts so that the testing entry's
 * declarations need none of pi-ai's.
 */

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
  /** Price per million tokens, in the models' price units (what `PromptUsage.cost` is computed from). Default: free. */
  cost?: { input: number; output: number; cacheRead: number; cacheWrite: number };
}
