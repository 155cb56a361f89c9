/**
 * Registering providers in the registry of model-registry.ts. Split from it so that the public
 * declarations of `setProvider` (and the hosts' `providers` options) name the runtime's own
 * `Provider` shape (model-types.ts) and load none of pi-ai's types.
 */
import type { Provider as PiProvider } from '@earendil-works/pi-ai';
import { getModels, registerOnFirstUse } from './model-registry.ts';
import type { Provider } from './model-types.ts';

/**
 * The pi-ai provider a `Provider` is. The public declarations name providers by the members the
 * runtime relies on (model-types.ts); the objects are pi-ai's, which checks the rest of its
 * contract when it calls them.
 */
function piProvider(provider: Provider): PiProvider {
  return provider as PiProvider;
}

/** Registers `provider`, replacing any provider with the same id (built-ins included). */
export function setProvider(provider: Provider): void {
  getModels().setProvider(piProvider(provider));
}

/**
 * Registers the built-in providers, skipping ids that are already registered so a user's
 * `setProvider` wins whether it ran before or after this.
 */
export function registerDefaultProviders(loadBuiltins: () => readonly Provider[]): void {
  addDefaults(loadBuiltins());
}

/**
 * `registerDefaultProviders` put off until the first model call (`loadModel`): a Worker's loader
 * imports the provider modules, which then load only in an isolate that calls a model. The same
 * ids are kept: a `setProvider` made before that call wins, one made after replaces the built-in.
 */
export function registerDefaultProvidersOnFirstUse(loadBuiltins: () => Promise<readonly Provider[]>): void {
  registerOnFirstUse(async () => addDefaults(await loadBuiltins()));
}

function addDefaults(providers: readonly Provider[]): void {
  const registry = getModels();
  for (const provider of providers) {
    if (registry.getProvider(provider.id) === undefined) registry.setProvider(piProvider(provider));
  }
}

/** `start({ providers })` semantics: each given provider is registered, overwriting same ids. */
export function registerProviders(providers: readonly Provider[]): void {
  const registry = getModels();
  for (const provider of providers) registry.setProvider(piProvider(provider));
}

/** One wire format's streaming functions, as a pi-ai API module exports them (`@earendil-works/pi-ai/api/<api>`). */
export type ApiModule = Pick<Provider, 'stream' | 'streamSimple'>;

/**
 * `provider` streaming through `api` directly. A pi-ai provider factory gives `createProvider` a
 * lazy wrapper of its API module, which imports the module again at every model call and forwards
 * every event through one more stream; once the module is loaded that is work a turn need not do.
 * Only for a provider whose one API is that module handed over as is: the build checks the
 * factory's source (build/provider-apis.ts) before its generated entry calls this.
 */
export function withLoadedApi<P extends Provider>(provider: P, api: ApiModule): P {
  return { ...provider, stream: api.stream, streamSimple: api.streamSimple };
}

/**
 * `withLoadedApi` for a host that registers providers before it may load their API modules (Node's
 * `start()`, whose built-ins are many and load at start): the first call starts `load` and, like
 * any call made while the module loads, goes through the provider's own functions; the calls after
 * it call the module. A load that fails leaves every call on the provider's own path.
 */
export function withApiOnLoad<P extends Provider>(provider: P, load: () => Promise<ApiModule>): P {
  let api: ApiModule | undefined;
  let loading = false;
  const streams = (): ApiModule => {
    if (api === undefined && !loading) {
      loading = true;
      load().then(
        (loaded) => {
          api = loaded;
        },
        () => {},
      );
    }
    return api ?? provider;
  };
  return {
    ...provider,
    stream: (model, context, options) => streams().stream(model, context, options),
    streamSimple: (model, context, options) => streams().streamSimple(model, context, options),
  };
}
