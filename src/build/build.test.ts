import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { SourceMap, type SourceMapPayload } from 'node:module';
import { type BuildResult, build } from './build.ts';
import { packageRoot } from './package-root.ts';
import { offlineEnv, removeDir, tempProject, templateCopy, wranglerJsonc, writeFiles } from './test-project.ts';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));
function project(files: Record<string, string>): string {
  const dir = tempProject('build', files);
  dirs.push(dir);
  return dir;
}

const MINIMAL_APP = "export default { fetch() { return new Response('ok'); } };\n";
const read = (dir: string, rel: string) => readFileSync(path.join(dir, rel), 'utf8');

/** `entry` and the modules it imports statically, transitively (what workerd compiles and runs at startup). */
function staticImports(dist: string, entry: string): string[] {
  const seen = new Set([entry]);
  for (const rel of seen) {
    for (const [, spec] of read(dist, rel).matchAll(/^(?:import|export)\b[^;]*?from "(\.[^"]+)";$/gms)) {
      seen.add(path.posix.join(path.posix.dirname(rel), spec!));
    }
  }
  return [...seen];
}

describe('build() of templates/cloudflare', () => {
  let dir: string;
  let result: BuildResult;
  const lines: string[] = [];

  beforeAll(async () => {
    dir = templateCopy('template-build');
    dirs.push(dir);
    result = await build({ root: dir, log: (line) => lines.push(line) });
  }, 60_000);

  it('writes the outputs of §3.1', () => {
    for (const rel of [
      'dist/worker.js',
      'dist/worker.js.map',
      'dist/entry.generated.mjs',
      'dist/flue-manifest.json',
      '.flue.wrangler.json',
    ]) {
      expect(existsSync(path.join(dir, rel)), rel).toBe(true);
    }
    expect(JSON.parse(read(dir, '.wrangler/deploy/config.json'))).toEqual({ configPath: '../../.flue.wrangler.json' });
    expect(read(dir, 'dist/entry.generated.mjs')).toBe(result.entrySource);
    const modules = [result.outputs.worker, ...result.outputs.chunks];
    expect(result.bundleBytes).toBe(modules.reduce((sum, file) => sum + statSync(file).size, 0));
    expect(result.gzipBytes).toBeGreaterThan(0);
    expect(result.gzipBytes).toBeLessThan(result.bundleBytes);
  });

  it('splits the Worker: code reached only by import() is a chunk workerd compiles on first use, unreached imports are stubs', () => {
    const chunks = result.outputs.chunks.map((file) => path.relative(dir, file).split(path.sep).join('/'));
    expect(chunks.every((file) => /^dist\/chunks\/[\w.-]+\.js$/.test(file))).toBe(true);
    // pi-ai loads the Anthropic SDK client on the first model call: not compiled at startup.
    const sdk = chunks.find((file) => file.startsWith('dist/chunks/anthropic-messages-'));
    expect(sdk).toBeDefined();
    expect(result.startupBytes).toBeLessThan(result.bundleBytes - statSync(path.join(dir, sdk!)).size + 1);
    expect(result.startupBytes).toBeGreaterThanOrEqual(statSync(result.outputs.worker).size);
    // The provider module loads on the first model call as well, and with it pi-ai's env-api-keys,
    // which imports node:fs, node:os and node:path as it loads.
    const startup = staticImports(path.join(dir, 'dist'), 'worker.js').map((rel) => read(path.join(dir, 'dist'), rel));
    expect(startup.length).toBeGreaterThan(1);
    expect(startup.filter((text) => /pi-ai\/dist\/(?:providers\/anthropic|env-api-keys)\.js$/m.test(text))).toEqual([]);
    expect(chunks.map((file) => read(dir, file)).some((text) => /pi-ai\/dist\/providers\/anthropic\.js$/m.test(text))).toBe(true);
    // No agent connects to MCP: its client (mcp/connection.ts, and the SDK it imports) is not
    // uploaded; the client's import() would throw saying so.
    expect(Object.keys(result.metafile.inputs).filter((input) => /^(?!flue-unreached:).*@modelcontextprotocol\//.test(input))).toEqual([]);
    const stub = chunks.map((file) => read(dir, file)).find((text) => /mcp\/connection\.[jt]s/.test(text));
    expect(stub).toMatch(/throw new Error\("\[flue\] .*is not in this Worker/);
    // The generated config uploads the chunks beside main.
    expect(JSON.parse(read(dir, '.flue.wrangler.json'))).toMatchObject({
      find_additional_modules: true,
      rules: [{ type: 'ESModule', globs: ['chunks/*.js'] }],
    });
  });

  it('bundles only the provider its literal model id names (anthropic), without warnings', () => {
    expect(result.entrySource).toContain(
      `configureFlueWorker({ env, agents, providers: async () => [withLoadedApi((await import('@earendil-works/pi-ai/providers/anthropic')).anthropicProvider(), await import('@earendil-works/pi-ai/api/anthropic-messages'))] });`,
    );
    expect(result.entrySource).not.toContain('providers/all');
    const piAiProviders = new Set(
      Object.keys(result.metafile.inputs).flatMap((input) => /pi-ai\/dist\/providers\/(?:data\/)?([a-z0-9-]+)/.exec(input)?.[1] ?? []),
    );
    // pi-ai's own index imports its faux provider; every Worker that uses pi-ai has it.
    expect([...piAiProviders].filter((p) => p !== 'anthropic' && p !== 'faux')).toEqual([]);
    expect(lines).toContain('[flue] Providers: anthropic (from the model ids in the source)');
    expect(result.warnings).toEqual([]);
  });

  it('writes the manifest', () => {
    const manifest = {
      agents: [
        {
          identity: 'Hello',
          exportName: 'Hello',
          file: 'src/agents/hello.ts',
          className: 'FlueHelloAgent',
          bindingName: 'FLUE_HELLO_AGENT',
        },
      ],
      cloudflareExports: ['GreetingWorkflow'],
    };
    expect(result.manifest).toEqual(manifest);
    expect(JSON.parse(read(dir, 'dist/flue-manifest.json'))).toEqual(manifest);
  });

  it('generates the entry of §3.2 with the user modules by absolute path', () => {
    expect(result.entrySource).toContain(`import userApp from '${path.join(dir, 'src/app.ts')}';`);
    expect(result.entrySource).toContain(`export * from '${path.join(dir, 'src/cloudflare.ts')}';`);
    expect(result.entrySource).toContain("export const FlueHelloAgent = createFlueAgentClass(agents[0], Reflect.get(m0, 'cloudflare'));");
  });

  it('merges the wrangler config: $schema dropped, main/no_bundle, generated binding', () => {
    const config = JSON.parse(read(dir, '.flue.wrangler.json'));
    expect(config.$schema).toBeUndefined();
    expect(config).toMatchObject({
      name: 'my-flue-app',
      main: 'dist/worker.js',
      no_bundle: true,
      durable_objects: { bindings: [{ name: 'FLUE_HELLO_AGENT', class_name: 'FlueHelloAgent' }] },
      migrations: [{ tag: 'v1', new_sqlite_classes: ['FlueHelloAgent'] }],
      triggers: { crons: ['0 9 * * *'] },
    });
    expect(read(dir, '.flue.wrangler.json')).toBe(result.wranglerConfig);
  });

  it('bundles one ESM Worker: identity binding appended, cloudflare:* external, no Node runtime', () => {
    const js = read(dir, 'dist/worker.js');
    expect(js).toMatch(/__flueBindAgentModule|__flue_bind__/);
    expect(js).toContain('identity: "Hello"');
    // The re-entrancy guard opens the agent function's body (agent-guard.ts).
    expect(js).toMatch(/function Hello\(\) \{\s*__flueEnterAgent\(\);/);
    expect(js).toMatch(/from "cloudflare:workers"/);
    expect(js).not.toContain('node:sqlite');
    expect(js).toMatch(/export \{[^}]*FlueHelloAgent/);
  });

  it('maps the guarded agent module back to its source lines', () => {
    const map = new SourceMap(JSON.parse(read(dir, 'dist/worker.js.map')) as SourceMapPayload);
    const generated = read(dir, 'dist/worker.js').split('\n');
    const line = generated.findIndex((text) => text.includes('useModel("anthropic/claude-haiku-4-5")'));
    const source = read(dir, 'src/agents/hello.ts').split('\n');
    expect(map.findEntry(line, generated[line]!.indexOf('useModel'))).toMatchObject({
      originalSource: expect.stringMatching(/src\/agents\/hello\.ts$/),
      originalLine: source.findIndex((text) => text.includes("useModel('anthropic/claude-haiku-4-5')")),
    });
  });

  it('logs progress: scanning, agents found, bundling, size', () => {
    expect(lines[0]).toBe('[flue] Scanning src/ for agents');
    expect(lines).toContain('[flue] Found 1 agent: Hello (src/agents/hello.ts)');
    expect(lines).toContain('[flue] Bundling dist/worker.js');
    expect(lines.at(-1)).toMatch(
      /^\[flue\] dist\/worker\.js \+ \d+ chunks {2}\d+\.\d\d KiB {2}\(gzip \d+\.\d\d KiB; compiled at startup \d+\.\d\d KiB\)$/,
    );
  });

  it('rewrites .flue.wrangler.json only when its bytes change', async () => {
    const file = path.join(dir, '.flue.wrangler.json');
    const before = statSync(file).mtimeMs;
    // A chunk of an earlier build goes; the generated config would upload it otherwise.
    writeFileSync(path.join(dir, 'dist/chunks/chunk-STALE.js'), 'export {};\n');
    await new Promise((r) => setTimeout(r, 20));
    const again = await build({ root: dir });
    expect(again.wranglerConfigChanged).toBe(false);
    expect(statSync(file).mtimeMs).toBe(before);
    expect(existsSync(path.join(dir, 'dist/chunks/chunk-STALE.js'))).toBe(false);
    expect(again.outputs.chunks.every((chunk) => existsSync(chunk))).toBe(true);
  }, 60_000);

  it('fails without touching dist/ when the bundle breaks', async () => {
    const worker = read(dir, 'dist/worker.js');
    const app = read(dir, 'src/app.ts');
    writeFileSync(path.join(dir, 'src/app.ts'), `import './missing.ts';\n${app}`);
    try {
      await expect(build({ root: dir })).rejects.toThrow(
        /^\[flue\] Bundling failed:\n {2}src\/app\.ts:1:8: Could not resolve "\.\/missing\.ts"/,
      );
      expect(read(dir, 'dist/worker.js')).toBe(worker);
    } finally {
      writeFileSync(path.join(dir, 'src/app.ts'), app);
    }
  }, 60_000);

  it('`flue deploy --dry-run` succeeds offline', () => {
    const res = spawnSync(process.execPath, [path.join(packageRoot(), 'bin/flue.js'), 'deploy', '--dry-run'], {
      cwd: dir,
      env: offlineEnv(),
      encoding: 'utf8',
      timeout: 90_000,
    });
    expect(res.stderr).toContain('--dry-run: exiting now.');
    expect(res.stderr).toMatch(/env\.FLUE_HELLO_AGENT \(FlueHelloAgent\)\s+Durable Object/);
    expect(res.stderr).toMatch(/chunks\/anthropic-messages-\w+\.js/);
    expect(res.stdout).toBe('');
    expect(res.status).toBe(0);
  }, 120_000);
});

describe('build() failures before bundling', () => {
  it('requires src/app.ts', async () => {
    const dir = project({ 'wrangler.jsonc': wranglerJsonc([]) });
    await expect(build({ root: dir })).rejects.toThrow('[flue] No app entry found. Create src/app.ts');
    expect(existsSync(path.join(dir, 'dist'))).toBe(false);
  });

  it('rejects src/db.ts on Cloudflare', async () => {
    const dir = project({ 'src/app.ts': MINIMAL_APP, 'src/db.ts': 'export default {};\n', 'wrangler.jsonc': wranglerJsonc([]) });
    await expect(build({ root: dir })).rejects.toThrow('[flue] Custom persistence (db.ts) is not supported on the Cloudflare target.');
  });

  it('rejects wrangler.toml alone', async () => {
    const dir = project({ 'src/app.ts': MINIMAL_APP, 'wrangler.toml': 'name = "x"\n' });
    await expect(build({ root: dir })).rejects.toThrow('[flue] wrangler.toml is not supported; use wrangler.jsonc.');
  });

  it('runs the migration check against the scanned agents', async () => {
    const dir = project({
      'src/app.ts': MINIMAL_APP,
      'src/agents/a.ts': "'use agent';\nexport function Alpha() { return 'a'; }\n",
      'wrangler.jsonc': wranglerJsonc([]),
    });
    await expect(build({ root: dir })).rejects.toThrow(
      'Durable Object class "FlueAlphaAgent" (agent "Alpha") is not introduced by the migrations in wrangler.jsonc. Append this entry to "migrations":\n  { "tag": "v2", "new_sqlite_classes": ["FlueAlphaAgent"] }',
    );
    expect(existsSync(path.join(dir, 'dist'))).toBe(false);
    expect(existsSync(path.join(dir, '.flue.wrangler.json'))).toBe(false);
  });

  it('propagates scanner errors', async () => {
    const dir = project({
      'src/app.ts': MINIMAL_APP,
      'src/agents/a.ts': "'use agent';\nexport const helper = 1;\n",
      'wrangler.jsonc': wranglerJsonc([]),
    });
    await expect(build({ root: dir })).rejects.toThrow(/^\[flue\] .*a\.ts is marked 'use agent' but exports no agent/);
  });
});

describe('build() infers providers from model ids', () => {
  const agent = (body: string) => `'use agent';\nimport { useModel } from '@flue/runtime';\n${body}\n`;

  it('a computed id warns with file:line, the providers included and how to add more', async () => {
    const dir = project({
      'src/app.ts': MINIMAL_APP,
      'src/agents/a.ts': agent(
        "export function A() {\n  useModel('anthropic/claude-haiku-4-5');\n  return '';\n}\nexport function B(props: { model: string }) {\n  useModel(props.model);\n  return '';\n}",
      ),
      'wrangler.jsonc': wranglerJsonc(['FlueAAgent', 'FlueBAgent']),
    });
    const result = await build({ root: dir });
    expect(result.entrySource).toContain(
      `providers: async () => [withLoadedApi((await import('@earendil-works/pi-ai/providers/anthropic')).anthropicProvider(), await import('@earendil-works/pi-ai/api/anthropic-messages'))]`,
    );
    expect(result.warnings).toEqual([
      'model id computed at run time at src/agents/a.ts:8 (useModel(...)): its provider cannot be known at build time. ' +
        'The Worker includes only "anthropic" (from the literal model ids). Add every provider it may name to flue.config.ts, e.g. ' +
        "export default { providers: ['anthropic', 'openai'] }.",
    ]);
  }, 60_000);

  it('config providers add to the inferred ones and silence the computed-id warning', async () => {
    const dir = project({
      'flue.config.ts': "export default { providers: ['faux'] };\n",
      'src/app.ts': MINIMAL_APP,
      'src/agents/a.ts': agent("import { helper } from '../lib/models.ts';\nexport function A() {\n  useModel(helper());\n  return '';\n}"),
      'src/lib/models.ts': "export const helper = () => ({ model: 'openai/gpt-5-mini' }).model;\n",
      'wrangler.jsonc': wranglerJsonc(['FlueAAgent']),
    });
    const result = await build({ root: dir });
    expect(result.entrySource).toContain(
      `providers: async () => [(await import('@earendil-works/pi-ai/providers/faux')).fauxProvider(), withLoadedApi((await import('@earendil-works/pi-ai/providers/openai')).openaiProvider(), await import('@earendil-works/pi-ai/api/openai-responses'))]`,
    );
    expect(result.warnings).toEqual([]);
  }, 60_000);
});

describe('build() of small projects', () => {
  // `providers: ['faux']` keeps these bundles small.
  const config = "export default { providers: ['faux'] };\n";

  it('builds an app without agents or cloudflare.ts', async () => {
    const dir = project({ 'flue.config.ts': config, 'src/app.ts': MINIMAL_APP, 'wrangler.jsonc': wranglerJsonc([]) });
    const result = await build({ root: dir });
    expect(result.manifest).toEqual({ agents: [], cloudflareExports: [] });
    expect(result.entrySource).toContain("(await import('@earendil-works/pi-ai/providers/faux')).fauxProvider()");
    expect(JSON.parse(read(dir, '.flue.wrangler.json')).durable_objects).toBeUndefined();
  }, 60_000);

  it('lists cloudflare.ts named exports, imports .md as text, applies wrangler define', async () => {
    const dir = project({
      'flue.config.ts': config,
      'src/app.ts':
        "import { Greeter } from './agents/greeter.ts';\nexport default { fetch() { return new Response(String(Greeter)); } };\n",
      'src/agents/greeter.ts':
        "'use agent';\nimport prompt from '../prompts/greeter.md';\nexport function Greeter() { return prompt + BUILD_ID; }\nGreeter.agentName = 'greeter-bot';\n",
      'src/prompts/greeter.md': 'You greet people *warmly*.\n',
      'src/cloudflare.ts': "export class Counter {}\nexport const VERSION = '1';\nexport default { scheduled() {} };\n",
      'wrangler.jsonc': wranglerJsonc(['FlueGreeterBotAgent', 'Counter'], {
        define: { BUILD_ID: '"build-42"' },
        durable_objects: { bindings: [{ name: 'COUNTER', class_name: 'Counter' }] },
        env: { staging: { vars: { STAGE: 'staging' } } },
      }),
    });
    const lines: string[] = [];
    const result = await build({ root: dir, minify: true, log: (l) => lines.push(l) });
    expect(result.manifest).toEqual({
      agents: [
        {
          identity: 'greeter-bot',
          exportName: 'Greeter',
          file: 'src/agents/greeter.ts',
          className: 'FlueGreeterBotAgent',
          bindingName: 'FLUE_GREETER_BOT_AGENT',
        },
      ],
      cloudflareExports: ['Counter', 'VERSION'],
    });
    const js = read(dir, 'dist/worker.js');
    expect(js).toContain('You greet people *warmly*.');
    expect(js).toContain('build-42');
    expect(js).toMatch(/identity:\s*"greeter-bot"/); // survives minification
    expect(result.warnings).toEqual([]);
    expect(lines.some((line) => line.includes('warning'))).toBe(false);
    const merged = JSON.parse(read(dir, '.flue.wrangler.json'));
    expect(merged.durable_objects.bindings).toEqual([
      { name: 'COUNTER', class_name: 'Counter' },
      { name: 'FLUE_GREETER_BOT_AGENT', class_name: 'FlueGreeterBotAgent' },
    ]);
    expect(merged.env.staging.durable_objects.bindings).toEqual([{ name: 'FLUE_GREETER_BOT_AGENT', class_name: 'FlueGreeterBotAgent' }]);
  }, 60_000);

  it('fails on @flue/runtime/node in the Worker graph, naming the import chain', async () => {
    const dir = project({
      'flue.config.ts': config,
      'src/app.ts': "import { store } from './lib/store.ts';\nexport default { fetch() { return new Response(String(store)); } };\n",
      'src/lib/store.ts': "import { sqlite } from '@flue/runtime/node';\nexport const store = sqlite;\n",
      'wrangler.jsonc': wranglerJsonc([]),
    });
    await expect(build({ root: dir })).rejects.toThrow(
      '[flue] The Worker imports @flue/runtime/node (start, sqlite, local), which only runs on Node. Import chain:\n' +
        '  dist/entry.generated.mjs\n  → src/app.ts\n  → src/lib/store.ts\n  → @flue/runtime/node',
    );
    expect(existsSync(path.join(dir, 'dist'))).toBe(false);
  }, 60_000);

  it('fails on node:sqlite in the Worker graph', async () => {
    const dir = project({
      'flue.config.ts': config,
      'src/app.ts':
        "import { DatabaseSync } from 'node:sqlite';\nexport default { fetch() { return new Response(String(DatabaseSync)); } };\n",
      'wrangler.jsonc': wranglerJsonc([]),
    });
    await expect(build({ root: dir })).rejects.toThrow('Import chain:\n  dist/entry.generated.mjs\n  → src/app.ts\n  → node:sqlite');
  }, 60_000);

  it('rejects .md import queries and dynamic SKILL.md imports', async () => {
    const dir = project({
      'flue.config.ts': config,
      'src/app.ts': "import text from './a.md?raw';\nexport default { fetch() { return new Response(text); } };\n",
      'src/a.md': 'x',
      'wrangler.jsonc': wranglerJsonc([]),
    });
    await expect(build({ root: dir })).rejects.toThrow(
      'Import queries are not supported on .md imports ("./a.md?raw"). Use a plain import: import text from \'./a.md\'.',
    );
    writeFiles(dir, {
      'src/app.ts': "export default { async fetch() { return new Response(String(await import('./skills/review/SKILL.md'))); } };\n",
      'src/skills/review/SKILL.md': '---\nname: review\ndescription: Review.\n---\n',
    });
    await expect(build({ root: dir })).rejects.toThrow('use a static SKILL.md import.');
  }, 60_000);

  it('packages a SKILL.md import: the whole directory, junk skipped with warnings', async () => {
    const app = "import skill from './skills/review/SKILL.md';\n" + 'export default { fetch() { return Response.json(skill); } };\n';
    const dir = project({
      'flue.config.ts': config,
      'src/app.ts': app,
      'src/skills/review/SKILL.md': '---\nname: review\ndescription: Review a pull request.\n---\n\n# Review\nRead the diff.\n',
      'src/skills/review/scripts/check.sh': 'echo SKILL_SCRIPT_MARKER\n',
      'src/skills/review/.DS_Store': 'junk',
      'src/skills/review/node_modules/x/index.js': 'NOT_PACKAGED_MARKER',
      'wrangler.jsonc': wranglerJsonc([]),
    });
    writeFileSync(path.join(dir, 'src/skills/review/logo.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 255]));
    const lines: string[] = [];
    const result = await build({ root: dir, log: (line) => lines.push(line) });
    const bundle = read(dir, 'dist/worker.js');
    expect(bundle).toContain('SKILL_SCRIPT_MARKER');
    expect(bundle).toContain('Review a pull request.');
    expect(bundle).not.toContain('NOT_PACKAGED_MARKER');
    expect(result.warnings.some((w) => w.includes('.DS_Store'))).toBe(true);
    expect(result.warnings.some((w) => w.includes('node_modules'))).toBe(true);

    // The module's default export is the SkillReference (evaluated under Node: it has no imports).
    const { packageSkillDirectory, skillModuleSource } = await import('./plugins.ts');
    const packaged = await packageSkillDirectory(path.join(dir, 'src/skills/review'));
    const source = skillModuleSource(packaged.reference);
    const skill = (await import(`data:text/javascript,${encodeURIComponent(source)}`)).default;
    expect(Object.isFrozen(skill) && Object.isFrozen(skill.files)).toBe(true);
    expect(skill).toMatchObject({
      __flueSkillReference: true,
      name: 'review',
      description: 'Review a pull request.',
      instructions: '# Review\nRead the diff.\n',
    });
    expect(skill.id).toMatch(/^skill:review:[0-9a-f]{16}$/);
    expect(Object.keys(skill.files)).toEqual(['SKILL.md', 'logo.png', 'scripts/check.sh']);
    expect(skill.files['logo.png']).toEqual({
      kind: 'binary',
      content: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 255]).toString('base64'),
    });
    expect(bundle).toContain(skill.id);
  }, 60_000);

  it('fails a SKILL.md import on sensitive files, symlinks and invalid frontmatter', async () => {
    const dir = project({
      'flue.config.ts': config,
      'src/app.ts': "import skill from './skills/review/SKILL.md';\nexport default { fetch() { return Response.json(skill); } };\n",
      'src/skills/review/SKILL.md': '---\nname: review\ndescription: Review.\n---\nBody\n',
      'src/skills/review/.env': 'TOKEN=1',
      'src/skills/review/keys/server.pem': 'x',
      'wrangler.jsonc': wranglerJsonc([]),
    });
    await expect(build({ root: dir })).rejects.toThrow(/\.env" looks like a secret[\s\S]*server\.pem" looks like a secret/);
    expect(existsSync(path.join(dir, 'dist'))).toBe(false);

    rmSync(path.join(dir, 'src/skills/review/.env'));
    rmSync(path.join(dir, 'src/skills/review/keys'), { recursive: true });
    symlinkSync(path.join(dir, 'src/app.ts'), path.join(dir, 'src/skills/review/link.ts'));
    await expect(build({ root: dir })).rejects.toThrow('link.ts" is a symlink');

    rmSync(path.join(dir, 'src/skills/review/link.ts'));
    writeFiles(dir, { 'src/skills/review/SKILL.md': '---\nname: other\n---\nBody\n' });
    await expect(build({ root: dir })).rejects.toThrow(/`description` is required[\s\S]*must equal the skill's directory name "review"/);
  }, 60_000);

  it('narrows the scan with the config agents glob', async () => {
    const dir = project({
      'flue.config.ts': "export default { providers: ['faux'], agents: 'agents/**/*.ts' };\n",
      'src/app.ts': MINIMAL_APP,
      'src/agents/a.ts': "'use agent';\nexport function Alpha() { return 'a'; }\n",
      'src/other/b.ts': "'use agent';\nexport function Beta() { return 'b'; }\n",
      'wrangler.jsonc': wranglerJsonc(['FlueAlphaAgent']),
    });
    const result = await build({ root: dir });
    expect(result.manifest.agents.map((a) => a.identity)).toEqual(['Alpha']);
  }, 60_000);

  it('leaves no staging files behind', async () => {
    const dir = project({ 'flue.config.ts': config, 'src/app.ts': MINIMAL_APP, 'wrangler.jsonc': wranglerJsonc([]) });
    await build({ root: dir });
    renameSync(path.join(dir, 'dist'), path.join(dir, 'dist-old'));
    await build({ root: dir });
    const tmp = path.join(dir, '.wrangler', 'tmp');
    expect(existsSync(tmp) ? readdirSync(tmp) : []).toEqual([]);
  }, 60_000);
});
