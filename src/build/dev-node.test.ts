/**
 * `flue dev --target node`: builds and runs dist/server.mjs, prints its URL, serves the offline
 * model without a provider key (the template's agent calls its own tool on `/tool …`), names the
 * app's own errors with their src/ line, rebuilds and restarts it on an edit (keeping the running
 * server when a rebuild fails, and marking its responses with the build error), and on SIGINT
 * stops it and exits 130.
 */
import { afterAll, expect, it } from 'vitest';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { packageRoot } from './package-root.ts';
import { writeFiles } from './test-project.ts';
import { freePort } from '../../test/support/wrangler-dev.ts';

const dir = mkdtempSync(path.join(os.tmpdir(), 'flue-dev-node-test-'));
let child: ChildProcess | undefined;
afterAll(() => {
  if (child !== undefined && child.exitCode === null) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

async function get(url: string): Promise<string | undefined> {
  try {
    return await (await fetch(url, { signal: AbortSignal.timeout(5_000) })).text();
  } catch {
    return undefined;
  }
}

async function post(url: string, body: string): Promise<string> {
  return await (await fetch(url, { method: 'POST', body, signal: AbortSignal.timeout(20_000) })).text();
}

// POST: one message to the template's Hello agent, answered with its reply.
const APP = `import { init } from '@flue/runtime';
import { Hello } from './agents/hello.ts';
export default {
  async fetch(request: Request) {
    if (new URL(request.url).pathname === '/boom') throw new TypeError('the app failed');
    if (request.method !== 'POST') return new Response(\`version one \${process.env.FLUE_DEV}\`);
    const hello = init(Hello, { id: 'alice' });
    return new Response((await hello.read(await hello.dispatch(await request.text()))).text);
  },
};
`;

it('flue dev --target node serves, runs tools offline, names src/ in errors, restarts on change, keeps the server on a bad edit (and says so in a header), exits 130 on SIGINT', async () => {
  writeFiles(dir, {
    'package.json': '{ "name": "dev-node", "private": true, "type": "module" }\n',
    'src/agents/helper.ts': "'use agent';\nexport function Helper() { return 'Help.'; }\n",
    'src/agents/hello.ts': readFileSync(path.join(packageRoot(), 'templates/cloudflare/src/agents/hello.ts'), 'utf8'),
    'src/app.ts': APP,
  });
  symlinkSync(path.join(packageRoot(), 'node_modules'), path.join(dir, 'node_modules'));
  const port = await freePort();
  const bin = path.join(packageRoot(), 'node_modules/.bin/node');
  let stdout = '';
  let stderr = '';
  child = spawn(
    existsSync(bin) ? bin : process.execPath,
    ['--conditions=flue-source', path.join(packageRoot(), 'bin/flue.js'), 'dev', '--target', 'node', '--port', String(port)],
    {
      cwd: dir,
      // node_modules is a link to this checkout's: keep the dev database inside the project.
      // No provider key: the offline model.
      env: {
        ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !/_(?:API_KEY|OAUTH_TOKEN)$/.test(name))),
        HOST: '127.0.0.1',
        FLUE_DB: path.join(dir, '.flue', 'dev.db'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  child.stdout!.on('data', (d: Buffer) => void (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => void (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child!.on('exit', (code) => resolve(code)));

  const url = `http://127.0.0.1:${port}`;
  await until(`the URL on stdout (stderr so far:\n${stderr})`, () => (stdout.includes(url) ? true : undefined));
  expect(stdout).toBe(`${url}\n`);
  expect(await get(`${url}/`)).toBe('version one 1'); // dev mode on
  expect(existsSync(path.join(dir, '.flue/dev.db'))).toBe(true);

  expect(stderr).toContain('[flue] Model: scripted, offline. It echoes your message; send `/tool <tool_name> {"argument":"value"}`');
  expect(await post(`${url}/`, '/tool current_time {"timeZone":"Asia/Tokyo"}')).toMatch(
    /^\(scripted model\) current_time returned: \{"timeZone":"Asia\/Tokyo","now":"[^"]+"\}$/,
  );
  expect(await post(`${url}/`, 'Hi')).toBe('(scripted model) You said: Hi');

  // Dev mode: the envelope of the app's own error names it and its line in src/.
  const boom = await fetch(`${url}/boom`);
  expect(boom.status).toBe(500);
  const envelope = ((await boom.json()) as { error: { type: string; dev: string } }).error;
  expect(envelope.type).toBe('internal_error');
  expect(envelope.dev).toMatch(/^TypeError: the app failed \(at src\/app\.ts:5:58\)\n/);

  const appFile = path.join(dir, 'src/app.ts');
  writeFileSync(appFile, readFileSync(appFile, 'utf8').replace('version one', 'version two'));
  await until('the restarted server', async () => ((await get(`${url}/`))?.startsWith('version two') ? true : undefined));
  expect(stderr).toContain('[flue] Rebuilt; restarting the server');

  // An atomic save (temporary file renamed over the original), then an in-place edit of it.
  writeFileSync(`${appFile}.tmp`, readFileSync(appFile, 'utf8').replace('version two', 'version three'));
  renameSync(`${appFile}.tmp`, appFile);
  await until('the atomically saved server', async () => ((await get(`${url}/`))?.startsWith('version three') ? true : undefined));
  writeFileSync(appFile, readFileSync(appFile, 'utf8').replace('version three', 'version two'));
  await until('the server edited after the atomic save', async () =>
    (await get(`${url}/`))?.startsWith('version two') ? true : undefined,
  );

  // A definition error at module load: the [flue] line names the source line; the server stays.
  writeFileSync(
    path.join(dir, 'src/agents/helper.ts'),
    "'use agent';\nimport { useModel } from '@flue/runtime';\nuseModel('anthropic/claude-haiku-4-5');\nexport function Helper() { return 'Help.'; }\n",
  );
  await until('the definition error', () =>
    stderr.includes('[flue] src/agents/helper.ts:3:1: AgentDefinitionError: useModel() was called outside') &&
    stderr.split('AgentDefinitionError')[1]?.includes('[flue] Keeping the running server.')
      ? true
      : undefined,
  );
  const kept = await fetch(`${url}/`);
  expect(await kept.text()).toBe('version two 1');
  expect(kept.headers.get('x-flue-build-error')).toMatch(/^\[flue\] src\/agents\/helper\.ts:3:1: AgentDefinitionError: /);

  writeFileSync(appFile, 'export default {{ broken');
  // The second time the server is kept (the first was the definition error).
  await until('the rebuild error', () => (stderr.split('[flue] Keeping the running server.').length === 3 ? true : undefined));
  const stale = await fetch(`${url}/`);
  expect(await stale.text()).toBe('version two 1');
  // The running server is the last good build, and its responses say why.
  expect(stale.headers.get('x-flue-build-error')).toMatch(/^\[flue\] .*src\/app\.ts:1:/);

  child.kill('SIGINT');
  expect(await exited).toBe(130);
  expect(await get(`${url}/`)).toBeUndefined();
}, 120_000);
