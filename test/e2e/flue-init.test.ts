/**
 * A user's first hour, end to end, outside this repository and on the machine's own Node: `flue
 * init` from this checkout (which packs it into the new project's vendor/), `npm install` from the
 * tarball, the project's own `npm test` in workerd, `npm run dev` answering offline (an echo, and
 * the template's tool called through the `/tool` form) with its updates view streaming, `flue
 * deploy --dry-run`, and the type-check (`tsc --noEmit` with every declaration file checked, and
 * the template's `npm run typecheck`).
 *
 * The project's npm scripts run under the node@22 it pins; everything else here (npm itself, the
 * `flue init` call) runs under whatever `node` the machine has first on PATH outside node_modules,
 * Node 20 on the machines this was written for. One install serves every step.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, test } from 'vitest';

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
    if (/^npm_/i.test(key) || key === 'INIT_CWD' || key === 'NODE_OPTIONS' || key === 'NODE' || key.startsWith('VITEST') || key === 'TEST') continue;
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

function run(command: string, args: string[], cwd: string, timeoutMs: number): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: userEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
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

let dev: ChildProcess | undefined;

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
}, 800_000);

afterAll(async () => {
  if (dev?.pid !== undefined && dev.exitCode === null && dev.signalCode === null) {
    try {
      process.kill(-dev.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(workspace, { recursive: true, force: true });
}, 30_000);

test("the project's own npm test passes: its agent in workerd against the scripted model", async () => {
  const result = await run('npm', ['test'], app, 300_000);
  expectSuccess(result, 'npm test');
  expect(result.output).toMatch(/Tests\s+3 passed/);
}, 320_000);

test('npm run dev serves the Worker offline: a POST gets the scripted reply and the updates view streams it', async () => {
  const port = await freePort();
  // Its own process group, so the whole tree (npm, flue, wrangler, workerd) stops together.
  dev = spawn('npm', ['run', 'dev', '--', '--port', String(port)], { cwd: app, env: userEnv(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  dev.stdout!.on('data', (d: Buffer) => void (output += d.toString()));
  dev.stderr!.on('data', (d: Buffer) => void (output += d.toString()));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  while (!output.includes(`${base}\n`)) {
    if (dev.exitCode !== null || Date.now() > deadline) throw new Error(`npm run dev did not come up:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  expect(output).toContain(
    '[flue] Model: scripted, offline. It echoes your message; send `/tool <tool_name> {"argument":"value"}` to make it call that tool of the agent. ' +
      'For a real model put ANTHROPIC_API_KEY=… in .dev.vars',
  );

  const response = await fetch(`${base}/hello/first`, { method: 'POST', body: 'Hello from the e2e test' });
  expect(response.status).toBe(200);
  expect(await response.json()).toMatchObject({ id: 'first', reply: '(scripted model) You said: Hello from the e2e test' });

  // The template agent's own tool, run by the offline model.
  const tool = await fetch(`${base}/hello/tool-call`, { method: 'POST', body: '/tool current_time {"timeZone":"Asia/Tokyo"}' });
  expect(tool.status).toBe(200);
  expect(((await tool.json()) as { reply: string }).reply).toMatch(/^\(scripted model\) current_time returned: \{"timeZone":"Asia\/Tokyo","now":"[^"]+"\}$/);

  // The live view (server-sent events) replays the conversation and stays open.
  const controller = new AbortController();
  const updates = await fetch(`${base}/api/agents/hello/first?view=updates&offset=-1&live=sse`, { signal: controller.signal });
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

  const exited = new Promise<void>((resolve) => dev!.on('exit', () => resolve()));
  process.kill(-dev.pid!, 'SIGINT');
  await exited;
}, 180_000);

test('flue deploy --dry-run bundles the Worker', async () => {
  const result = await run('npx', ['flue', 'deploy', '--dry-run'], app, 180_000);
  expectSuccess(result, 'flue deploy --dry-run');
  expect(result.output).toContain('--dry-run: exiting now.');
  expect(result.output).toMatch(/env\.FLUE_HELLO_AGENT \(FlueHelloAgent\)\s+Durable Object/);
}, 200_000);

test('the project type-checks strictly: src/ with every declaration file checked, tests and Node-side files too but for two broken third-party packages', async () => {
  // What tsc resolves each config to (extends applied), and the files it checks.
  const showConfig = async (project: string) => {
    const result = await run('npx', ['tsc', '-p', project, '--showConfig'], app, 60_000);
    expectSuccess(result, `tsc -p ${project} --showConfig`);
    return JSON.parse(result.output) as { compilerOptions: { strict?: boolean; skipLibCheck?: boolean }; files: string[] };
  };
  const worker = await showConfig('tsconfig.json');
  expect(worker.compilerOptions).toMatchObject({ strict: true, skipLibCheck: false });
  expect([...worker.files].sort()).toEqual(['./src/agents/hello.ts', './src/app.ts', './src/cloudflare.ts']);
  const tests = await showConfig('test');
  const node = await showConfig('tsconfig.node.json');
  expect(tests.compilerOptions.strict).toBe(true);
  expect(node.compilerOptions.strict).toBe(true);
  expect([...tests.files, ...node.files].map((f) => path.basename(f)).sort()).toEqual(['global-setup.ts', 'hello.test.ts', 'scripted-model.ts', 'vitest.config.ts']);

  // The Worker's own check: every .d.ts it reaches (ours, hono's, valibot's, the Workers types).
  expectSuccess(await run('npx', ['tsc', '--noEmit'], app, 120_000), 'tsc --noEmit');
  // The template's script checks all three.
  const scripts = (JSON.parse(readFileSync(path.join(app, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  expect(scripts['typecheck']).toBe('tsc --noEmit && tsc --noEmit -p test && tsc --noEmit -p tsconfig.node.json');
  expectSuccess(await run('npm', ['run', 'typecheck'], app, 240_000), 'npm run typecheck');

  // The tests' and the Node side's configs skip declaration files for one third-party package each,
  // which their comments name; with every .d.ts checked, the errors are inside that package only
  // (none in the project, in this package's declarations, or from a Workers/Node globals clash).
  for (const [project, broken] of [['test', 'tinybench'], ['tsconfig.node.json', 'miniflare']] as const) {
    const configFile = project === 'test' ? 'test/tsconfig.json' : project;
    expect(readFileSync(path.join(app, configFile), 'utf8')).toContain(broken);
    const checked = await run('npx', ['tsc', '-p', project, '--noEmit', '--skipLibCheck', 'false', '--pretty', 'false'], app, 120_000);
    const errors = checked.output.split('\n').filter((line) => /\berror TS\d+/.test(line));
    const files = [...new Set(errors.map((line) => /^([^\s(]+)\(\d+,\d+\): error/.exec(line)?.[1] ?? line))];
    expect(files.filter((file) => !file.startsWith(`node_modules/${broken}/`))).toEqual([]);
  }
}, 600_000);
