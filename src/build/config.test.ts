import { afterAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { loadConfig, resolveEntry, validateConfig } from './config.ts';
import { resolveProviders } from './providers.ts';
import { removeDir, tempProject } from './test-project.ts';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));
function project(files: Record<string, string>): string {
  const dir = tempProject('config', files);
  dirs.push(dir);
  return dir;
}

describe('validateConfig', () => {
  const file = '/p/flue.config.ts';

  it('rejects a non-object default export', () => {
    for (const value of [undefined, null, 'x', 42, []]) {
      expect(() => validateConfig(value, file)).toThrow('[flue] flue.config.ts must export a config object as the default export.');
    }
  });

  it('lists every problem, one per line', () => {
    expect(() => validateConfig({ app: 3, entry: 'x', providers: 'anthropic', agents: '' }, file)).toThrow(
      '[flue] Invalid config in flue.config.ts:\n' +
        '  - unknown field "entry" (known: app, cloudflare, db, schedules, agents, providers, target)\n' +
        '  - "app" must be a non-empty string\n' +
        '  - "agents" must be a non-empty string\n' +
        '  - "providers" must be an array of provider ids, e.g. ["anthropic"]',
    );
    expect(() => validateConfig({ providers: ['anthropic', 'Bad Id', 'anthropic'] }, file)).toThrow(
      '  - "providers[1]" must be a provider id such as "anthropic"\n  - "providers" lists "anthropic" twice',
    );
  });

  it('accepts an empty object', () => {
    expect(validateConfig({}, file)).toEqual({ file });
  });
});

describe('loadConfig', () => {
  it('returns no config when there is no file', async () => {
    expect(await loadConfig(project({}))).toEqual({ file: undefined });
  });

  it('bundles and imports a TypeScript config; relative paths resolve from the config file', async () => {
    const dir = project({
      'flue.config.ts':
        "import { appPath } from './paths.ts';\nconst config: { app: string; agents: string } = { app: appPath, agents: 'agents/**/*.ts' };\nexport default config;\n",
      'paths.ts': "export const appPath = './server/main.ts';\n",
      'server/main.ts': 'export default { fetch() { return new Response("x"); } };\n',
    });
    const config = await loadConfig(dir);
    expect(config).toEqual({ file: path.join(dir, 'flue.config.ts'), app: path.join(dir, 'server/main.ts'), agents: 'agents/**/*.ts' });
    expect(resolveEntry(dir, 'app', config)).toBe(path.join(dir, 'server/main.ts'));
  });

  it('fails on a configured entry that does not exist', async () => {
    const dir = project({ 'flue.config.mjs': "export default { cloudflare: './src/worker.ts' };\n" });
    await expect(loadConfig(dir)).rejects.toThrow(`[flue] Configured \`cloudflare\` entry not found: ${path.join(dir, 'src/worker.ts')}`);
  });

  it('uses the first of flue.config.{ts,mts,js,mjs}', async () => {
    const dir = project({ 'flue.config.ts': 'export default {};\n', 'flue.config.js': 'export default { nope: 1 };\n' });
    expect((await loadConfig(dir)).file).toBe(path.join(dir, 'flue.config.ts'));
  });

  it('reports a config that does not compile', async () => {
    const dir = project({ 'flue.config.ts': 'export default {\n' });
    await expect(loadConfig(dir)).rejects.toThrow(
      /^\[flue\] Could not load flue\.config\.ts:\n {2}flue\.config\.ts:2:1: Expected identifier/,
    );
  });
});

describe('resolveEntry', () => {
  it('finds src/<name>.{ts,mts,js,mjs} in that order', () => {
    const dir = project({ 'src/app.mjs': '', 'src/app.js': '', 'src/db.ts': '' });
    expect(resolveEntry(dir, 'app', { file: undefined })).toBe(path.join(dir, 'src/app.js'));
    expect(resolveEntry(dir, 'db', { file: undefined })).toBe(path.join(dir, 'src/db.ts'));
    expect(resolveEntry(dir, 'cloudflare', { file: undefined })).toBeUndefined();
  });
});

describe('resolveProviders', () => {
  it('maps provider ids to their pi-ai factory exports', async () => {
    expect(await resolveProviders(['anthropic', 'openai-codex', 'cloudflare-ai-gateway'])).toEqual([
      { id: 'anthropic', specifier: '@earendil-works/pi-ai/providers/anthropic', exportName: 'anthropicProvider' },
      { id: 'openai-codex', specifier: '@earendil-works/pi-ai/providers/openai-codex', exportName: 'openaiCodexProvider' },
      {
        id: 'cloudflare-ai-gateway',
        specifier: '@earendil-works/pi-ai/providers/cloudflare-ai-gateway',
        exportName: 'cloudflareAIGatewayProvider',
      },
    ]);
  });

  it('accepts "cloudflare" (the Workers AI binding provider) without importing a pi-ai module for it', async () => {
    expect(await resolveProviders(['cloudflare', 'anthropic'])).toEqual([
      { id: 'anthropic', specifier: '@earendil-works/pi-ai/providers/anthropic', exportName: 'anthropicProvider' },
    ]);
  });

  it('rejects unknown ids', async () => {
    await expect(resolveProviders(['no-such-provider'], 'flue.config.ts')).rejects.toThrow(
      '[flue] Invalid config in flue.config.ts:\n  - "providers": unknown provider "no-such-provider"',
    );
    await expect(resolveProviders(['all'])).rejects.toThrow('unknown provider "all"');
  });
});
