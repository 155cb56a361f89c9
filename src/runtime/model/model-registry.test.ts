import { describe, expect, it, beforeEach } from 'vitest';
import { createProvider, envApiKeyAuth, fauxProvider } from '@earendil-works/pi-ai';
import type { Provider } from '@earendil-works/pi-ai';
import { InvalidModelSpecifierError } from '../common/errors.ts';
import { configureModelAuthEnv, getModels, loadModel, parseModelSpecifier, resolveModel } from './model-registry.ts';
import { registerDefaultProviders, registerDefaultProvidersOnFirstUse, registerProviders, setProvider } from './providers.ts';

function provider(id: string, modelIds: string[] = ['m-1']): Provider {
  return fauxProvider({ provider: id, models: modelIds.map((m) => ({ id: m })) }).provider;
}

beforeEach(() => {
  getModels().clearProviders();
});

describe('parseModelSpecifier', () => {
  it('splits at the first slash so model ids may contain slashes', () => {
    expect(parseModelSpecifier('openrouter/moonshotai/kimi-k2.6')).toEqual({
      provider: 'openrouter',
      modelId: 'moonshotai/kimi-k2.6',
    });
  });

  it('rejects a specifier without a slash', () => {
    expect(() => parseModelSpecifier('claude')).toThrow(
      /^\[flue\] Invalid model specifier "claude"\. Use the "provider-id\/model-id" format/,
    );
  });
});

describe('resolveModel', () => {
  it('resolves a declared model, including ids containing slashes', () => {
    setProvider(provider('acme', ['plain', 'vendor/nested']));
    const model = resolveModel('acme/vendor/nested');
    expect(model.provider).toBe('acme');
    expect(model.id).toBe('vendor/nested');
  });

  it('reports an invalid specifier before looking at the registry', () => {
    expect(() => resolveModel('no-slash')).toThrow('[flue] Invalid model specifier "no-slash". Use the "provider-id/model-id" format');
  });

  it('lists the sorted registered providers for an unknown provider', () => {
    setProvider(provider('zeta'));
    setProvider(provider('alpha'));
    let message = '';
    try {
      resolveModel('nope/m-1');
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/^\[flue\] Unknown provider "nope" in model specifier "nope\/m-1"\. Registered providers: alpha, zeta\./);
    expect(message).toContain('setProvider(');
    expect(message).toContain('start({ providers })');
    // On Cloudflare the build bundles only the providers literal model ids name: say where to add one.
    expect(message).toContain('list it in "providers" in flue.config.ts');
  });

  it('says so when no providers are registered', () => {
    expect(() => resolveModel('acme/m-1')).toThrow(
      '[flue] Unknown provider "acme" in model specifier "acme/m-1". No providers are registered.',
    );
  });

  it('reports an empty model id for a registered provider', () => {
    setProvider(provider('acme'));
    expect(() => resolveModel('acme/')).toThrow(
      '[flue] Invalid model specifier "acme/". Provider "acme" is registered, but no model ID was given',
    );
  });

  it('lists the first 8 declared ids and the total for an unknown model', () => {
    const ids = Array.from({ length: 10 }, (_, i) => `m${i}`);
    setProvider(provider('acme', ids));
    expect(() => resolveModel('acme/zzz')).toThrow(
      '[flue] Unknown model ID "zzz" for provider "acme". Declared model IDs: m0, m1, m2, m3, m4, m5, m6, m7, … (10 total)',
    );
  });

  it('lists every id without an ellipsis when there are 8 or fewer', () => {
    setProvider(provider('acme', ['a', 'b']));
    let message = '';
    try {
      resolveModel('acme/c');
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('Declared model IDs: a, b (2 total)');
    expect(message).not.toContain('…');
  });

  it('throws typed errors, so a failed submission tells its caller why', () => {
    expect(() => resolveModel('x')).toThrow(InvalidModelSpecifierError);
    expect(() => resolveModel('x')).toThrow(expect.objectContaining({ type: 'invalid_model_specifier', meta: { specifier: 'x' } }));
    expect(() => resolveModel('nope/model')).toThrow(expect.objectContaining({ type: 'unknown_model' }));
  });
});

describe('registration', () => {
  it('setProvider replaces a provider with the same id', () => {
    setProvider(provider('acme', ['old']));
    setProvider(provider('acme', ['new']));
    expect(getModels().getProviders()).toHaveLength(1);
    expect(resolveModel('acme/new').id).toBe('new');
    expect(() => resolveModel('acme/old')).toThrow('Unknown model ID "old"');
  });

  it('default registration skips ids that are already registered', () => {
    setProvider(provider('acme', ['mine']));
    registerDefaultProviders(() => [provider('acme', ['builtin']), provider('other', ['o'])]);
    expect(resolveModel('acme/mine').id).toBe('mine');
    expect(() => resolveModel('acme/builtin')).toThrow('Unknown model ID');
    expect(resolveModel('other/o').provider).toBe('other');
  });

  it('a user provider set after default registration still replaces the built-in', () => {
    registerDefaultProviders(() => [provider('acme', ['builtin'])]);
    setProvider(provider('acme', ['mine']));
    expect(resolveModel('acme/mine').id).toBe('mine');
  });

  it('providers deferred to first use load once, on the first loadModel, and keep ids set before', async () => {
    let loads = 0;
    registerDefaultProvidersOnFirstUse(async () => {
      loads++;
      return [provider('acme', ['builtin']), provider('other', ['o'])];
    });
    setProvider(provider('acme', ['mine']));
    expect(loads).toBe(0);
    expect(getModels().getProvider('other')).toBeUndefined();
    // Concurrent first calls share the one load.
    const [mine, other] = await Promise.all([loadModel('acme/mine'), loadModel('other/o')]);
    expect([mine.id, other.provider, loads]).toEqual(['mine', 'other', 1]);
    await expect(loadModel('acme/builtin')).rejects.toThrow('Unknown model ID');
    expect(loads).toBe(1);
  });

  it('a deferred load that fails is tried again by the next model call', async () => {
    let attempts = 0;
    registerDefaultProvidersOnFirstUse(async () => {
      if (++attempts === 1) throw new Error('import failed');
      return [provider('acme')];
    });
    await expect(loadModel('acme/m-1')).rejects.toThrow('import failed');
    expect((await loadModel('acme/m-1')).provider).toBe('acme');
    expect(attempts).toBe(2);
  });

  it('registerProviders overwrites existing ids', () => {
    setProvider(provider('acme', ['old']));
    registerProviders([provider('acme', ['new']), provider('beta')]);
    expect(resolveModel('acme/new').id).toBe('new');
    expect(
      getModels()
        .getProviders()
        .map((p) => p.id)
        .sort(),
    ).toEqual(['acme', 'beta']);
  });

  it('registerProviders([]) registers nothing', () => {
    registerProviders([]);
    expect(getModels().getProviders()).toHaveLength(0);
    expect(() => resolveModel('faux/faux-1')).toThrow('No providers are registered.');
  });
});

describe('auth env', () => {
  it('resolves provider credentials from the configured env, ignoring blank values', async () => {
    const faux = fauxProvider({ provider: 'keyed' });
    setProvider(
      createProvider({
        id: 'keyed',
        auth: { apiKey: envApiKeyAuth('Keyed', ['FLUE_TEST_KEY']) },
        models: faux.models,
        api: { stream: faux.provider.stream, streamSimple: faux.provider.streamSimple },
      }),
    );
    configureModelAuthEnv({ FLUE_TEST_KEY: '   ' });
    expect(await getModels().getAuth('keyed')).toBeUndefined();
    configureModelAuthEnv({ FLUE_TEST_KEY: 'sk-test' });
    const auth = await getModels().getAuth('keyed');
    expect(auth?.auth.apiKey).toBe('sk-test');
  });
});
