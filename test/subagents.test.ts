import { expect, test } from 'vitest';
import * as v from 'valibot';
import {
  GeneralSubagent,
  defineSubagent,
  init,
  useDelivery,
  useModel,
  useSandbox,
  useSubagent,
  useTool,
  virtualSandbox,
} from '@flue/runtime';
import { useScriptedRuntime } from './support/scripted-runtime.ts';

const ctx = useScriptedRuntime();

let delegateSaw: unknown;
const classifier = defineSubagent({
  name: 'classifier',
  description: 'Classifies an issue as bug or feature.',
  agent() {
    delegateSaw = useDelivery();
    useTool({ name: 'label', description: 'Label it.', input: v.object({ kind: v.string() }), run: ({ data }) => `labelled ${data.kind}` });
    return 'You classify issues.';
  },
});

function Triage() {
  useModel('anthropic/claude-haiku-4-5');
  useSandbox(virtualSandbox({ files: { '/workspace/issue.txt': 'It crashes on start.' } }));
  useSubagent(classifier);
  useSubagent(GeneralSubagent);
  return 'Triage issues.';
}

test('the task tool delegates to a declared subagent and returns only its final text', async () => {
  await ctx.start([Triage]);
  ctx.server.script(
    { toolCalls: [{ name: 'task', arguments: { agent: 'classifier', prompt: 'Classify: it crashes on start.' } }] },
    // The delegate's own conversation: it has its tools and the shared sandbox, none of the parent's history.
    { toolCalls: [{ name: 'read', arguments: { path: 'issue.txt' } }, { name: 'label', arguments: { kind: 'bug' } }] },
    { text: 'It is a bug.' },
    { text: 'Classified as a bug.' },
  );
  const handle = init(Triage, { id: 'sub-1' });
  const reply = await handle.read(await handle.dispatch('Please triage the new issue.'));
  expect(reply.text).toBe('Classified as a bug.');
  const parent = ctx.server.requests[0]!;
  expect(parent.tools.map((t) => t.name)).toContain('task');
  expect(parent.system).toContain('## Available Agents');
  expect(parent.system).toContain('- **classifier** — Classifies an issue as bug or feature.');
  expect(parent.system).toContain('- **flue-general**');
  const child = ctx.server.requests[1]!;
  expect(child.system).toBe('You classify issues.');
  expect(child.messages.map((m) => m.content)).toEqual(['Classify: it crashes on start.']);
  expect(child.tools.map((t) => t.name).sort()).toEqual(['bash', 'edit', 'glob', 'grep', 'label', 'read', 'write']);
  expect(delegateSaw).toEqual({ kind: 'user', body: 'Classify: it crashes on start.' });
  const childResults = ctx.server.requests[2]!.messages.filter((m) => m.role === 'tool').map((m) => m.content);
  expect(childResults[0]).toContain('It crashes on start.');
  expect(childResults[1]).toBe('"labelled bug"');
  const back = ctx.server.requests[3]!.messages.filter((m) => m.role === 'tool');
  expect(back.map((m) => m.content)).toEqual(['It is a bug.']);
});

test('an unknown subagent is a factual miss, not an error; validation rejects bad definitions', async () => {
  await ctx.start([Triage]);
  ctx.server.script({ toolCalls: [{ name: 'task', arguments: { agent: 'nobody', prompt: 'x' } }] }, { text: 'ok' });
  const handle = init(Triage, { id: 'sub-2' });
  await handle.read(await handle.dispatch('go'));
  const miss = ctx.server.requests[1]!.messages.filter((m) => m.role === 'tool').at(-1)!;
  expect(miss.isError).toBe(false);
  expect(miss.content).toBe('Subagent "nobody" is not declared. Available subagents: classifier, flue-general.');
  expect(() => defineSubagent({ name: '', description: 'd', agent: () => 'x' })).toThrow(/name/);
  expect(() => defineSubagent({ name: 'a', description: 'd', agent: () => 'x', thinkingLevel: 'huge' as never })).toThrow(/thinkingLevel/);
  expect(() => defineSubagent({ name: 'a', description: 'd', agent: () => 'x', extra: 1 } as never)).toThrow(/unknown field "extra"/);
});

test('delegation deeper than the cap is refused with the exact message', async () => {
  let level = 0;
  const recursive: ReturnType<typeof defineSubagent> = defineSubagent({
    name: 'deeper',
    description: 'Delegates again.',
    agent() {
      useSubagent(recursive);
      return `level ${++level}`;
    },
  });
  function Top() {
    useModel('anthropic/claude-haiku-4-5');
    useSubagent(recursive);
    return 'top';
  }
  await ctx.start([Top]);
  const call = { toolCalls: [{ name: 'task', arguments: { agent: 'deeper', prompt: 'go deeper' } }] };
  ctx.server.script(call, call, call, call, { text: 'depth 3 done' }, { text: 'd2' }, { text: 'd1' }, { text: 'top done' });
  const handle = init(Top, { id: 'sub-3' });
  const reply = await handle.read(await handle.dispatch('go'));
  expect(reply.text).toBe('top done');
  const refused = ctx.server.requests[4]!.messages.filter((m) => m.role === 'tool').at(-1)!;
  expect(refused.isError).toBe(true);
  expect(refused.content).toBe('Maximum delegation depth (4) exceeded.');
});
