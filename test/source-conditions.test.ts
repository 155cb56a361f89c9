import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));

it('tests import the TypeScript sources of @flue/runtime, not dist/', async () => {
  expect(import.meta.resolve('@flue/runtime')).toMatch(/\/src\/runtime\/index\.ts$/);
  expect(import.meta.resolve('@flue/runtime/node')).toMatch(/\/src\/node\/index\.ts$/);
});

it('processes spawned by tests resolve the sources too; plain Node resolves the build', () => {
  const probe = "console.log(import.meta.resolve('@flue/runtime/node'))";
  const spawned = spawnSync(process.execPath, ['--input-type=module', '-e', probe], { cwd: root, encoding: 'utf8' });
  expect(spawned.stdout.trim()).toMatch(/\/src\/node\/index\.ts$/);
  const plain = spawnSync(process.execPath, ['--input-type=module', '-e', probe], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  expect(plain.stdout.trim()).toMatch(/\/dist\/node\.js$/);
});

it('the built dist/ runs the Node example end to end (what `npm run example` and users load)', async () => {
  const { buildDist, isStale } = await import('../scripts/build-dist.mjs');
  if (isStale()) await buildDist();
  const run = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', 'examples/node/order-assistant.ts'], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '', ANTHROPIC_API_KEY: '' },
    timeout: 60_000,
  });
  expect(run.stderr).toContain('[tool] lookup_order({"orderId":"7"})');
  expect(run.stdout.trim().split('\n').at(-1)).toBe('Order 7 has shipped and should arrive on 2026-12-02.');
  expect(run.status).toBe(0);
}, 90_000);
