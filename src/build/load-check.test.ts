/**
 * Definition errors are build errors: whatever throws when the app's modules load fails `flue build`
 * on both targets, naming the `src/` line that threw, and leaves the last good dist/ in place.
 * The kinds of definition error run through the shared check directly (one Node child each); the
 * CLI cases show the wiring of both targets once.
 */
import { mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from './cli.ts';
import type { BuildTarget } from './config.ts';
import { ModuleLoadError, checkModuleLoad, sourceLocation } from './load-check.ts';
import { packageRoot } from './package-root.ts';
import { removeDir, tempProject, wranglerJsonc, writeFiles } from './test-project.ts';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));
function project(files: Record<string, string>): string {
  const dir = tempProject('load-check', files);
  dirs.push(dir);
  return dir;
}

const PACKAGE_JSON = '{ "name": "load-check", "private": true, "type": "module" }\n';
const APP = "export default { fetch: () => new Response('ok') };\n";
const agent = (body: string, imports = "import { useModel } from '@flue/runtime';") =>
  `'use agent';\n${imports}\n${body}\nexport function Helper() {\n  useModel('anthropic/claude-haiku-4-5');\n  return 'Help.';\n}\n`;

async function check(target: BuildTarget, files: Record<string, string>, log: string[] = []): Promise<unknown> {
  const dir = project({ 'package.json': PACKAGE_JSON, 'src/app.ts': APP, ...files });
  const modules = [path.join(dir, 'src/app.ts'), path.join(dir, 'src/agents/helper.ts')];
  try {
    await checkModuleLoad({ root: dir, target, modules, log: (line) => log.push(line) });
    return undefined;
  } catch (error) {
    return error;
  }
}

// Line 3 of every agent module below is the first line of `body`.
const KINDS: { kind: string; files: Record<string, string>; location: string; message: string }[] = [
  {
    kind: 'defineTool() whose input is not an object schema',
    files: {
      'src/agents/helper.ts': agent(
        "const echo = defineTool({ name: 'echo', description: 'Echoes.', input: v.string(), run: () => ({ output: 'x' }) });",
        "import * as v from 'valibot';\nimport { defineTool, useModel } from '@flue/runtime';",
      ),
    },
    location: 'src/agents/helper.ts:4:14',
    message: 'ToolDefinitionError: defineTool(): tool "echo": input must be a top-level object schema.',
  },
  {
    kind: 'a hook called at module top level',
    files: { 'src/agents/helper.ts': agent("useModel('anthropic/claude-haiku-4-5');") },
    location: 'src/agents/helper.ts:3:1',
    message: 'AgentDefinitionError: useModel() was called outside an agent function.',
  },
  {
    kind: 'defineSubagent() without a description',
    files: {
      'src/agents/helper.ts': agent(
        "export const reviewer = defineSubagent({ name: 'reviewer', description: '', agent: () => 'Review.' });",
        "import { defineSubagent, useModel } from '@flue/runtime';",
      ),
    },
    location: 'src/agents/helper.ts:3:25',
    message: 'needs a non-empty description',
  },
  {
    kind: 'defineSkill() with an invalid name and no instructions',
    files: {
      'src/agents/helper.ts': agent(
        "export const skill = defineSkill({ name: 'Bad Name!', description: 'x' } as never);",
        "import { defineSkill, useModel } from '@flue/runtime';",
      ),
    },
    location: 'src/agents/helper.ts:3:22',
    message: 'SkillDefinitionValidationError: Invalid skill definition "Bad Name!": `name` may only contain',
  },
  {
    kind: 'defineMcpConnection() with a URL that does not parse',
    files: {
      'src/agents/helper.ts': agent(
        "export const docs = defineMcpConnection({ name: 'docs', url: 'not a url' });",
        "import { defineMcpConnection, useModel } from '@flue/runtime';",
      ),
    },
    location: 'src/agents/helper.ts:3:21',
    message: 'defineMcpConnection',
  },
  {
    kind: 'a throw in a helper module an agent imports',
    files: {
      'src/agents/helper.ts': agent("import { limits } from '../lib/limits.ts';\nvoid limits;"),
      'src/lib/limits.ts': "export const limits = { max: 3 };\nif (limits.max < 5) throw new RangeError('max must be at least 5');\n",
    },
    location: 'src/lib/limits.ts:2:27',
    message: 'RangeError: max must be at least 5',
  },
];

describe.each(['cloudflare', 'node'] as const)('checkModuleLoad (%s target)', (target) => {
  it.each(KINDS)('fails on $kind, naming the src/ line', async ({ files, location, message }) => {
    const error = await check(target, files);
    expect(error).toBeInstanceOf(ModuleLoadError);
    const text = (error as ModuleLoadError).message;
    expect(text.split('\n')[0]).toMatch(new RegExp(`^\\[flue\\] ${location.replace(/[.:]/g, '\\$&')}: `));
    expect(text).toContain(message);
    expect((error as ModuleLoadError).location).toBe(location);
  });
});

describe('checkModuleLoad', () => {
  it('loads a module that uses cloudflare:workers at top level (classes, env) without complaint', async () => {
    const log: string[] = [];
    const error = await check(
      'cloudflare',
      {
        'src/agents/helper.ts': agent(
          "export class Greeter extends WorkflowEntrypoint { async run() { return env.GREETING ?? 'hi'; } }\nconst region = `${env.REGION}`;\nvoid region;",
          "import { WorkflowEntrypoint, env } from 'cloudflare:workers';\nimport { useModel } from '@flue/runtime';",
        ),
      },
      log,
    );
    expect(error).toBeUndefined();
    expect(log).toEqual([]);
  });

  it('on Cloudflare, a failure outside src/ (a package Node cannot load) is a note; on Node it fails the build', async () => {
    const files = {
      'node_modules/workerd-only/package.json': '{ "name": "workerd-only", "type": "module", "exports": "./index.js" }\n',
      'node_modules/workerd-only/index.js': "throw new Error('this package runs on workerd only');\n",
      'src/agents/helper.ts': agent("import 'workerd-only';"),
    };
    const log: string[] = [];
    expect(await check('cloudflare', files, log)).toBeUndefined();
    expect(log).toEqual([
      '[flue] Note: src/agents/helper.ts could not be loaded on Node to check its definitions (this package runs on workerd only); workerd may still load it.',
    ]);
    const error = await check('node', files);
    expect(error).toBeInstanceOf(ModuleLoadError);
    expect((error as Error).message).toMatch(
      /^\[flue\] src\/agents\/helper\.ts: this package runs on workerd only \(thrown while loading src\/agents\/helper\.ts/,
    );
  });

  it('names the src/ line when node_modules is a symlink to another tree', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'flue-load-check-'));
    dirs.push(dir);
    writeFiles(dir, {
      'package.json': PACKAGE_JSON,
      'src/app.ts': APP,
      'src/agents/helper.ts': agent("useModel('anthropic/claude-haiku-4-5');"),
    });
    symlinkSync(path.join(packageRoot(), 'node_modules'), path.join(dir, 'node_modules'));
    const error = await checkModuleLoad({ root: dir, target: 'node', modules: [path.join(dir, 'src/agents/helper.ts')] }).catch(
      (e: unknown) => e,
    );
    expect((error as ModuleLoadError).location).toBe('src/agents/helper.ts:3:1');
  });
});

describe('sourceLocation', () => {
  it('takes the innermost frame in src/, outside node_modules, from paths and file: URLs', () => {
    const stack = [
      'Error: boom',
      '    at validate (/app/node_modules/@flue/runtime/dist/index.js:10:5)',
      '    at /app/src/node_modules/x/index.js:1:1',
      '    at file:///app/src/agents/a.ts:7:3',
      '    at ModuleJob.run (node:internal/modules/esm/module_job:1:1)',
    ].join('\n');
    expect(sourceLocation('/app', stack)).toBe('src/agents/a.ts:7:3');
    expect(sourceLocation('/app', 'Error: x\n    at Object.<anonymous> (/app/src/app.ts:2:9)')).toBe('src/app.ts:2:9');
    expect(sourceLocation('/app', 'Error: x\n    at /app/lib/a.ts:1:1')).toBeUndefined();
  });
});

describe('flue build with a definition error', () => {
  async function cli(argv: string[], cwd: string): Promise<{ code: number; stderr: string }> {
    let stderr = '';
    const code = await main(argv, { cwd, stdout: () => {}, stderr: (t) => void (stderr += t) });
    return { code, stderr };
  }

  it.each([
    ['cloudflare', [], 'dist/worker.js'],
    ['node', ['--target', 'node'], 'dist/server.mjs'],
  ] as const)('exits 1 on the %s target with the [flue] line and keeps the last good dist/', async (_target, flags, output) => {
    const dir = project({
      'package.json': PACKAGE_JSON,
      'src/app.ts': APP,
      'src/agents/helper.ts': agent(''),
      'wrangler.jsonc': wranglerJsonc(['FlueHelperAgent']),
    });
    expect((await cli(['build', ...flags], dir)).code).toBe(0);
    const good = readFileSync(path.join(dir, output));

    writeFiles(dir, { 'src/agents/helper.ts': agent("useModel('anthropic/claude-haiku-4-5');") });
    const r = await cli(['build', ...flags], dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('[flue] src/agents/helper.ts:3:1: AgentDefinitionError: useModel() was called outside an agent function.');
    expect(readFileSync(path.join(dir, output)).equals(good)).toBe(true);
  });

  it('loads src/cloudflare.ts too on the Cloudflare target (cloudflare:* imports answered by a stand-in)', async () => {
    const dir = project({
      'src/app.ts': APP,
      'src/agents/helper.ts': agent(''),
      'wrangler.jsonc': wranglerJsonc(['FlueHelperAgent']),
      'src/cloudflare.ts':
        "import { WorkerEntrypoint } from 'cloudflare:workers';\nexport class Side extends WorkerEntrypoint {}\nif (Side.name === 'Side') throw new TypeError('cloudflare.ts failed');\n",
    });
    const r = await cli(['build'], dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('[flue] src/cloudflare.ts:3:33: TypeError: cloudflare.ts failed (thrown at module load');
  });
});
