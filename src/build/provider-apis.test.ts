import { describe, expect, it } from 'vitest';
import { directApiOf, lazyApiCall, lazyApiTarget, withDirectApis } from './provider-apis.ts';
import { PI_AI, resolveProvider } from './providers.ts';

const factory = (api: string, imports = 'import { xApi } from "../api/x-wire.lazy.js";') =>
  `${imports}\nimport { createProvider } from "../models.js";\nexport function xProvider() {\n  return createProvider({ id: "x", models: [], api: ${api} });\n}\n`;

describe('lazyApiCall', () => {
  it('finds the one lazy API a factory hands createProvider as is', () => {
    expect(lazyApiCall(factory('xApi()'))).toEqual({ module: 'x-wire', exportName: 'xApi' });
    expect(lazyApiCall(factory('local()', 'import { xApi as local } from "../api/x-wire.lazy.js";'))).toEqual({
      module: 'x-wire',
      exportName: 'xApi',
    });
  });

  it('leaves a wrapped, configured, mapped or eagerly imported API alone', () => {
    expect(lazyApiCall(factory('wrap(xApi())'))).toBeUndefined();
    expect(lazyApiCall(factory('xApi({ deferred: true })'))).toBeUndefined();
    expect(lazyApiCall(factory('{ "x-wire": xApi() }'))).toBeUndefined();
    expect(lazyApiCall(factory('xApi()', 'import { xApi } from "../api/x-wire.js";'))).toBeUndefined();
  });

  it('leaves a module with two api properties alone', () => {
    const two = `${factory('xApi()')}export function yProvider() { return createProvider({ id: "y", models: [], api: xApi() }); }\n`;
    expect(lazyApiCall(two)).toBeUndefined();
  });
});

describe('lazyApiTarget', () => {
  const lazy = (body: string) => `import { lazyApi } from "./lazy.js";\nexport const xApi = ${body};\n`;

  it('reads the module a plain lazy wrapper imports', () => {
    expect(lazyApiTarget(lazy('() => lazyApi(() => import("./x-wire.js"))'), 'xApi')).toBe('x-wire');
  });

  it('refuses a wrapper that adds capabilities, options or anything else', () => {
    expect(lazyApiTarget(lazy('() => lazyApi(() => import("./x-wire.js"), { fetchDeferred: true })'), 'xApi')).toBeUndefined();
    expect(lazyApiTarget(lazy('(options) => lazyApi(() => import("./x-wire.js"))'), 'xApi')).toBeUndefined();
    expect(lazyApiTarget(lazy('() => other(() => import("./x-wire.js"))'), 'xApi')).toBeUndefined();
    expect(lazyApiTarget(lazy('() => lazyApi(() => import("./x-wire.js"))'), 'yApi')).toBeUndefined();
  });
});

// Against the pi-ai this package installs: if a release changes how its factories reach their API,
// these fail, and the build falls back to pi-ai's lazy path rather than call the wrong module.
describe('directApiOf, the installed pi-ai', () => {
  it.each([
    ['anthropic', 'anthropic-messages'],
    ['openai', 'openai-responses'],
    ['google', 'google-generative-ai'],
    ['groq', 'openai-completions'],
    ['openai-codex', 'openai-codex-responses'],
  ])('%s streams through %s directly', async (id, api) => {
    expect(await directApiOf(`${PI_AI}/providers/${id}`)).toBe(`${PI_AI}/api/${api}`);
    expect((await withDirectApis([(await resolveProvider(id))!]))[0]?.api).toBe(`${PI_AI}/api/${api}`);
  });

  it('Workers AI and the AI Gateway wrap their API, so they keep the lazy path', async () => {
    expect(await directApiOf(`${PI_AI}/providers/cloudflare-workers-ai`)).toBeUndefined();
    const gateway = (await resolveProvider('cloudflare-ai-gateway'))!;
    expect(await withDirectApis([gateway])).toEqual([gateway]);
  });
});

describe('directApiOf, a module it cannot read', () => {
  it('leaves the lazy path instead of failing the build', async () => {
    expect(await directApiOf(`${PI_AI}/providers/no-such-provider`)).toBeUndefined();
    expect(await directApiOf('node:path')).toBeUndefined();
  });
});
