/**
 * `flue dev` end to end: wrangler dev on the generated config, live reload of body edits and
 * atomic saves, rebuild and definition errors keeping the last good build (and saying so in a
 * response header), restart on config changes, the user's own errors named with their src/
 * location, SIGINT → 130.
 *
 * The project lives under the OS temp dir with a node_modules symlink to this checkout: wrangler
 * dev ignores file changes under any `node_modules` path, so node_modules/.cache would hide them.
 */
import { afterAll, expect, it } from 'vitest';
import { type ChildProcess, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { packageRoot } from './package-root.ts';
import { offlineEnv } from './test-project.ts';

const dir = mkdtempSync(path.join(os.tmpdir(), 'flue-dev-test-'));
let child: ChildProcess | undefined;
afterAll(() => {
  if (child !== undefined && child.exitCode === null) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function get(url: string): Promise<string | undefined> {
  return (await getWithHeaders(url))?.body;
}

async function getWithHeaders(url: string): Promise<{ body: string; headers: Headers } | undefined> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    return { body: await res.text(), headers: res.headers };
  } catch {
    return undefined;
  }
}

it('flue dev builds, serves, reloads, survives a bad edit (and says so in a header), restarts on config change, names src/ in errors, exits 130 on SIGINT', async () => {
  cpSync(path.join(packageRoot(), 'templates', 'cloudflare'), dir, { recursive: true });
  symlinkSync(path.join(packageRoot(), 'node_modules'), path.join(dir, 'node_modules'));
  const port = await freePort();
  let stdout = '';
  let stderr = '';
  // --real-model: without it, a project with no provider key is served by the scripted model
  // (test/e2e/flue-init.test.ts covers that default); here the real provider path is under test.
  child = spawn(process.execPath, [path.join(packageRoot(), 'bin/flue.js'), 'dev', '--port', String(port), '--real-model'], {
    cwd: dir,
    env: offlineEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d: Buffer) => void (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => void (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child!.on('exit', (code) => resolve(code)));

  const url = `http://127.0.0.1:${port}`;
  // The first build and wrangler's start: past 30 s once on 2 cores shared with the suite's tsc runs.
  await until('the URL on stdout', () => (stdout.includes(url) ? true : undefined), 60_000).catch((error: Error) => {
    throw new Error(`${error.message}; flue dev's stderr so far:\n${stderr.slice(-3000)}`);
  });
  expect(stdout).toBe(`${url}\n`);
  const first = await until('GET /', () => getWithHeaders(`${url}/`));
  expect(first.body).toContain('Flue is running.');
  expect(first.headers.get('x-flue-build-error')).toBeNull();
  // Dev mode reaches the Worker as a var.
  expect(stderr).toMatch(/FLUE_DEV/);
  expect(stderr).toContain('[flue] Model: real (--real-model), but no provider key is set: put ANTHROPIC_API_KEY=… in .dev.vars.\n');

  // A newcomer without ANTHROPIC_API_KEY: the failed run names the variable to set.
  const sent = await fetch(`${url}/hello/first`, { method: 'POST', body: 'hi', signal: AbortSignal.timeout(20_000) });
  expect(sent.status).toBe(502);
  expect(((await sent.json()) as { error: string }).error).toContain(
    "Provider is not configured: anthropic. Set ANTHROPIC_API_KEY (in .dev.vars for flue dev, or the Worker's secrets",
  );

  // A body edit: incremental rebuild, wrangler reloads the new bundle.
  const appFile = path.join(dir, 'src/app.ts');
  writeFileSync(appFile, readFileSync(appFile, 'utf8').replace('Flue is running.', 'Flue was edited.'));
  await until('the edited response', async () => ((await get(`${url}/`))?.includes('Flue was edited.') ? true : undefined));
  expect(stderr).toContain('[flue] Bundling dist/worker.js (incremental)');

  // An atomic save (temporary file renamed over the original), then an in-place edit of the same
  // file: both reload.
  writeFileSync(`${appFile}.tmp`, readFileSync(appFile, 'utf8').replace('Flue was edited.', 'Flue was saved atomically.'));
  renameSync(`${appFile}.tmp`, appFile);
  await until('the atomically saved response', async () =>
    (await get(`${url}/`))?.includes('Flue was saved atomically.') ? true : undefined,
  );
  writeFileSync(appFile, readFileSync(appFile, 'utf8').replace('Flue was saved atomically.', 'Flue was edited.'));
  await until('the response edited after the atomic save', async () =>
    (await get(`${url}/`))?.includes('Flue was edited.') ? true : undefined,
  );

  // A definition error at module load: one [flue] line naming the source line, the last good build
  // stays live, and wrangler never loads the broken bundle.
  const helloFile = path.join(dir, 'src/agents/hello.ts');
  const hello = readFileSync(helloFile, 'utf8');
  writeFileSync(helloFile, `${hello}useModel('anthropic/claude-haiku-4-5');\n`);
  const line = hello.split('\n').length;
  await until('the definition error', () =>
    stderr.includes(`[flue] src/agents/hello.ts:${line}:1: AgentDefinitionError: useModel() was called outside`) ? true : undefined,
  );
  await until('the keep line', () =>
    stderr.split('AgentDefinitionError')[1]?.includes('[flue] Keeping the last good build.') ? true : undefined,
  );
  expect(await get(`${url}/`)).toContain('Flue was edited.');
  writeFileSync(helloFile, hello);

  // A new agent without its migration: the error is printed, the last good build stays live, and
  // its responses carry the build error. (The agent's render throws: see the end of the test.)
  writeFileSync(
    path.join(dir, 'src/agents/support.ts'),
    "'use agent';\nimport { useModel } from '@flue/runtime';\nexport function Support() {\n  useModel('anthropic/claude-haiku-4-5');\n  throw new TypeError('the support desk is closed');\n}\n",
  );
  const migrationError = '"FlueSupportAgent" (agent "Support") is not introduced by the migrations in wrangler.jsonc';
  await until('the migration error', () =>
    stderr.split(migrationError)[1]?.includes('[flue] Keeping the last good build.') ? true : undefined,
  );
  const stale = await until('GET / on the last good build', () => getWithHeaders(`${url}/`));
  expect(stale.body).toContain('Flue was edited.');
  expect(stale.headers.get('x-flue-build-error')).toMatch(
    /^\[flue\] .*"FlueSupportAgent" \(agent "Support"\) is not introduced by the migrations in wrangler\.jsonc/,
  );

  // The migration lands: the generated config changes, wrangler restarts with the new binding.
  const wranglerFile = path.join(dir, 'wrangler.jsonc');
  writeFileSync(
    wranglerFile,
    readFileSync(wranglerFile, 'utf8').replace(
      '{ "tag": "v1", "new_sqlite_classes": ["FlueHelloAgent"] }',
      '{ "tag": "v1", "new_sqlite_classes": ["FlueHelloAgent"] },\n    { "tag": "v2", "new_sqlite_classes": ["FlueSupportAgent"] }',
    ),
  );
  await until('the restart', () => (stderr.includes('[flue] .flue.wrangler.json changed; restarting wrangler dev') ? true : undefined));
  await until('the restarted server', () => (stderr.split('restarting wrangler dev')[1]?.includes('Ready on') ? true : undefined));
  expect(stderr).toMatch(/env\.FLUE_SUPPORT_AGENT \(FlueSupportAgent\)\s+Durable Object/);
  const restarted = await until('GET / after restart', () => getWithHeaders(`${url}/`));
  expect(restarted.body).toContain('Flue was edited.');
  expect(restarted.headers.get('x-flue-build-error')).toBeNull();
  expect(JSON.parse(readFileSync(path.join(dir, '.flue.wrangler.json'), 'utf8')).durable_objects.bindings).toHaveLength(2);

  // The user's own error: the route's reply and the terminal name it and its line in src/.
  writeFileSync(
    appFile,
    readFileSync(appFile, 'utf8')
      .replace(
        "import { Hello } from './agents/hello.ts';",
        "import { Hello } from './agents/hello.ts';\nimport { Support } from './agents/support.ts';",
      )
      .replace(
        'export default app;',
        "app.post('/support/:id', async (c) => {\n  const support = init(Support, { id: c.req.param('id') });\n  const receipt = await support.dispatch('help');\n" +
          '  try {\n    return c.json({ reply: (await support.read(receipt)).text });\n  } catch (error) {\n    return c.json({ error: (error as Error).message }, 502);\n  }\n});\n\nexport default app;',
      ),
  );
  const failed = await until('the support route', async () => {
    const res = await fetch(`${url}/support/s1`, { method: 'POST', signal: AbortSignal.timeout(20_000) }).catch(() => undefined);
    return res?.status === 502 ? ((await res.json()) as { error: string }) : undefined;
  });
  expect(failed.error).toMatch(/^Submission "sub_\w+" failed: TypeError: the support desk is closed \(at src\/agents\/support\.ts:5:9\)$/);
  await until('the mapped stack in the terminal', () =>
    /at Support \(\S*\/src\/agents\/support\.ts:5:9\)/.test(stderr) ? true : undefined,
  );

  expect(stderr).not.toMatch(/no such Durable Object class|no such named entrypoint|problem with the workerd binary/);
  child.kill('SIGINT');
  expect(await exited).toBe(130);
  expect(await get(`${url}/`)).toBeUndefined();
}, 120_000);
