/**
 * Node host: virtualSandbox() files live in the `start({ db })` store like on Cloudflare (one
 * store abstraction, sql-sandbox-files.ts), so they survive messages and a restart on the same
 * sqlite file. And the packaged-skill overlay serves skill files to the sandbox tools.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { defineSkill, init, useModel, useSandbox, useSkill, virtualSandbox } from '@flue/runtime';
import { sqlite } from '@flue/runtime/node';
import { useScriptedRuntime } from './support/scripted-runtime.ts';

const ctx = useScriptedRuntime();

const files = virtualSandbox({ files: { 'seed.txt': 'seeded' } });

const guide = defineSkill({
  name: 'house-style',
  description: 'Write in the house style.',
  instructions: 'Follow ref/style.md.',
  files: { 'ref/style.md': 'Short sentences.\n' },
});

function Keeper() {
  useModel('anthropic/claude-haiku-4-5');
  useSandbox(files, { cwd: '/workspace' });
  useSkill(guide);
  return 'Keep files.';
}

const toolResults = (index: number) => ctx.server.requests[index]!.messages.filter((m) => m.role === 'tool');

test('files written in one message are read in the next, and after a restart on the same sqlite file', async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'flue-vsb-')), 'flue.db');
  await ctx.start([Keeper], { db: sqlite(path) });
  ctx.server.script(
    {
      toolCalls: [
        { name: 'write', arguments: { path: 'kept.txt', content: 'v1' } },
        { name: 'write', arguments: { path: 'seed.txt', content: 'changed' } },
      ],
    },
    { text: 'written' },
    { toolCalls: [{ name: 'read', arguments: { path: 'kept.txt' } }] },
    { text: 'read' },
  );
  const handle = init(Keeper, { id: 'keeper-1' });
  await handle.read(await handle.dispatch('write'));
  await handle.read(await handle.dispatch('read'));
  expect(toolResults(3).at(-1)!.content).toBe('v1');

  await ctx.flue!.stop();
  ctx.server.reset();
  await ctx.start([Keeper], { db: sqlite(path) });
  ctx.server.script({ toolCalls: [{ name: 'bash', arguments: { command: 'cat kept.txt seed.txt' } }] }, { text: 'ok' });
  const again = init(Keeper, { id: 'keeper-1' });
  await again.read(await again.dispatch('after the restart'));
  expect(toolResults(1).at(-1)!.content).toBe('v1changed');
});

test('the sandbox tools read packaged skill files through the overlay; read-only, invisible to the shell', async () => {
  await ctx.start([Keeper]);
  ctx.server.script(
    { toolCalls: [{ name: 'activate_skill', arguments: { name: 'house-style' } }] },
    (request) => {
      const listing = request.messages.filter((m) => m.role === 'tool').at(-1)!.content;
      const path = /\/\.flue\/packaged-skills\/\S+\/ref\/style\.md/.exec(listing)![0];
      return {
        toolCalls: [
          { name: 'read', arguments: { path } },
          { name: 'write', arguments: { path, content: 'x' } },
          { name: 'bash', arguments: { command: `cat '${path}'` } },
        ],
      };
    },
    { text: 'ok' },
  );
  const handle = init(Keeper, { id: 'keeper-skills' });
  await handle.read(await handle.dispatch('style'));
  const [read, write, bash] = toolResults(2).slice(-3);
  expect(read!.content).toBe('Short sentences.');
  expect(write!.isError).toBe(true);
  expect(write!.content).toContain('[flue] Packaged skill files are read-only: /.flue/packaged-skills/');
  expect(bash!.content).toContain('No such file or directory');
});
