import { transform } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { generateNodeEntry } from './node-entry.ts';

const anthropic = {
  id: 'anthropic',
  specifier: '@earendil-works/pi-ai/providers/anthropic',
  exportName: 'anthropicProvider',
  api: '@earendil-works/pi-ai/api/anthropic-messages',
};
const azure = { id: 'azure', specifier: '@earendil-works/pi-ai/providers/azure', exportName: 'azureProvider' };

describe('generateNodeEntry', () => {
  it('without configured providers passes none: start() registers the built-ins', async () => {
    const code = generateNodeEntry({ app: '/p/src/app.ts', modules: [] });
    expect(code).toContain("import { runFlueServer } from '@flue/runtime/node';");
    expect(code).toContain('await runFlueServer({ app: userApp, agents });');
    await transform(code, { loader: 'js', format: 'esm' });
  });

  it('a configured provider with a direct API module calls it once loaded, loading it on first use; the others are registered as built', async () => {
    const code = generateNodeEntry({ app: '/p/src/app.ts', modules: [], providers: [anthropic, azure] });
    expect(code).toContain("import { runFlueServer, withApiOnLoad } from '@flue/runtime/node';");
    expect(code).toContain("import { anthropicProvider } from '@earendil-works/pi-ai/providers/anthropic';");
    expect(code).toContain(
      "providers: [withApiOnLoad(anthropicProvider(), () => import('@earendil-works/pi-ai/api/anthropic-messages')), azureProvider()]",
    );
    expect(code).not.toContain("import('@earendil-works/pi-ai/api/anthropic-messages');\n");
    await transform(code, { loader: 'js', format: 'esm' });
  });

  it('configured providers without a direct API module import nothing more', () => {
    const code = generateNodeEntry({ app: '/p/src/app.ts', modules: [], providers: [azure] });
    expect(code).toContain("import { runFlueServer } from '@flue/runtime/node';");
    expect(code).toContain('providers: [azureProvider()]');
  });
});
