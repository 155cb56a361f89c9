/**
 * A user's own project, end to end, outside this repository and on the machine's own Node: `flue
 * init` from this checkout (which packs it into the new project's vendor/), `npm install` from the
 * tarball, then what a user does with it, on both targets: the project's own `npm test` in
 * workerd, the type-check, `flue dev` and `flue dev --target node` answering offline (their own
 * tool called by the offline model, an editor's atomic save rebuilding), the built Node server,
 * `flue run`, a definition error failing `flue build` with its file and line, and `flue deploy
 * --dry-run`.
 *
 * The project's npm scripts run under the node@22 it pins; everything else here (npm itself, the
 * `flue init` call) runs under whatever `node` the machine has first on PATH outside node_modules,
 * Node 20 on the machines this was written for. One project and one install serve every step
 * (installing is most of this file's time); steps that edit it put its files back.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const workspace = mkdtempSync(path.join(os.tmpdir(), 'flue-init-e2e-'));
const app = path.join(workspace, 'my-app');

/** PATH without this checkout's node_modules/.bin (npm test puts its node@22 there). */
const machinePath = (process.env.PATH ?? '')
  .split(path.delimiter)
  .filter((dir) => dir !== '' && !dir.split(path.sep).includes('node_modules'))
  .join(path.delimiter);

/** The first `node` on that PATH: the machine's own. */
function machineNode(): string {
  for (const dir of machinePath.split(path.delimiter)) {
    const file = path.join(dir, 'node');
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      continue;
    }
  }
  throw new Error(`no node on PATH outside node_modules (${machinePath})`);
}

/**
 * The environment of a user's shell: no npm-run variables from our own `npm test` (npm would read
 * them as configuration), no `--conditions=flue-source` (the installed package has no sources),
 * wrangler offline.
 */
function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^npm_/i.test(key) || key === 'INIT_CWD' || key === 'NODE_OPTIONS' || key === 'NODE' || key.startsWith('VITEST') || key === 'TEST')
      continue;
    env[key] = value;
  }
  return {
    ...env,
    PATH: machinePath,
    WRANGLER_SEND_METRICS: 'false',
    CLOUDFLARE_CF_FETCH_ENABLED: 'false',
    XDG_CONFIG_HOME: path.join(app, '.xdg'),
    NO_COLOR: '1',
  };
}

interface Run {
  code: number | null;
  output: string;
}

function run(command: string, args: string[], cwd: string, timeoutMs: number, env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { ...userEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => void (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => void (output += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** Fails with the command's output, which is what one needs to see when a step breaks. */
function expectSuccess(result: Run, what: string): void {
  if (result.code !== 0) throw new Error(`${what} exited with ${result.code}:\n${result.output.slice(-6000)}`);
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * A long-running command in the project (`npm run dev`, the built server, a model server), in its
 * own process group so its whole tree (npm, flue, wrangler, workerd) stops together. It is up once
 * its output matches `ready`, whose first group is the URL it serves.
 */
interface Service {
  child: ChildProcess;
  base: string;
  output: () => string;
}
/** Every service's process, so afterAll stops what a failed test left running. */
const running = new Set<ChildProcess>();

async function startService(command: string, args: string[], ready: RegExp, env: NodeJS.ProcessEnv = {}): Promise<Service> {
  const child = spawn(command, args, { cwd: app, env: { ...userEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => void (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => void (output += d.toString()));
  running.add(child);
  const deadline = Date.now() + 120_000;
  let match: RegExpExecArray | null;
  while ((match = ready.exec(output)) === null) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`${command} ${args.join(' ')} did not come up:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return { child, base: match[1]!, output: () => output };
}

async function stopService(service: Service | undefined): Promise<void> {
  if (service === undefined || !running.delete(service.child)) return;
  const { child } = service;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  process.kill(-child.pid!, 'SIGINT');
  await exited;
}

/** What `flue dev` prints (on both targets) once it serves on `port`. */
const devReady = (port: number) => new RegExp(`(http://(?:127\\.0\\.0\\.1|localhost):${port})\\n`);

/** POST /hello/<id> of the template's app.ts: the agent's reply (or error) as JSON. */
async function hello(service: Service, id: string, message: string): Promise<{ status: number; body: { reply?: string; error?: string } }> {
  const response = await fetch(`${service.base}/hello/${id}`, { method: 'POST', body: message });
  return { status: response.status, body: (await response.json()) as { reply?: string; error?: string } };
}

async function expectAppServed(service: Service): Promise<void> {
  const response = await fetch(`${service.base}/`);
  expect(response.status).toBe(200);
  expect(await response.text()).toContain('Flue is running.');
}

const HELLO = path.join(app, 'src', 'agents', 'hello.ts');
let originalHello = '';

/** An editor's atomic save: the new text goes to a temporary file renamed over the original. */
function saveAtomically(file: string, text: string): void {
  const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  writeFileSync(temporary, text);
  renameSync(temporary, file);
}

/** hello.ts whose tool output also carries `edition`, so a reply shows which build answered. */
function helloEdition(edition: string): string {
  const edited = originalHello.replace('output: { timeZone, now:', `output: { edition: '${edition}', timeZone, now:`);
  if (edited === originalHello) throw new Error("the template's hello.ts no longer has `output: { timeZone, now:` to edit");
  return edited;
}

/** Waits until the dev server's rebuilt `bundle` contains `expected`. */
async function bundleEventually(bundle: string, expected: string, service: Service): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!(existsSync(bundle) && readFileSync(bundle, 'utf8').includes(expected))) {
    if (Date.now() > deadline)
      throw new Error(`${path.relative(app, bundle)} was not rebuilt with ${JSON.stringify(expected)}:\n${service.output().slice(-4000)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Sends `message` until the reply contains `expected`: the dev server rebuilds and reloads meanwhile. */
async function replyEventually(service: Service, message: string, expected: string): Promise<string> {
  const deadline = Date.now() + 90_000;
  let last = '';
  for (let attempt = 0; Date.now() < deadline; attempt++) {
    try {
      const { body } = await hello(service, `edit-${Date.now()}-${attempt}`, message);
      last = JSON.stringify(body);
      if (body.reply?.includes(expected)) return body.reply;
    } catch (error) {
      last = String(error); // between two builds
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`no reply containing ${JSON.stringify(expected)}; the last: ${last}\n${service.output().slice(-4000)}`);
}

beforeAll(async () => {
  // On an older Node, bin/flue.js runs the built CLI (dist/cli.js): it must be today's.
  const { buildDist, isStale } = await import('../../scripts/build-dist.mjs');
  if (isStale()) await buildDist();
  const version = await run(machineNode(), ['--version'], workspace, 10_000);
  console.info(`[e2e] machine node ${version.output.trim()} at ${machineNode()}`);
  const init = await run(machineNode(), [path.join(repo, 'bin', 'flue.js'), 'init', 'my-app'], workspace, 180_000);
  expectSuccess(init, 'flue init');
  expect(init.output).toContain('my-app/vendor/flue-workers-');
  const manifest = JSON.parse(readFileSync(path.join(app, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  expect(manifest.dependencies['@flue/runtime']).toMatch(/^file:\.\/vendor\/flue-workers-\d+\.\d+\.\d+\.tgz$/);
  expectSuccess(await run('npm', ['install', '--no-audit', '--no-fund'], app, 600_000), 'npm install');
  // The package users get: built JavaScript and declarations, no TypeScript sources.
  const installed = path.join(app, 'node_modules', '@flue', 'runtime');
  expect(existsSync(path.join(installed, 'dist', 'index.js'))).toBe(true);
  expect(existsSync(path.join(installed, 'dist', 'types', 'runtime', 'index.d.ts'))).toBe(true);
  expect(existsSync(path.join(installed, 'src'))).toBe(false);
  originalHello = readFileSync(HELLO, 'utf8');
}, 800_000);

afterAll(async () => {
  for (const child of running) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(workspace, { recursive: true, force: true });
}, 120_000);

test("the project's own npm test passes: its agent in workerd against the scripted model, and its recorded conversation replayed in Node", async () => {
  const result = await run('npm', ['test'], app, 300_000);
  expectSuccess(result, 'npm test');
  expect(result.output).toMatch(/✓ \|node\| test\/hello\.replay\.test\.ts \(1 test\)/);
  expect(result.output).toMatch(/✓ \|workers\| test\/hello\.test\.ts \(3 tests\)/);
  expect(result.output).toMatch(/Tests\s+4 passed/);
}, 320_000);

test('the project type-checks: its own code strictly, our declarations with every .d.ts checked, dependencies that load Node types', async () => {
  // What tsc resolves each config to (extends applied), and the files it checks.
  const showConfig = async (project: string) => {
    const result = await run('npx', ['tsc', '-p', project, '--showConfig'], app, 60_000);
    expectSuccess(result, `tsc -p ${project} --showConfig`);
    return JSON.parse(result.output) as { compilerOptions: { strict?: boolean; skipLibCheck?: boolean }; files: string[] };
  };
  const worker = await showConfig('tsconfig.json');
  // The ecosystem's convention (Cloudflare's templates): dependencies' declarations unchecked.
  expect(worker.compilerOptions).toMatchObject({ strict: true, skipLibCheck: true });
  expect([...worker.files].sort()).toEqual(['./src/agents/hello.ts', './src/app.ts', './src/cloudflare.ts']);
  const tests = await showConfig('test');
  const node = await showConfig('tsconfig.node.json');
  expect(tests.compilerOptions.strict).toBe(true);
  expect(node.compilerOptions.strict).toBe(true);
  expect([...tests.files, ...node.files].map((f) => path.basename(f)).sort()).toEqual([
    'global-setup.ts',
    'hello.replay.test.ts',
    'hello.test.ts',
    'scripted-model.ts',
    'vitest.config.ts',
  ]);

  const nodeServer = path.join(app, 'src', 'node-server.ts');
  const usesUndici = path.join(app, 'src', 'uses-undici.ts');
  try {
    // Our declarations, with every .d.ts checked, under the template's own lib: the Worker's
    // entries (the template's src/) and the Node server's, `await using` included.
    writeFileSync(
      nodeServer,
      "import { start } from '@flue/runtime/node';\nimport { Hello } from './agents/hello.ts';\n\n" +
        'export async function startAndStop(): Promise<void> {\n  await using flue = await start({ agents: [Hello] });\n  void flue;\n}\n',
    );
    expectSuccess(
      await run('npx', ['tsc', '--noEmit', '--skipLibCheck', 'false', '--pretty', 'false'], app, 120_000),
      'tsc --noEmit --skipLibCheck false',
    );

    // A dependency whose declarations load Node's types (undici's, installed here through
    // miniflare; many packages' do): with every .d.ts checked, Node's globals clash with the
    // Workers runtime's; the template's own check accepts the user's code.
    writeFileSync(
      usesUndici,
      "import type { Dispatcher } from 'undici';\n\nexport function method(options: Dispatcher.RequestOptions): string {\n  return options.method;\n}\n",
    );
    const everything = await run('npx', ['tsc', '--noEmit', '--skipLibCheck', 'false', '--pretty', 'false'], app, 120_000);
    expect(everything.output).toContain("Cannot redeclare block-scoped variable 'console'");
    expectSuccess(await run('npx', ['tsc', '--noEmit'], app, 120_000), 'tsc --noEmit');
  } finally {
    rmSync(nodeServer, { force: true });
    rmSync(usesUndici, { force: true });
  }

  // The template's script checks all three.
  const scripts = (JSON.parse(readFileSync(path.join(app, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  expect(scripts['typecheck']).toBe('tsc --noEmit && tsc --noEmit -p test && tsc --noEmit -p tsconfig.node.json');
  expectSuccess(await run('npm', ['run', 'typecheck'], app, 240_000), 'npm run typecheck');
}, 600_000);

/**
 * `npm run dev` on one target, started once for its cases (the tests of the other target's run
 * after it stopped). `extra` adds the target's own cases.
 */
function devCases(target: 'cloudflare' | 'node', extra: (dev: () => Service) => void): void {
  describe(`npm run dev (${target})`, () => {
    let dev: Service | undefined;
    beforeAll(async () => {
      const port = await freePort();
      dev = await startService(
        'npm',
        ['run', 'dev', '--', ...(target === 'node' ? ['--target', 'node'] : []), '--port', String(port)],
        devReady(port),
      );
    }, 150_000);
    afterAll(() => stopService(dev), 30_000);

    test('serves the app', async () => {
      await expectAppServed(dev!);
    }, 30_000);

    extra(() => dev!);

    test("offline, the model echoes, and a `/tool <name> <arguments>` message calls the agent's own tool", async () => {
      expect(await hello(dev!, 'echo', 'Hello from the e2e test')).toEqual({
        status: 200,
        body: expect.objectContaining({ reply: '(scripted model) You said: Hello from the e2e test' }),
      });
      const { status, body } = await hello(dev!, 'tool', '/tool current_time {"timeZone":"Asia/Tokyo"}');
      expect(status, JSON.stringify(body)).toBe(200);
      expect(body.reply).toMatch(/^\(scripted model\) current_time returned: \{"timeZone":"Asia\/Tokyo","now":"[^"]+"\}$/);
    }, 60_000);

    test('an atomic save of src/agents/hello.ts (temporary file renamed over it) rebuilds, every time, and the new code answers', async () => {
      const bundle = path.join(app, 'dist', target === 'node' ? 'server.mjs' : 'worker.js');
      try {
        for (const edition of ['second-edition', 'third-edition']) {
          saveAtomically(HELLO, helloEdition(edition));
          // Rebuilt (the edit loop alone), then served (the offline model calls the edited tool).
          await bundleEventually(bundle, edition, dev!);
          expect(await replyEventually(dev!, '/tool current_time {}', edition)).toContain('(scripted model) current_time returned:');
        }
      } finally {
        saveAtomically(HELLO, originalHello);
      }
    }, 200_000);
  });
}

devCases('cloudflare', (dev) => {
  test('the updates view streams a conversation (server-sent events)', async () => {
    expect(dev().output()).toContain(
      '[flue] Model: scripted, offline. It echoes your message; send `/tool <tool_name> {"argument":"value"}` to make it call that tool of the agent. ' +
        'For a real model put ANTHROPIC_API_KEY=… in .dev.vars',
    );
    expect(await hello(dev(), 'first', 'Hello from the e2e test')).toMatchObject({
      status: 200,
      body: { reply: '(scripted model) You said: Hello from the e2e test' },
    });

    // The live view replays the conversation and stays open.
    const controller = new AbortController();
    const updates = await fetch(`${dev().base}/api/agents/hello/first?view=updates&offset=-1&live=sse`, { signal: controller.signal });
    expect(updates.status).toBe(200);
    expect(updates.headers.get('content-type')).toContain('text/event-stream');
    const reader = updates.body!.getReader();
    let streamed = '';
    const streamDeadline = Date.now() + 20_000;
    while (!streamed.includes('(scripted model) You said: Hello from the e2e test') && Date.now() < streamDeadline) {
      const { value, done } = await reader.read();
      if (done) break;
      streamed += new TextDecoder().decode(value);
    }
    controller.abort();
    expect(streamed).toContain('"text":"Hello from the e2e test"');
    expect(streamed).toContain('(scripted model) You said: Hello from the e2e test');
  }, 60_000);
});

devCases('node', () => {});

test('flue build --target node writes a server that runs on its own', async () => {
  expectSuccess(await run('npx', ['flue', 'build', '--target', 'node'], app, 180_000), 'flue build --target node');
  const port = await freePort();
  const server = await startService('npx', ['node', 'dist/server.mjs'], new RegExp(`Listening on (http://localhost:${port})\\b`), {
    PORT: String(port),
  });
  try {
    await expectAppServed(server);
  } finally {
    await stopService(server);
  }
}, 240_000);

test("flue run sends one message to an agent, which calls its own tool: against the project's scripted model", async () => {
  // The model the project's tests use (test/scripted-model.ts), served as they serve it.
  mkdirSync(path.join(app, '.e2e'), { recursive: true });
  writeFileSync(
    path.join(app, '.e2e', 'model-server.mjs'),
    "import { startScriptedModelServer } from '@flue/runtime/testing';\nimport { scriptedModel } from '../test/scripted-model.ts';\n\n" +
      'const server = await startScriptedModelServer({ fallback: scriptedModel });\nprocess.stdout.write(`${server.url}\\n`);\n',
  );
  const model = await startService('npx', ['node', '.e2e/model-server.mjs'], /(http:\/\/127\.0\.0\.1:\d+)\n/);
  try {
    const result = await run('npx', ['flue', 'run', 'src/agents/hello.ts', '--message', 'What time is it in Tokyo?'], app, 120_000, {
      FLUE_SCRIPTED_MODEL_URL: model.base,
    });
    expectSuccess(result, 'flue run');
    expect(result.output).toContain('→ current_time {"timeZone":"Asia/Tokyo"}');
    expect(result.output).toContain('In Asia/Tokyo it is');
  } finally {
    await stopService(model);
  }
}, 180_000);

test("flue run falls back offline: a `/tool <name> <arguments>` message calls the agent's own tool", async () => {
  const result = await run(
    'npx',
    ['flue', 'run', 'src/agents/hello.ts', '--message', '/tool current_time {"timeZone":"Asia/Tokyo"}'],
    app,
    120_000,
  );
  expectSuccess(result, 'flue run');
  expect(result.output).toContain('(scripted model) current_time returned:');
  expect(result.output).toContain('Asia/Tokyo');
}, 150_000);

test('a definition error fails flue build on both targets, naming src/agents/hello.ts and the line', async () => {
  // A tool whose input is not an object schema, defined at module top level.
  const broken = `${originalHello.replace(/\n*$/, '\n')}defineTool({ name: 'broken', description: 'Input must be an object schema.', input: v.string(), async run() { return { output: 'never' }; } });\n`;
  const line = broken.split('\n').length - 1;
  try {
    writeFileSync(HELLO, broken);
    for (const args of [[], ['--target', 'node']]) {
      const result = await run('npx', ['flue', 'build', ...args], app, 180_000);
      expect(result.code, result.output).toBe(1);
      expect(result.output).toMatch(new RegExp(`^\\[flue\\] .*src/agents/hello\\.ts:${line}\\b`, 'm'));
    }
  } finally {
    writeFileSync(HELLO, originalHello);
  }
}, 400_000);

test('flue deploy --dry-run bundles the Worker', async () => {
  const result = await run('npx', ['flue', 'deploy', '--dry-run'], app, 180_000);
  expectSuccess(result, 'flue deploy --dry-run');
  expect(result.output).toContain('--dry-run: exiting now.');
  expect(result.output).toMatch(/env\.FLUE_HELLO_AGENT \(FlueHelloAgent\)\s+Durable Object/);
}, 200_000);
