import { expect, test } from 'vitest';
import * as v from 'valibot';
import { defineTool, init, useModel, useSandbox, useTool, virtualSandbox } from '@flue/runtime';
import { useScriptedRuntime } from './support/scripted-runtime.ts';

const ctx = useScriptedRuntime();

// The seed's review_contract tool (Tools seed, "运行时工具"), verbatim.
const Report = v.object({ riskLevel: v.picklist(['low', 'medium', 'high']), summary: v.string() });

export const reviewContract = defineTool({
  name: 'review_contract',
  description: '审查提供的合同并返回结构化风险报告。',
  input: v.object({ contract: v.string() }),
  harness: true,
  async run({ harness, data }) {
    await harness.sandbox.writeFile('contract.md', data.contract);
    const { data: report } = await harness.prompt('审查 contract.md 的非标准条款并评估风险。', { result: Report });
    return { output: report };
  },
});

const workspace = virtualSandbox({ files: { '/workspace/notes.txt': 'line one\nline two\n' }, cwd: '/workspace' });

function Worker() {
  useModel('anthropic/claude-haiku-4-5');
  useSandbox(workspace);
  useTool(reviewContract);
  return 'Work in the workspace.';
}

function Bare() {
  useModel('anthropic/claude-haiku-4-5');
  useTool({
    name: 'peek',
    description: 'Peek at the sandbox.',
    harness: true,
    async run({ harness }) {
      return harness.sandbox.cwd;
    },
  });
  return 'No environment.';
}

test('with useSandbox the model gets the six built-in tools, and they act on the sandbox', async () => {
  await ctx.start([Worker]);
  ctx.server.script(
    {
      toolCalls: [
        { name: 'read', arguments: { path: 'notes.txt' } },
        { name: 'write', arguments: { path: 'out/result.txt', content: 'done' } },
      ],
    },
    { toolCalls: [{ name: 'bash', arguments: { command: 'cat out/result.txt && ls' } }] },
    { text: 'All set.' },
  );
  const handle = init(Worker, { id: 'sb-1' });
  const reply = await handle.read(await handle.dispatch('Read the notes and write a result.'));
  expect(reply.text).toBe('All set.');
  expect(ctx.server.requests[0]!.tools.map((t) => t.name).sort()).toEqual([
    'bash',
    'edit',
    'glob',
    'grep',
    'read',
    'review_contract',
    'task',
    'write',
  ]);
  const results = ctx.server.requests[1]!.messages.filter((m) => m.role === 'tool');
  expect(results[0]!.content).toContain('line one');
  expect(results[1]!.content).toBe('Successfully wrote 4 bytes to out/result.txt');
  const bash = ctx.server.requests[2]!.messages.filter((m) => m.role === 'tool').at(-1)!;
  expect(bash.content).toContain('done');
  expect(bash.content).toContain('notes.txt');
});

test("the seed's review_contract writes into the sandbox through harness.sandbox and returns a structured report", async () => {
  await ctx.start([Worker]);
  ctx.server.script(
    { toolCalls: [{ name: 'review_contract', arguments: { contract: 'Clause 9: unlimited liability.' } }] },
    { toolCalls: [{ name: 'read', arguments: { path: 'contract.md' } }] },
    { toolCalls: [{ name: 'finish', arguments: { riskLevel: 'high', summary: 'Unlimited liability.' } }] },
    { text: 'High risk.' },
  );
  const handle = init(Worker, { id: 'sb-2' });
  const reply = await handle.read(await handle.dispatch('Review this contract.'));
  expect(reply.text).toBe('High risk.');
  // The scratch conversation read the file the tool wrote.
  const scratchRead = ctx.server.requests[2]!.messages.filter((m) => m.role === 'tool').at(-1)!;
  expect(scratchRead.content).toContain('Clause 9: unlimited liability.');
  const result = ctx.server.requests[3]!.messages.filter((m) => m.role === 'tool').at(-1)!;
  expect(JSON.parse(result.content)).toEqual({ riskLevel: 'high', summary: 'Unlimited liability.' });
});

test('without useSandbox there are no built-in tools and harness.sandbox throws', async () => {
  await ctx.start([Bare]);
  ctx.server.script({ toolCalls: [{ name: 'peek', arguments: {} }] }, { text: 'ok' });
  const handle = init(Bare, { id: 'sb-3' });
  await handle.read(await handle.dispatch('peek'));
  expect(ctx.server.requests[0]!.tools.map((t) => t.name)).toEqual(['task', 'peek']);
  const result = ctx.server.requests[1]!.messages.filter((m) => m.role === 'tool').at(-1)!;
  expect(result.isError).toBe(true);
  expect(result.content).toContain(
    '[flue] This agent has no sandbox. Declare one with useSandbox() to use shell and filesystem operations.',
  );
});

test('local() on Node: the built-in tools work in the root and cannot escape it', async () => {
  const { local } = await import('@flue/runtime/node');
  const { mkdtempSync, writeFileSync, existsSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const root = mkdtempSync(join(tmpdir(), 'flue-local-'));
  writeFileSync(join(root, 'hello.txt'), 'hi from disk');
  const outside = join(tmpdir(), `flue-outside-${Date.now()}.txt`);
  function OnDisk() {
    useModel('anthropic/claude-haiku-4-5');
    useSandbox(local({ cwd: root }));
    return 'Work on disk.';
  }
  await ctx.start([OnDisk]);
  ctx.server.script(
    {
      toolCalls: [
        { name: 'read', arguments: { path: 'hello.txt' } },
        { name: 'write', arguments: { path: outside, content: 'escaped' } },
      ],
    },
    { text: 'done' },
  );
  const handle = init(OnDisk, { id: 'sb-local' });
  await handle.read(await handle.dispatch('go'));
  const results = ctx.server.requests[1]!.messages.filter((m) => m.role === 'tool');
  expect(results[0]!.content).toContain('hi from disk');
  expect(results[1]!.isError).toBe(true);
  expect(results[1]!.content).toContain('outside the sandbox root');
  expect(existsSync(outside)).toBe(false);
});
