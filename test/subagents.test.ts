import { expect, test } from 'vitest';
import * as v from 'valibot';
import {
  GeneralSubagent,
  defineSubagent,
  defineTool,
  init,
  useDelivery,
  useModel,
  useSandbox,
  useSubagent,
  useTool,
  virtualSandbox,
} from '@flue/runtime';
import { childConversations } from '@flue/runtime/testing';
import { NO_AGENTS_SECTION, promptOf } from './support/prompts.ts';
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
    {
      toolCalls: [
        { name: 'read', arguments: { path: 'issue.txt' } },
        { name: 'label', arguments: { kind: 'bug' } },
      ],
    },
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
  expect(child.system).toBe(promptOf('You classify issues.'));
  expect(child.messages.map((m) => m.content)).toEqual(['Classify: it crashes on start.']);
  expect(child.tools.map((t) => t.name).sort()).toEqual(['bash', 'edit', 'glob', 'grep', 'label', 'read', 'task', 'write']);
  expect(delegateSaw).toEqual({ kind: 'user', body: 'Classify: it crashes on start.' });
  const childResults = ctx.server.requests[2]!.messages.filter((m) => m.role === 'tool').map((m) => m.content);
  expect(childResults[0]).toContain('It crashes on start.');
  expect(childResults[1]).toBe('"labelled bug"');
  const back = ctx.server.requests[3]!.messages.filter((m) => m.role === 'tool');
  expect(back.map((m) => m.content)).toEqual(['It is a bug.']);

  // The child conversation is recorded and retained on the parent: its whole transcript is readable.
  const children = await childConversations(Triage, 'sub-1');
  expect(children).toHaveLength(1);
  const [retained] = children;
  const taskCallId = ctx.server.requests[3]!.messages.find((m) => m.role === 'tool')!.toolCallId;
  expect(retained).toMatchObject({ agent: 'classifier', via: 'conversation', toolCallId: taskCallId });
  expect(retained!.conversationId).toMatch(/^conv_/);
  const transcript = retained!.snapshot.messages.map((m) => [
    m.role,
    m.parts.map((p) => (p.type === 'text' ? p.text : p.type === 'dynamic-tool' ? `${p.toolName}:${p.state}` : p.type)),
  ]);
  expect(transcript).toEqual([
    ['user', ['Classify: it crashes on start.']],
    ['assistant', ['read:output-available', 'label:output-available', 'It is a bug.']],
  ]);
});

test('GeneralSubagent (flue-general) works in the shared sandbox with only the task prompt', async () => {
  await ctx.start([Triage]);
  ctx.server.script(
    { toolCalls: [{ name: 'task', arguments: { agent: 'flue-general', prompt: 'Summarize issue.txt into summary.txt.' } }] },
    // The general delegate: the built-in tools and the shared sandbox, no instructions of its own.
    { toolCalls: [{ name: 'read', arguments: { path: 'issue.txt' } }] },
    { toolCalls: [{ name: 'write', arguments: { path: 'summary.txt', content: 'Crash on start.' } }] },
    { text: 'Wrote summary.txt.' },
    { toolCalls: [{ name: 'bash', arguments: { command: 'cat summary.txt' } }] },
    { text: 'Summary ready.' },
  );
  const handle = init(Triage, { id: 'general-1' });
  expect((await handle.read(await handle.dispatch('Summarize the issue.'))).text).toBe('Summary ready.');
  expect(GeneralSubagent.name).toBe('flue-general');
  const child = ctx.server.requests[1]!;
  expect(child.system).toBe(NO_AGENTS_SECTION);
  expect(child.messages.map((m) => m.content)).toEqual(['Summarize issue.txt into summary.txt.']);
  expect(child.tools.map((t) => t.name).sort()).toEqual(['bash', 'edit', 'glob', 'grep', 'read', 'task', 'write']);
  expect(ctx.server.requests[2]!.messages.filter((m) => m.role === 'tool')[0]!.content).toContain('It crashes on start.');
  // Only the delegate's final text comes back; the file it wrote is in the parent's sandbox.
  expect(ctx.server.requests[4]!.messages.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual(['Wrote summary.txt.']);
  expect(ctx.server.requests[5]!.messages.filter((m) => m.role === 'tool').at(-1)!.content).toContain('Crash on start.');
  const children = await childConversations(Triage, 'general-1');
  expect(children.map((c) => c.agent)).toEqual(['flue-general']);
});

test('task is always offered with a static spec; without subagents the prompt says so and a call is a miss', async () => {
  function Solo() {
    useModel('anthropic/claude-haiku-4-5');
    return 'Work alone.';
  }
  await ctx.start([Solo]);
  ctx.server.script({ toolCalls: [{ name: 'task', arguments: { agent: 'helper', prompt: 'help' } }] }, { text: 'done alone' });
  const handle = init(Solo, { id: 'solo-1' });
  expect((await handle.read(await handle.dispatch('go'))).text).toBe('done alone');
  const first = ctx.server.requests[0]!;
  expect(first.system).toBe(promptOf('Work alone.'));
  const task = first.tools.find((t) => t.name === 'task')!;
  expect(task.description).toContain('"Available Agents" in the system prompt');
  expect(task.parameters).toMatchObject({ type: 'object', required: ['prompt', 'agent'] });
  const miss = ctx.server.requests[1]!.messages.filter((m) => m.role === 'tool').at(-1)!;
  expect(miss).toMatchObject({ isError: false, content: 'Subagent "helper" is not declared. Available subagents: (none).' });
  expect(await childConversations(Solo, 'solo-1')).toEqual([]);
  // Same spec whatever the roster: the triage agent gets the identical tool.
  ctx.server.reset();
  await ctx.flue!.stop();
  await ctx.start([Triage]);
  ctx.server.script({ text: 'ok' });
  const triage = init(Triage, { id: 'solo-2' });
  await triage.read(await triage.dispatch('hi'));
  expect(ctx.server.requests[0]!.tools.find((t) => t.name === 'task')).toEqual(task);
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
  // Delegates run at depths 1 to 4; the depth-4 delegate's task call (a fifth level) is refused.
  ctx.server.script(
    call,
    call,
    call,
    call,
    call,
    { text: 'depth 4 done' },
    { text: 'd3' },
    { text: 'd2' },
    { text: 'd1' },
    { text: 'top done' },
  );
  const handle = init(Top, { id: 'sub-3' });
  const reply = await handle.read(await handle.dispatch('go'));
  expect(reply.text).toBe('top done');
  const refused = ctx.server.requests[5]!.messages.filter((m) => m.role === 'tool').at(-1)!;
  expect(refused.isError).toBe(true);
  expect(refused.content).toBe('Maximum delegation depth (4) exceeded.');
  // Four nested child conversations, each retained on the one that delegated to it.
  const children = await childConversations(Top, 'sub-3');
  expect(children.map((c) => c.agent)).toEqual(['deeper', 'deeper', 'deeper', 'deeper']);
  expect(children[1]!.parentConversationId).toBe(children[0]!.conversationId);
  expect(children[2]!.parentConversationId).toBe(children[1]!.conversationId);
  expect(children[3]!.parentConversationId).toBe(children[2]!.conversationId);
  const finalText = (c: (typeof children)[number]) =>
    c.snapshot.messages
      .filter((m) => m.role === 'assistant')
      .at(-1)!
      .parts.at(-1);
  expect(children.map(finalText)).toMatchObject([
    { type: 'text', text: 'd1' },
    { type: 'text', text: 'd2' },
    { type: 'text', text: 'd3' },
    { type: 'text', text: 'depth 4 done' },
  ]);
});

test('a harness.prompt() conversation delegates through task; the child is retained on the parent conversation', async () => {
  const consult = defineTool({
    name: 'consult',
    description: 'Consult the classifier through a scratch conversation.',
    input: v.object({}),
    harness: true,
    async run({ harness }) {
      return (await harness.prompt('Ask the classifier about the crash.')).text;
    },
  });
  function Consultant() {
    useModel('anthropic/claude-haiku-4-5');
    useTool(consult);
    useSubagent(classifier);
    return 'Consult.';
  }
  await ctx.start([Consultant]);
  ctx.server.script(
    { toolCalls: [{ name: 'consult', arguments: {} }] },
    { toolCalls: [{ name: 'task', arguments: { agent: 'classifier', prompt: 'Classify the crash.' } }] }, // scratch
    { text: 'A bug.' }, // the delegate
    { text: 'The classifier says: a bug.' }, // scratch
    { text: 'Consulted: a bug.' },
  );
  const handle = init(Consultant, { id: 'consult-1' });
  expect((await handle.read(await handle.dispatch('What is it?'))).text).toBe('Consulted: a bug.');
  expect(ctx.server.requests[1]!.system).toContain('- **classifier** — Classifies an issue as bug or feature.');
  expect(ctx.server.requests[3]!.messages.find((m) => m.role === 'tool')).toMatchObject({ content: 'A bug.', isError: false });
  const children = await childConversations(Consultant, 'consult-1');
  expect(children).toHaveLength(1);
  expect(children[0]).toMatchObject({ agent: 'classifier', via: 'harness' });
  expect(children[0]!.snapshot.messages.map((m) => m.parts[0])).toMatchObject([
    { type: 'text', text: 'Classify the crash.' },
    { type: 'text', text: 'A bug.' },
  ]);
});

test('a harness.prompt() conversation counts as a delegation level: its delegates reach depth 4 and the next task is refused', async () => {
  const deeper: ReturnType<typeof defineSubagent> = defineSubagent({
    name: 'deeper',
    description: 'Delegates again.',
    agent() {
      useSubagent(deeper);
      return 'Delegate deeper.';
    },
  });
  const probe = defineTool({
    name: 'probe',
    description: 'Probe through a scratch conversation.',
    input: v.object({}),
    harness: true,
    async run({ harness }) {
      return (await harness.prompt('Start the chain.')).text;
    },
  });
  function Prober() {
    useModel('anthropic/claude-haiku-4-5');
    useTool(probe);
    useSubagent(deeper);
    return 'Probe.';
  }
  await ctx.start([Prober]);
  const call = { toolCalls: [{ name: 'task', arguments: { agent: 'deeper', prompt: 'go deeper' } }] };
  ctx.server.script(
    { toolCalls: [{ name: 'probe', arguments: {} }] },
    call, // the harness conversation (depth 1) delegates
    call, // depth 2
    call, // depth 3
    call, // depth 4: refused
    { text: 'depth 4 done' },
    { text: 'd3' },
    { text: 'd2' },
    { text: 'harness done' },
    { text: 'top done' },
  );
  const handle = init(Prober, { id: 'depth-harness' });
  expect((await handle.read(await handle.dispatch('go'))).text).toBe('top done');
  const refused = ctx.server.requests[5]!.messages.filter((m) => m.role === 'tool').at(-1)!;
  expect(refused).toMatchObject({ isError: true, content: 'Maximum delegation depth (4) exceeded.' });
  const children = await childConversations(Prober, 'depth-harness');
  expect(children.map((c) => c.agent)).toEqual(['deeper', 'deeper', 'deeper']);
});

test('a harness tool in a depth-4 delegate cannot open its harness: the tool fails with the cap message', async () => {
  const probe = defineTool({
    name: 'probe',
    description: 'Probe through a scratch conversation.',
    input: v.object({}),
    harness: true,
    async run({ harness }) {
      return (await harness.prompt('Probe.')).text;
    },
  });
  const deepest: ReturnType<typeof defineSubagent> = defineSubagent({
    name: 'deeper',
    description: 'Delegates again.',
    agent() {
      useSubagent(deepest);
      useTool(probe);
      return 'Delegate deeper.';
    },
  });
  function Chain() {
    useModel('anthropic/claude-haiku-4-5');
    useSubagent(deepest);
    return 'Chain.';
  }
  await ctx.start([Chain]);
  const call = { toolCalls: [{ name: 'task', arguments: { agent: 'deeper', prompt: 'go deeper' } }] };
  ctx.server.script(
    call, // main (depth 0)
    call, // depth 1
    call, // depth 2
    call, // depth 3
    { toolCalls: [{ name: 'probe', arguments: {} }] }, // depth 4: its harness would be depth 5
    { text: 'depth 4 done' },
    { text: 'd3' },
    { text: 'd2' },
    { text: 'd1' },
    { text: 'top done' },
  );
  const handle = init(Chain, { id: 'depth-tool-harness' });
  expect((await handle.read(await handle.dispatch('go'))).text).toBe('top done');
  const refused = ctx.server.requests[5]!.messages.filter((m) => m.role === 'tool').at(-1)!;
  expect(refused).toMatchObject({ isError: true, content: 'Maximum delegation depth (4) exceeded.' });
  expect(ctx.server.requests).toHaveLength(10);
});

test('aborting while a delegate works settles the task call with the interrupted marker naming its child conversation', async () => {
  await ctx.start([Triage]);
  ctx.server.script(
    { toolCalls: [{ id: 'call_abort_1', name: 'task', arguments: { agent: 'classifier', prompt: 'Take your time.' } }] },
    { text: ['Thinking', ' hard'], chunkDelayMs: 50, hangAfterChunks: 2 }, // the delegate never finishes
    { text: 'Starting over.' },
  );
  const handle = init(Triage, { id: 'sub-abort' });
  const first = await handle.dispatch('go');
  await ctx.server.waitForRequests(2, 60_000); // the delegate is streaming
  await handle.abort();
  await expect(handle.read(first)).rejects.toMatchObject({ outcome: 'aborted' });
  const [child] = await childConversations(Triage, 'sub-abort');
  expect(child).toMatchObject({ agent: 'classifier', toolCallId: 'call_abort_1' });
  await handle.read(await handle.dispatch('again'));
  const result = ctx.server.requests[2]!.messages.find((m) => m.role === 'tool' && m.toolCallId === 'call_abort_1');
  expect(result).toMatchObject({ isError: true });
  expect(JSON.parse(result!.content)).toEqual({
    type: 'interrupted',
    message: 'Tool execution was interrupted before completion. The outcome is unknown.',
    childConversationId: child!.conversationId,
  });
});
