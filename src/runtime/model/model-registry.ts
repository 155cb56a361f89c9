/**
 * The process/isolate-wide provider registry and model specifier resolution
 * (models-and-providers.md §1, §3, §4.3).
 *
 * One pi-ai `MutableModels` lives in this module. It is created lazily so that merely importing the
 * runtime does no work, and with an explicit auth context so pi never falls back to its default one,
 * which probes `node:fs` through a dynamic import that workerd (and miniflare's module discovery)
 * rejects. The built-in provider catalog (`@earendil-works/pi-ai/providers/all`, ~2 MB) is never
 * imported here: hosts pass a loader to `registerDefaultProviders` (providers.ts), so Worker bundles that list
 * their providers do not pay for the rest.
 */
import { clampThinkingLevel, createModels } from '@earendil-works/pi-ai';
import type { ThinkingLevel } from '../common/types.ts';
import {
  CloudflareAIBindingError,
  type CloudflareAIBindingErrorReason,
  InvalidModelSpecifierError,
  ProviderNotConfiguredError,
  UnknownModelError,
} from '../common/errors.ts';
import type { Api, AuthContext, Model, MutableModels, Provider } from '@earendil-works/pi-ai';

type EnvSource = Record<string, string | undefined>;

let models: MutableModels | undefined;
let configuredEnv: EnvSource | undefined;
let fileExists: (path: string) => Promise<boolean> = async () => false;

/**
 * Until a host configures an env, read `process.env` when the platform has one (Node, or workerd
 * with `nodejs_compat` env population). Reached through `globalThis` so this module imports nothing
 * from `node:*`.
 */
function currentEnv(): EnvSource {
  if (configuredEnv) return configuredEnv;
  const proc = (globalThis as { process?: { env?: EnvSource } }).process;
  return proc?.env ?? {};
}

const authContext: AuthContext = {
  // Blank values count as unset, as in pi's default context, so `FOO=` does not shadow other sources.
  env: async (name) => {
    const value = currentEnv()[name];
    return typeof value === 'string' && value.trim().length > 0 ? value : undefined;
  },
  fileExists: (path) => fileExists(path),
};

/** The registry every model call resolves against. */
export function getModels(): MutableModels {
  models ??= createModels({ authContext });
  return models;
}

/**
 * Registrations a host put off until a model is first needed, in the order the host queued them:
 * a Worker's built-in providers come through `import()`, so an isolate that never calls a model
 * (a Worker that only routes to its Durable Objects) never evaluates pi-ai's provider modules.
 */
const deferred: (() => void | Promise<void>)[] = [];
let draining: Promise<void> | undefined;

export function registerOnFirstUse(register: () => void | Promise<void>): void {
  deferred.push(register);
}

/**
 * Runs the deferred registrations once, each in turn; concurrent callers share the run. One that
 * throws stays queued, so the next model call tries it again and reports the same failure.
 */
function drainDeferred(): Promise<void> {
  draining ??= (async () => {
    try {
      while (deferred.length > 0) {
        await deferred[0]!();
        deferred.shift();
      }
    } finally {
      draining = undefined;
    }
  })();
  return draining;
}

/** `resolveModel` once every deferred registration has run: what the engine calls before a model call. */
export async function loadModel(spec: string): Promise<Model<Api>> {
  if (deferred.length > 0) await drainDeferred();
  return resolveModel(spec);
}

/**
 * Supplies the environment provider credentials are read from (e.g. a Worker's `env` bindings).
 * Lookups happen per request, so calling this after providers are registered still takes effect.
 * `fileExists` is optional: only the Node host can answer it (ambient credential files such as
 * `~/.aws/credentials`); elsewhere it stays "no file exists".
 */
export function configureModelAuthEnv(env: EnvSource, options?: { fileExists?: (path: string) => Promise<boolean> }): void {
  configuredEnv = env;
  if (options?.fileExists) fileExists = options.fileExists;
}

const WORKERS_AI_PROVIDER = 'cloudflare';

/** Providers whose catalog lives elsewhere: any model id resolves through their template. */
const dynamicModels = new WeakMap<Provider, (modelId: string) => Model<Api>>();

export function withDynamicModels<P extends Provider>(provider: P, template: (modelId: string) => Model<Api>): P {
  dynamicModels.set(provider, template);
  return provider;
}

export interface ModelSpecifier {
  provider: string;
  modelId: string;
}

const SPEC_FORMAT_HINT = 'Use the "provider-id/model-id" format, for example "anthropic/claude-sonnet-4-5".';

/**
 * Splits at the first `/` (model ids may contain `/`). Only the format is checked here; whether the
 * provider and model exist is `resolveModel`'s job. An empty model id is allowed through so the
 * caller can report it with the provider's context.
 */
export function parseModelSpecifier(spec: string): ModelSpecifier {
  const slash = spec.indexOf('/');
  if (slash <= 0) {
    throw new InvalidModelSpecifierError(`[flue] Invalid model specifier "${spec}". ${SPEC_FORMAT_HINT}`, spec);
  }
  return { provider: spec.slice(0, slash), modelId: spec.slice(slash + 1) };
}

const LISTED_MODEL_IDS = 8;

/**
 * When set, every specifier resolves through it instead of the registry: local development and
 * end-to-end tests point all models at a scripted model server this way (FLUE_SCRIPTED_MODEL_URL).
 */
let redirect: ((providerId: string, modelId: string) => Model<Api>) | undefined;

export function redirectModels(resolve: ((providerId: string, modelId: string) => Model<Api>) | undefined): void {
  redirect = resolve;
}

/** Resolves a specifier against the live registry; throws typed errors naming what is wrong. */
export function resolveModel(spec: string): Model<Api> {
  const { provider: providerId, modelId } = parseModelSpecifier(spec);
  if (redirect !== undefined && modelId !== '') return redirect(providerId, modelId);
  const registry = getModels();
  const provider = registry.getProvider(providerId);
  if (provider === undefined && providerId === WORKERS_AI_PROVIDER) {
    // Registered automatically only where the Worker has the binding, so its absence is the cause.
    throw new CloudflareAIBindingError(
      'binding_missing',
      `[flue] Model "${spec}" needs the Workers AI binding, but no "cloudflare" provider is registered. ` +
        `On Cloudflare it is registered when the Worker has an "AI" binding: add "ai": { "binding": "AI" } to ` +
        `wrangler.jsonc (and leave FLUE_WORKERS_AI unset); the build includes it when the source names a cloudflare/ model ` +
        `literally or flue.config.ts lists "cloudflare" in providers. Or register one with setProvider(cloudflareBindingProvider({ binding })).`,
      { binding: 'AI', model: modelId },
    );
  }
  if (provider === undefined) {
    const ids = registry
      .getProviders()
      .map((p) => p.id)
      .sort();
    const registered = ids.length > 0 ? `Registered providers: ${ids.join(', ')}.` : 'No providers are registered.';
    throw new UnknownModelError(
      `[flue] Unknown provider "${providerId}" in model specifier "${spec}". ${registered} ` +
        `Register it with setProvider(...) or start({ providers }) before agents run; on Cloudflare, list it in "providers" in flue.config.ts ` +
        `(flue build bundles only the providers named by literal model ids).`,
      { specifier: spec, provider: providerId, reason: 'unknown_provider' },
    );
  }
  if (modelId === '') {
    throw new InvalidModelSpecifierError(
      `[flue] Invalid model specifier "${spec}". Provider "${providerId}" is registered, but no model ID was given. ` +
        `Use "${providerId}/<model-id>".`,
      spec,
    );
  }
  const model = registry.getModel(providerId, modelId);
  if (model !== undefined) return model;
  const template = dynamicModels.get(provider!);
  if (template !== undefined) return template(modelId);

  const declared = registry.getModels(providerId).map((m) => m.id);
  const listing =
    declared.length === 0
      ? `Provider "${providerId}" declares no models.`
      : `Declared model IDs: ${declared.slice(0, LISTED_MODEL_IDS).join(', ')}` +
        `${declared.length > LISTED_MODEL_IDS ? ', …' : ''} (${declared.length} total).`;
  throw new UnknownModelError(`[flue] Unknown model ID "${modelId}" for provider "${providerId}". ${listing}`, {
    specifier: spec,
    provider: providerId,
    modelId,
    reason: 'unknown_model',
  });
}

export const THINKING_LEVELS: readonly ThinkingLevel[] = ['off', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'];

/**
 * The `reasoning` stream option for a thinking level: omitted for 'off' and for models that do
 * not reason, clamped to what the model supports otherwise.
 */
export function reasoningOption(model: Model<Api>, level: ThinkingLevel | undefined): { reasoning?: Exclude<ThinkingLevel, 'off'> } {
  const chosen = level ?? 'medium';
  if (chosen === 'off' || !model.reasoning) return {};
  const clamped = clampThinkingLevel(model, chosen);
  return clamped === 'off' ? {} : { reasoning: clamped as Exclude<ThinkingLevel, 'off'> };
}

// The marker the Workers AI binding provider ends its error text with: reason and binding name.
const WORKERS_AI_FAILURE = /\(cloudflare_ai_binding_error:(\w+):([^)]*)\)\s*$/;

// pi reports a provider without credentials only as this message on an errored assistant turn.
const NOT_CONFIGURED = /^Provider is not configured: (\S+)$/;

/**
 * The API key variables pi reads for the common providers (pi-ai's env-api-keys, which is not an
 * exported entry). A provider missing here is still reported, without naming a variable.
 */
const PROVIDER_KEY_VARS: Record<string, string> = {
  anthropic: 'ANTHROPIC_API_KEY',
  openai: 'OPENAI_API_KEY',
  azure: 'AZURE_OPENAI_API_KEY',
  google: 'GEMINI_API_KEY',
  'google-vertex': 'GOOGLE_CLOUD_API_KEY',
  groq: 'GROQ_API_KEY',
  cerebras: 'CEREBRAS_API_KEY',
  xai: 'XAI_API_KEY',
  deepseek: 'DEEPSEEK_API_KEY',
  mistral: 'MISTRAL_API_KEY',
  openrouter: 'OPENROUTER_API_KEY',
  'vercel-ai-gateway': 'AI_GATEWAY_API_KEY',
  fireworks: 'FIREWORKS_API_KEY',
  together: 'TOGETHER_API_KEY',
  huggingface: 'HF_TOKEN',
  'cloudflare-workers-ai': 'CLOUDFLARE_API_KEY',
  'cloudflare-ai-gateway': 'CLOUDFLARE_API_KEY',
};

/**
 * A model turn's error message turned into the typed error a caller can act on: a provider
 * without credentials becomes `ProviderNotConfiguredError` naming the variable to set; anything
 * else is `undefined` (the caller keeps its generic failure).
 */
export function modelErrorFromMessage(errorMessage: string | undefined): ProviderNotConfiguredError | CloudflareAIBindingError | undefined {
  const binding = WORKERS_AI_FAILURE.exec(errorMessage ?? '');
  if (binding !== null) {
    const model = /failed for model "([^"]*)"/.exec(errorMessage!)?.[1];
    const message = errorMessage!.slice(0, binding.index).trimEnd();
    return new CloudflareAIBindingError(binding[1] as CloudflareAIBindingErrorReason, message, {
      binding: binding[2]!,
      ...(model !== undefined ? { model } : {}),
    });
  }
  const match = NOT_CONFIGURED.exec(errorMessage?.trim() ?? '');
  if (match === null) return undefined;
  const provider = match[1]!;
  const envVar = PROVIDER_KEY_VARS[provider];
  return new ProviderNotConfiguredError(provider, envVar === undefined ? [] : [envVar]);
}
