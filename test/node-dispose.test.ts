/**
 * `await using flue = await start(…)` outside the test transformer: a plain Node process runs a
 * script whose `await using` esbuild lowered (what `flue run` and the Node server bundle do on
 * Node 22, which lacks the syntax), and the raw syntax where the Node running it supports it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const NODE_BIN = existsSync(path.join(REPO, 'node_modules/.bin/node')) ? path.join(REPO, 'node_modules/.bin/node') : process.execPath;
const dir = mkdtempSync(path.join(tmpdir(), 'flue-dispose-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// A second start() succeeds only if leaving the block disposed (stopped) the first runtime.
const SCRIPT = `
import { start, sqlite } from ${JSON.stringify(pathToFileURL(path.join(REPO, 'src/node/index.ts')).href)};
function Plain() { return 'Plain.'; }
const options = { agents: [Plain], db: sqlite(), providers: [], env: {} };
{
  await using flue = await start(options);
  console.log('inside', typeof flue[Symbol.asyncDispose]);
}
const again = await start(options);
await again.stop();
console.log('disposed');
`;

function run(file: string) {
  return spawnSync(NODE_BIN, ['--no-warnings', '--conditions=flue-source', file], { encoding: 'utf8', cwd: REPO });
}

describe('await using start()', () => {
  it('disposes the runtime when the block ends, with the syntax lowered by esbuild for Node 22', async () => {
    const lowered = await esbuild.transform(SCRIPT, { format: 'esm', target: 'node22', loader: 'js' });
    expect(lowered.code).not.toMatch(/await using/);
    const file = path.join(dir, 'lowered.mjs');
    writeFileSync(file, lowered.code);
    const result = run(file);
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe('inside function\ndisposed\n');
  });

  it('runs the raw syntax on Node 24 and later; Node 22 rejects it at parse time', () => {
    const file = path.join(dir, 'raw.mjs');
    writeFileSync(file, SCRIPT);
    const result = run(file);
    const version = spawnSync(NODE_BIN, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout.trim();
    if (Number(version.split('.')[0]) >= 24) expect(result.stdout).toBe('inside function\ndisposed\n');
    else expect(result.stderr).toContain('SyntaxError');
  });
});
