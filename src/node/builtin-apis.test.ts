import { builtinProviders } from '@earendil-works/pi-ai/providers/all';
import { describe, expect, it } from 'vitest';
import { directApiOf } from '../build/provider-apis.ts';
import { PI_AI } from '../build/providers.ts';
import { BUILTIN_APIS, builtinApiLoader } from './builtin-apis.ts';

describe('BUILTIN_APIS', () => {
  it("names, for every built-in provider of the installed pi-ai, the API module its factory's source hands over as is, and no other", async () => {
    const expected: Record<string, string> = {};
    for (const provider of builtinProviders()) {
      const api = await directApiOf(`${PI_AI}/providers/${provider.id}`);
      if (api !== undefined) expected[provider.id] = api.replace(`${PI_AI}/api/`, '');
    }
    expect(Object.keys(expected).length).toBeGreaterThan(20);
    expect(BUILTIN_APIS).toEqual(expected);
  });

  it('loads each module itself, and nothing for a provider that keeps its own path', async () => {
    for (const [id, api] of Object.entries(BUILTIN_APIS)) {
      expect(await builtinApiLoader(id)!()).toBe(await import(`${PI_AI}/api/${api}`));
    }
    expect(builtinApiLoader('cloudflare-workers-ai')).toBeUndefined();
    expect(builtinApiLoader('toString')).toBeUndefined();
  });
});
