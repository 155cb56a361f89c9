import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startScriptedModelServer, type ScriptedModelServer } from '@flue/runtime/testing';
import { parseCommandArgs } from './cli-args.ts';
import { projectNameFor, targetName } from './cli-init.ts';
import { main } from './cli.ts';
import { packageRoot, packageVersion } from './package-root.ts';
import { removeDir, tempProject, wranglerJsonc } from './test-project.ts';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));
function project(files: Record<string, string> = {}): string {
  const dir = tempProject('cli', files);
  dirs.push(dir);
  return dir;
}

async function cli(argv: string[], cwd = process.cwd()): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await main(argv, { cwd, stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

describe('global rules', () => {
  it('--help / -h print usage on stdout and exit 0, globally and per command', async () => {
    for (const argv of [['--help'], ['-h']]) {
      const r = await cli(argv);
      expect(r).toMatchObject({ code: 0, stderr: '' });
      expect(r.stdout).toMatch(/^Usage: flue <command> \[options\]/);
      for (const command of ['init', 'dev', 'build', 'deploy', 'run']) expect(r.stdout).toContain(`  ${command}`);
    }
    for (const command of ['init', 'dev', 'build', 'deploy', 'run']) {
      const r = await cli([command, '--help']);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^Usage: flue ${command}`));
      expect((await cli([command, '-h'])).stdout).toBe(r.stdout);
    }
    expect((await cli(['build', '--help'])).stdout).toContain('--json');
  });

  it('--version / -v print the version on stdout', async () => {
    expect(await cli(['--version'])).toEqual({ code: 0, stdout: `${packageVersion()}\n`, stderr: '' });
    expect(await cli(['-v'])).toEqual({ code: 0, stdout: `${packageVersion()}\n`, stderr: '' });
  });

  it('no command: usage on stderr, exit 1', async () => {
    const r = await cli([]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^Usage: flue/);
  });

  it('usage errors exit 1 with the message and a hint on stderr', async () => {
    const cases: [string[], string][] = [
      [['deploy', '--bogus'], 'flue: Unknown option --bogus.\nRun `flue deploy --help` for usage.\n'],
      [['frobnicate'], 'flue: Unknown command "frobnicate".\nRun `flue --help` for usage.\n'],
      [['--bogus'], 'flue: Unknown option --bogus.\nRun `flue --help` for usage.\n'],
      [['run', 'a.ts', '-m', 'hi', '--id', '1', '--id', '2'], 'flue: --id may only be passed once.\nRun `flue run --help` for usage.\n'],
      [['build', '--minify', '--minify'], 'flue: --minify may only be passed once.\nRun `flue build --help` for usage.\n'],
      [['build', 'extra'], 'flue: Unexpected argument "extra".\nRun `flue build --help` for usage.\n'],
      [['init', 'a', 'b'], 'flue: Unexpected argument "b".\nRun `flue init --help` for usage.\n'],
      [['build', '--', 'x'], 'flue: `flue build` does not accept arguments after --.\nRun `flue build --help` for usage.\n'],
      [['run', 'a.ts', '-m', 'x', '--', 'y'], 'flue: `flue run` does not accept arguments after --.\nRun `flue run --help` for usage.\n'],
      [['build', '--minify=yes'], 'flue: --minify does not take a value.\nRun `flue build --help` for usage.\n'],
      [['run', 'a.ts', '--message'], 'flue: --message requires a value.\nRun `flue run --help` for usage.\n'],
      [['dev', '--port', 'abc'], 'flue: --port must be a port number (1-65535); got "abc".\nRun `flue dev --help` for usage.\n'],
      [
        ['init', '--template', 'nope'],
        'flue: Unknown template "nope". Available templates: cloudflare.\nRun `flue init --help` for usage.\n',
      ],
    ];
    for (const [argv, stderr] of cases) expect(await cli(argv), argv.join(' ')).toEqual({ code: 1, stdout: '', stderr });
  });

  it('flue run usage errors', async () => {
    const hint = 'Run `flue run --help` for usage.\n';
    expect((await cli(['run', 'a.ts'])).stderr).toBe(`flue: \`flue run\` requires --message <text>.\n${hint}`);
    expect((await cli(['run', '-m', 'x'])).stderr).toBe(
      `flue: \`flue run\` requires a module path: flue run <path> --message <text>.\n${hint}`,
    );
    expect((await cli(['run', 'a.ts', '-m', 'x', '--data', '{bad'])).stderr).toBe(
      `flue: --data must be valid JSON, e.g. --data '{"issue": 17307}'.\n${hint}`,
    );
    expect((await cli(['run', 'a.ts', '-m', 'x', '--uid', 'u', '--new'])).stderr).toBe(
      `flue: --uid cannot be combined with --new.\n${hint}`,
    );
    expect((await cli(['run', 'a.ts', '-m', 'x', '--uid', 'u', '--data', '{}'])).stderr).toContain(
      'flue: --uid cannot be combined with --data',
    );
  });

  it('takes string flag values literally and passes arguments after -- through', () => {
    const parsed = parseCommandArgs(
      'run',
      ['a.ts', '--id', '007', '-m', '1e3'],
      { id: { type: 'string' }, message: { type: 'string', short: 'm' } },
      { maxPositionals: 1 },
    );
    expect(parsed.values).toEqual({ id: '007', message: '1e3' });
    const dev = parseCommandArgs(
      'dev',
      ['--port', '08080', '--', '--inspector-port', '0', '--', 'x'],
      { port: { type: 'string' } },
      { maxPositionals: 0, passthrough: true },
    );
    expect(dev).toEqual({ values: { port: '08080' }, positionals: [], passthrough: ['--inspector-port', '0', '--', 'x'] });
  });

  it("a module whose 'use agent' is not its first statement fails the build, exit 1, no migration advice", async () => {
    const dir = project({
      'src/app.ts': "export default { fetch() { return new Response('ok'); } };\n",
      'src/agents/hello.ts':
        "import { useModel } from '@flue/runtime';\n'use agent';\nexport function Hello() { useModel('anthropic/claude-haiku-4-5'); }\n",
      'wrangler.jsonc': wranglerJsonc(['FlueHelloAgent']),
    });
    const r = await cli(['build'], dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      "contains 'use agent', but not as the module's first statement, so Hello would not be registered as an agent.",
    );
    expect(r.stderr).not.toContain('deleted_classes');
    expect(existsSync(path.join(dir, 'dist/worker.js'))).toBe(false);
  });

  it('an agent that vanished while its class is still migrated fails the build, and deleting is offered last', async () => {
    const dir = project({
      'src/app.ts': "export default { fetch() { return new Response('ok'); } };\n",
      // Outside src/agents/ and without the directive: the scan finds no agent at all.
      'src/bots/hello.ts': 'export function Hello() {}\n',
      'wrangler.jsonc': wranglerJsonc(['FlueHelloAgent']),
    });
    const r = await cli(['build'], dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('declare the Durable Object class "FlueHelloAgent" (agent "Hello"), but no agent generates it any more');
    expect(r.stderr).toContain("keep its data by giving it the old identity: NewName.agentName = 'Hello'");
    expect(r.stderr).toContain('This permanently destroys every stored conversation of that agent');
    expect(r.stderr.indexOf("'use agent' must be the very first statement")).toBeLessThan(r.stderr.indexOf('deleted_classes'));
  });

  it('build failures print the [flue] message without a stack and exit 1', async () => {
    const dir = project({ 'wrangler.jsonc': '{}' });
    const r = await cli(['build'], dir);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^\[flue\] No app entry found\./);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});

describe('flue init', () => {
  const TEMPLATE_FILES = [
    '.dev.vars.example',
    '.gitignore',
    'AGENTS.md',
    'README.md',
    'package.json',
    'src/agents/hello.ts',
    'src/app.ts',
    'src/cloudflare.ts',
    'test/global-setup.ts',
    'test/hello.replay.test.ts',
    'test/hello.test.ts',
    'test/recordings/hello.json',
    'test/scripted-model.ts',
    'test/tsconfig.json',
    'tsconfig.json',
    'tsconfig.node.json',
    'vitest.config.ts',
    'wrangler.jsonc',
  ];
  // From a checkout, init packs it into vendor/ (test/e2e/flue-init.test.ts covers that path);
  // these tests name the dependency instead.
  const RUNTIME = ['--runtime', 'npm:flue-workers@^0.2.0'];

  it('derives the project name from the directory', () => {
    expect(projectNameFor('/x/My Cool_App!')).toBe('my-cool-app');
    expect(projectNameFor('/x/--weird--')).toBe('weird');
    expect(projectNameFor('/x/ÆØÅ')).toBe('my-flue-app');
    expect(projectNameFor('/x/agent2go')).toBe('agent2go');
    expect(targetName('_gitignore')).toBe('.gitignore');
    expect(targetName('README.md')).toBe('README.md');
  });

  it('copies the template into a new directory, one written path per line on stdout', async () => {
    const cwd = project();
    const r = await cli(['init', 'Support Desk', ...RUNTIME], cwd);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n').filter(Boolean).sort()).toEqual(TEMPLATE_FILES.map((f) => `Support Desk/${f}`).sort());
    const dir = path.join(cwd, 'Support Desk');
    expect(existsSync(path.join(dir, '_gitignore'))).toBe(false);
    expect(readFileSync(path.join(dir, '.gitignore'), 'utf8')).toContain('.flue.wrangler.json');
    expect(JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'))).toMatchObject({
      name: 'support-desk',
      scripts: { dev: 'flue dev', build: 'flue build', deploy: 'flue deploy', test: 'flue build && vitest run' },
      dependencies: { '@flue/runtime': 'npm:flue-workers@^0.2.0' },
      devDependencies: { node: '22.23.3' },
    });
    const wrangler = readFileSync(path.join(dir, 'wrangler.jsonc'), 'utf8');
    expect(wrangler).toContain('"name": "support-desk"');
    expect(wrangler).toContain('"compatibility_date": "2026-08-01"');
    expect(wrangler).toContain('{ "tag": "v1", "new_sqlite_classes": ["FlueHelloAgent"] }');
    expect(readFileSync(path.join(dir, 'README.md'), 'utf8')).toMatch(/^# support-desk\n/);
    expect(r.stderr).toContain(`${TEMPLATE_FILES.length} files written for "support-desk"`);
    expect(r.stderr).toContain('[flue] Next: cd "Support Desk" && npm install && npm run dev\n');
  });

  it('initializes the current directory by default and keeps existing files unless --force', async () => {
    const cwd = project({ 'README.md': 'mine\n', 'src/app.ts': '// mine\n' });
    const r = await cli(['init', ...RUNTIME], cwd);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n').filter(Boolean).sort()).toEqual(
      TEMPLATE_FILES.filter((f) => f !== 'README.md' && f !== 'src/app.ts').sort(),
    );
    expect(r.stderr).toContain('kept existing README.md\n');
    expect(r.stderr).toContain('kept existing src/app.ts\n');
    expect(readFileSync(path.join(cwd, 'README.md'), 'utf8')).toBe('mine\n');

    const forced = await cli(['init', '.', '--force', '--template', 'cloudflare', ...RUNTIME], cwd);
    expect(forced.code).toBe(0);
    expect(forced.stdout.split('\n').filter(Boolean).sort()).toEqual([...TEMPLATE_FILES].sort());
    expect(forced.stderr).not.toContain('kept existing');
    expect(readFileSync(path.join(cwd, 'src/app.ts'), 'utf8')).toContain("import { Hono } from 'hono';");
  });

  it('refuses a target that is a file', async () => {
    const cwd = project({ taken: 'x' });
    const r = await cli(['init', 'taken', ...RUNTIME], cwd);
    expect(r).toMatchObject({ code: 1, stderr: '[flue] taken exists and is not a directory.\n' });
  });
});

describe('flue dev and flue run: which model', () => {
  it('--scripted and --real-model exclude each other', async () => {
    const r = await cli(['dev', '--scripted', '--real-model']);
    expect(r).toMatchObject({
      code: 1,
      stderr: 'flue: --scripted cannot be combined with --real-model.\nRun `flue dev --help` for usage.\n',
    });
    const run = await cli(['run', 'a.ts', '-m', 'x', '--scripted', '--real-model']);
    expect(run).toMatchObject({
      code: 1,
      stderr: 'flue: --scripted cannot be combined with --real-model.\nRun `flue run --help` for usage.\n',
    });
  });

  it('--help of flue, flue dev and flue run teaches the /tool form of the offline model', async () => {
    for (const argv of [['--help'], ['dev', '--help'], ['run', '--help']]) {
      expect((await cli(argv)).stdout).toContain('/tool <tool_name> {"argument":"value"}');
    }
  });
});

// ── flue run, in a child process against the scripted model server ──────────────────────────────

const AGENT_MODULE = `
import * as v from 'valibot';
import { defineTool, setProvider, useModel, useTool } from '@flue/runtime';
import { scriptedProvider } from '@flue/runtime/testing';

setProvider(scriptedProvider({ baseUrl: process.env.MODEL_URL!, id: 'anthropic', models: ['claude-haiku-4-5'], api: 'anthropic-messages' }));
console.log('user code logging on stdout');

const add = defineTool({
  name: 'add',
  description: 'Adds two numbers.',
  input: v.object({ a: v.number(), b: v.number() }),
  async run({ data }) { return { output: { sum: data.a + data.b } }; },
});

export function Calc() {
  useModel('anthropic/claude-haiku-4-5');
  useTool(add);
  return 'You add numbers. Greeting: ' + (process.env.GREETING ?? 'none') + '. Shell: ' + (process.env.SHELL_WINS ?? 'none') + '.';
}
`;

interface Spawned {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runCli(
  cwd: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  onStderr?: (text: string, child: ChildProcess) => void,
): Promise<Spawned> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(packageRoot(), 'bin/flue.js'), ...args], {
      cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => void (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      onStderr?.(stderr, child);
    });
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('flue run', () => {
  let server: ScriptedModelServer;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let keyless: NodeJS.ProcessEnv;

  beforeAll(async () => {
    server = await startScriptedModelServer();
    dir = project({
      'src/agents/calc.ts': AGENT_MODULE,
      'src/agents/two.ts':
        "export function Alpha() { return 'a'; }\nexport function Beta() { return 'b'; }\nBeta.agentName = 'beta-bot';\nexport function helper() {}\nexport class Gamma {}\n",
      'src/agents/none.ts': 'export const x = 1;\n',
      'src/agents/cf.ts': "import { lib } from '../lib.ts';\nexport function Edge() { return String(lib); }\n",
      'src/lib.ts': "import { env } from 'cloudflare:workers';\nexport const lib = env;\n",
      'src/agents/hello.ts': readFileSync(path.join(packageRoot(), 'templates/cloudflare/src/agents/hello.ts'), 'utf8'),
      // An agent function calling another directly, across modules.
      'src/agents/inner.ts':
        "'use agent';\nimport { useModel } from '@flue/runtime';\nexport function Inner() {\n  useModel('anthropic/claude-haiku-4-5');\n  return 'inner';\n}\n",
      'src/agents/outer.ts':
        "'use agent';\nimport { Inner } from './inner.ts';\nexport function Outer() {\n  Inner();\n  return 'outer';\n}\n",
      '.env': 'GREETING=from-dotenv\nSHELL_WINS=dotenv\n',
    });
    keyless = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/_(?:API_KEY|OAUTH_TOKEN)$/.test(name)));
    // A key, so `flue run` does not serve its offline model: these modules register their own
    // scripted provider (this test's server).
    env = { ...keyless, ANTHROPIC_API_KEY: 'sk-unused', MODEL_URL: server.url, SHELL_WINS: 'shell' };
  });
  afterAll(async () => {
    await server?.close();
  });

  it('streams to stderr, prints the reply on stdout, exit 0; .env loaded with shell winning', async () => {
    server.reset();
    server.script({ text: 'Adding.', toolCalls: [{ name: 'add', arguments: { a: 2, b: 3 } }] }, { text: 'The sum is 5.' });
    const r = await runCli(dir, ['run', 'src/agents/calc.ts', '--message', 'What is 2+3?'], env);
    expect(r.stdout).toBe('Adding.\n\nThe sum is 5.\n');
    expect(r.stderr).toContain('user code logging on stdout');
    expect(r.stderr).toMatch(/\[flue\] New conversation \S+ \(continue it with --id \S+\)/);
    expect(r.stderr).toContain('  → add {"a":2,"b":3}');
    expect(r.stderr).toMatch(/ {2}← add ok/);
    expect(r.stderr).toContain('The sum is 5.');
    expect(r.code).toBe(0);
    expect(server.requests[0]!.system).toContain('Greeting: from-dotenv. Shell: shell.');
  }, 60_000);

  it("offline without a provider key: `/tool <name> {json}` runs the agent's own tool, anything else is echoed", async () => {
    server.reset();
    const r = await runCli(dir, ['run', 'src/agents/hello.ts', '-m', '/tool current_time {"timeZone":"Asia/Tokyo"}'], keyless);
    expect(r.stderr).toContain(
      '[flue] Model: scripted, offline. It echoes your message; send `/tool <tool_name> {"argument":"value"}` to make it call that tool of the agent. ' +
        'For a real model put ANTHROPIC_API_KEY=… in .env or the environment, or pass --real-model.\n',
    );
    expect(r.stderr).toContain('  → current_time {"timeZone":"Asia/Tokyo"}');
    expect(r.stderr).toMatch(/ {2}← current_time ok/);
    expect(r.stdout).toMatch(/^\(scripted model\) current_time returned: \{"timeZone":"Asia\/Tokyo","now":"[^"]+"\}\n$/);
    expect(r.code).toBe(0);

    // --scripted wins over a key; a plain message is echoed.
    const echo = await runCli(dir, ['run', 'src/agents/hello.ts', '-m', 'Hello!', '--scripted'], env);
    expect(echo.stderr).toContain('and drop --scripted, or pass --real-model.');
    expect(echo.stdout).toBe('(scripted model) You said: Hello!\n');
    expect(echo.code).toBe(0);
    // The offline model is the CLI's own server, not this test's.
    expect(server.requests).toHaveLength(0);
  }, 60_000);

  it('--json prints one envelope; --id continues across runs (sqlite under node_modules/.cache/flue)', async () => {
    server.reset();
    server.script({ text: 'First.' }, { text: 'Second.' });
    const first = await runCli(dir, ['run', 'src/agents/calc.ts', '-m', 'one', '--id', 'conv-1', '--json'], env);
    expect(first.code).toBe(0);
    const envelope = JSON.parse(first.stdout);
    expect(envelope).toMatchObject({ id: 'conv-1', agent: 'Calc', outcome: 'completed', message: 'First.' });
    expect(envelope.submissionId).toMatch(/^sub_/);
    expect(typeof envelope.uid).toBe('string');
    expect(first.stdout.trim().split('\n')).toHaveLength(1);
    expect(existsSync(path.join(dir, 'node_modules/.cache/flue/run.db'))).toBe(true);

    const second = await runCli(dir, ['run', 'src/agents/calc.ts', '-m', 'two', '--id', 'conv-1', '--uid', envelope.uid, '--json'], env);
    expect(JSON.parse(second.stdout)).toMatchObject({ id: 'conv-1', outcome: 'completed', message: 'Second.', uid: envelope.uid });
    expect(server.requests[1]!.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);

    const exists = await runCli(dir, ['run', 'src/agents/calc.ts', '-m', 'three', '--id', 'conv-1', '--new', '--json'], env);
    expect(exists.code).toBe(1);
    expect(JSON.parse(exists.stdout)).toMatchObject({ outcome: 'error', error: { message: expect.any(String), type: expect.any(String) } });
  }, 60_000);

  it('a failed run: exit 1 and a failed envelope', async () => {
    server.reset();
    server.script({ status: 400, errorBody: 'scripted refusal' });
    const r = await runCli(dir, ['run', 'src/agents/calc.ts', '-m', 'hi', '--id', 'conv-fail', '--json'], env);
    expect(r.code).toBe(1);
    const envelope = JSON.parse(r.stdout);
    expect(envelope).toMatchObject({ id: 'conv-fail', agent: 'Calc', outcome: 'failed', error: { message: expect.any(String) } });
    expect(envelope.submissionId).toMatch(/^sub_/);
  }, 60_000);

  it('SIGINT aborts the run: exit 130, aborted envelope', async () => {
    server.reset();
    server.script({ text: 'Thinking about it for a long', hangAfterChunks: 3 });
    let sent = false;
    const r = await runCli(dir, ['run', 'src/agents/calc.ts', '-m', 'hi', '--id', 'conv-int', '--json'], env, (stderr, child) => {
      if (!sent && stderr.includes('Thinking')) {
        sent = true;
        child.kill('SIGINT');
      }
    });
    expect(sent).toBe(true);
    expect(r.code).toBe(130);
    expect(JSON.parse(r.stdout)).toMatchObject({ id: 'conv-int', outcome: 'aborted' });
    expect(r.stderr).toContain('[flue] SIGINT: aborting the run');
  }, 60_000);

  it('SIGTERM aborts the run: exit 143', async () => {
    server.reset();
    server.script({ text: 'Working on it for a long', hangAfterChunks: 3 });
    let sent = false;
    const r = await runCli(dir, ['run', 'src/agents/calc.ts', '-m', 'hi', '--id', 'conv-term'], env, (stderr, child) => {
      if (!sent && stderr.includes('Working')) {
        sent = true;
        child.kill('SIGTERM');
      }
    });
    expect(r.code).toBe(143);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('[flue] The run was aborted.');
  }, 60_000);

  it('selects agents by the export-shape rule and --name', async () => {
    const many = await runCli(dir, ['run', 'src/agents/two.ts', '-m', 'x'], env);
    expect(many).toMatchObject({ code: 1, stdout: '' });
    expect(many.stderr).toContain('[flue] src/agents/two.ts defines 2 agents (Alpha, beta-bot). Pick one with --name <agent>.');

    const wrong = await runCli(dir, ['run', 'src/agents/two.ts', '-m', 'x', '--name', 'Gamma', '--json'], env);
    expect(wrong.code).toBe(1);
    expect(JSON.parse(wrong.stdout)).toEqual({
      outcome: 'error',
      error: { message: '[flue] --name "Gamma" does not match an agent of src/agents/two.ts. Agents: Alpha, beta-bot.' },
    });

    const none = await runCli(dir, ['run', 'src/agents/none.ts', '-m', 'x'], env);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('[flue] src/agents/none.ts defines no agent.');
  }, 60_000);

  it('an agent function that calls another directly fails the run with Re-entrant agent render', async () => {
    server.reset();
    const r = await runCli(dir, ['run', 'src/agents/outer.ts', '-m', 'hi', '--json'], env);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({
      outcome: 'failed',
      error: { message: expect.stringContaining('[flue] Re-entrant agent render.') },
    });
    expect(server.requests).toHaveLength(0);
  }, 60_000);

  it('rejects cloudflare:* imports with the import chain', async () => {
    const r = await runCli(dir, ['run', 'src/agents/cf.ts', '-m', 'x'], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      '[flue] src/agents/cf.ts imports "cloudflare:workers", which exists only on Cloudflare Workers. Import chain:\n' +
        '  src/agents/cf.ts\n  → src/lib.ts\n  → cloudflare:workers\nRun it on the Workers runtime with `flue dev`',
    );
  }, 60_000);

  it('uses the default export of src/db.ts as the persistence adapter', async () => {
    const dbDir = project({
      'src/agents/calc.ts': AGENT_MODULE,
      'src/db.ts': "import { sqlite } from '@flue/runtime/node';\nexport default sqlite('./data/custom.db');\n",
    });
    server.reset();
    server.script({ text: 'Stored.' });
    const r = await runCli(dbDir, ['run', 'src/agents/calc.ts', '-m', 'x'], env);
    expect(r.stdout).toBe('Stored.\n');
    expect(r.code).toBe(0);
    expect(existsSync(path.join(dbDir, 'data/custom.db'))).toBe(true);
    expect(existsSync(path.join(dbDir, 'node_modules/.cache/flue/run.db'))).toBe(false);

    writeFileSync(path.join(dbDir, 'src/db.ts'), 'export default 42;\n');
    const bad = await runCli(dbDir, ['run', 'src/agents/calc.ts', '-m', 'x'], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(
      "[flue] src/db.ts must default-export a persistence adapter, e.g. `export default sqlite('./data/flue.db')`.",
    );
  }, 60_000);

  it('--env loads another file; a missing one is an error', async () => {
    writeFileSync(path.join(dir, 'other.env'), 'GREETING=from-other\n');
    server.reset();
    server.script({ text: 'ok' });
    const r = await runCli(dir, ['run', 'src/agents/calc.ts', '-m', 'x', '--env', 'other.env'], env);
    expect(r.code).toBe(0);
    expect(server.requests[0]!.system).toContain('Greeting: from-other');
    const missing = await runCli(dir, ['run', 'src/agents/calc.ts', '-m', 'x', '--env', 'nope.env'], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('[flue] --env file not found: nope.env');
  }, 60_000);
});
