/**
 * `flue build --target node` through the CLI: what it writes, how the target is chosen, and the
 * mistakes it reports before writing anything. Serving and recovery are covered end to end in
 * test/e2e/node-server.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { build } from './build.ts';
import { main } from './cli.ts';
import { packageRoot } from './package-root.ts';
import { removeDir, tempProject, wranglerJsonc } from './test-project.ts';

const dirs: string[] = [];
// The builds bundle the package's dist/ (see the test on it below): it must be today's.
beforeAll(async () => {
  const { buildDist, isStale } = await import('../../scripts/build-dist.mjs');
  if (isStale()) await buildDist();
}, 120_000);
afterAll(() => dirs.forEach(removeDir));
function project(files: Record<string, string>): string {
  const dir = tempProject('node-build', files);
  dirs.push(dir);
  return dir;
}

async function cli(argv: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await main(argv, { cwd, stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

const AGENT =
  "'use agent';\nimport { useModel } from '@flue/runtime';\nexport function Helper() {\n  useModel('anthropic/claude-haiku-4-5');\n  return 'Help.';\n}\n";
const APP = "export default { fetch: () => new Response('ok') };\n";

describe('flue build --target node', () => {
  it('writes dist/server.mjs and a manifest naming the agents, db.ts, schedules.ts and the crons of app.ts scheduled()', async () => {
    const dir = project({
      'src/agents/helper.ts': AGENT,
      'src/app.ts': APP,
      'src/db.ts': "import { sqlite } from '@flue/runtime/node';\nexport default sqlite('./data/app.db');\n",
      'src/schedules.ts': "export default { '*/5 * * * *': () => {} };\n",
      // JSONC, as wrangler reads it: the crons fire app.ts's scheduled() on Node too.
      'wrangler.jsonc': '{\n  // cron triggers\n  "name": "helper",\n  "triggers": { "crons": ["0 9 * * *", "*/15 * * * *"] },\n}\n',
    });
    const r = await cli(['build', '--target', 'node', '--json'], dir);
    expect(r.stderr).toContain('[flue] Found 1 agent: Helper (src/agents/helper.ts)');
    expect(r.code).toBe(0);
    const manifest = {
      target: 'node',
      agents: [{ identity: 'Helper', exportName: 'Helper', file: 'src/agents/helper.ts' }],
      db: 'src/db.ts',
      schedules: 'src/schedules.ts',
      crons: ['0 9 * * *', '*/15 * * * *'],
    };
    expect(JSON.parse(r.stdout)).toEqual(manifest);
    expect(JSON.parse(readFileSync(path.join(dir, 'dist/flue-manifest.json'), 'utf8'))).toEqual(manifest);
    expect(existsSync(path.join(dir, 'dist/server.mjs'))).toBe(true);
    expect(existsSync(path.join(dir, '.flue.wrangler.json'))).toBe(false);
    const entry = readFileSync(path.join(dir, 'dist/server.entry.generated.mjs'), 'utf8');
    expect(entry).toContain(
      "await runFlueServer({ app: userApp, agents, db: userDb, schedules: userSchedules, crons: ['0 9 * * *', '*/15 * * * *'] });",
    );
  });

  it('takes the target from flue.config.ts; --target overrides it; an unknown target is a usage error', async () => {
    const dir = project({ 'src/agents/helper.ts': AGENT, 'src/app.ts': APP, 'flue.config.ts': "export default { target: 'node' };\n" });
    expect((await cli(['build'], dir)).code).toBe(0);
    expect(existsSync(path.join(dir, 'dist/server.mjs'))).toBe(true);
    expect(existsSync(path.join(dir, 'dist/worker.js'))).toBe(false);

    expect(await cli(['build', '--target', 'lambda'], dir)).toEqual({
      code: 1,
      stdout: '',
      stderr: 'flue: --target must be one of cloudflare, node; got "lambda".\nRun `flue build --help` for usage.\n',
    });
    expect((await cli(['deploy', '--dry-run'], dir)).stderr).toContain(
      "flue: `flue deploy` deploys a Cloudflare Worker, but flue.config sets target 'node'.",
    );
    const bad = project({ 'src/app.ts': APP, 'flue.config.ts': "export default { target: 'lambda' };\n" });
    expect((await cli(['build'], bad)).stderr).toContain('"target" must be one of "cloudflare", "node"; got "lambda"');
  });

  it('fails without writing when there is no agent or a module imports cloudflare:*', async () => {
    const none = project({ 'src/app.ts': APP });
    const r = await cli(['build', '--target', 'node'], none);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("[flue] The Node server found no agents. Mark at least one module under src/ with 'use agent'");
    expect(existsSync(path.join(none, 'dist'))).toBe(false);

    const cf = project({
      'src/agents/helper.ts': AGENT,
      'src/app.ts': "import { env } from 'cloudflare:workers';\nexport default { fetch: () => new Response(String(env)) };\n",
    });
    const c = await cli(['build', '--target', 'node'], cf);
    expect(c.code).toBe(1);
    expect(c.stderr).toContain(
      '[flue] The Node server imports "cloudflare:workers", which exists only on Cloudflare Workers. Import chain:\n  dist/server.entry.generated.mjs\n  → src/app.ts\n  → cloudflare:workers\n',
    );
    expect(existsSync(path.join(cf, 'dist'))).toBe(false);
  });

  it("bundles the package's built dist/, never its sources: an installed package ships no src/", async () => {
    const dir = project({
      'src/agents/helper.ts': AGENT,
      'src/app.ts': APP,
      'wrangler.jsonc': wranglerJsonc(['FlueHelperAgent']),
    });
    // This test process resolves with the `flue-source` condition (test/support/source-conditions.ts);
    // a user's `flue` does not: run the command as a user's shell would.
    const env = { ...process.env, NODE_OPTIONS: (process.env.NODE_OPTIONS ?? '').replace(/--conditions=flue-source/g, '').trim() };
    for (const argv of [['build', '--target', 'node'], ['build']]) {
      const result = spawnSync(process.execPath, [path.join(packageRoot(), 'bin/flue.js'), ...argv], { cwd: dir, env, encoding: 'utf8' });
      expect(result.status, result.stderr).toBe(0);
    }
    // Every file of this package in the bundles, by their source maps: the built JavaScript only.
    const own = path.join(packageRoot(), path.sep);
    for (const map of ['dist/server.mjs.map', 'dist/worker.js.map']) {
      const { sources } = JSON.parse(readFileSync(path.join(dir, map), 'utf8')) as { sources: string[] };
      const files = sources
        .map((source) => path.resolve(dir, 'dist', source))
        .filter((file) => file.startsWith(own) && !file.startsWith(path.join(own, 'node_modules')) && !file.endsWith('.generated.mjs'))
        .map((file) => file.slice(own.length));
      expect(files.length, map).toBeGreaterThan(0);
      expect(
        files.filter((file) => !/^dist\/.+\.js$/.test(file)),
        map,
      ).toEqual([]);
    }
  });

  it('the built server refuses a Node older than 22.19 with a message that names the version and the fix', async () => {
    const dir = project({ 'src/agents/helper.ts': AGENT, 'src/app.ts': APP });
    expect((await cli(['build', '--target', 'node'], dir)).code).toBe(0);
    // The machine's own Node may be older than the project's: the server names that, where it
    // died deep in the store before (node:sqlite is not there to load).
    const olderNode =
      "Object.defineProperty(process, 'versions', { value: { ...process.versions, node: '20.20.2' } });" +
      "Object.defineProperty(process, 'version', { value: 'v20.20.2' });";
    const run = spawnSync(
      process.execPath,
      ['--import', `data:text/javascript,${encodeURIComponent(olderNode)}`, path.join(dir, 'dist/server.mjs')],
      { cwd: dir, encoding: 'utf8', env: { ...process.env, PORT: '0' }, timeout: 10_000 },
    );
    expect(run.status).toBe(1);
    expect(run.stderr).toBe(
      '[flue] This server needs Node.js 22.19 or newer (this is v20.20.2). In a project made by `flue init`, `npx node dist/server.mjs` runs it with the node@22 the project installs.\n',
    );
  });

  it('a Cloudflare build warns that schedules.ts is for the Node server only', async () => {
    const dir = project({
      'src/agents/helper.ts': AGENT,
      'src/app.ts': APP,
      'src/schedules.ts': "export default { '0 9 * * *': () => {} };\n",
      'wrangler.jsonc': wranglerJsonc(['FlueHelperAgent']),
    });
    const result = await build({ root: dir });
    expect(result.warnings).toEqual([
      'src/schedules.ts is loaded by the Node server only; on Cloudflare declare "triggers": { "crons": [...] } in wrangler.jsonc and handle them in the scheduled() handler of src/cloudflare.ts.',
    ]);
  });
});
