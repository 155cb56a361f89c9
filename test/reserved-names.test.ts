/**
 * Framework-reserved names through the public API: `flue-general` belongs to GeneralSubagent;
 * `task`, `activate_skill` and `read_skill_resource` are reserved in every conversation, and
 * `finish` / `give_up` only inside harness prompts (where they are the result tools).
 */
import { expect, test } from 'vitest';
import * as v from 'valibot';
import { AgentRunError, GeneralSubagent, defineSubagent, defineTool, init, useModel, useSubagent, useTool } from '@flue/runtime';
import { useScriptedRuntime } from './support/scripted-runtime.ts';

const ctx = useScriptedRuntime();

test('"flue-general" is reserved: defineSubagent and useSubagent refuse it; GeneralSubagent registers under it', async () => {
  expect(() => defineSubagent({ name: 'flue-general', description: 'An impostor.', agent: () => 'x' })).toThrow(
    '[flue] defineSubagent(): the name "flue-general" is reserved for GeneralSubagent',
  );
  expect(GeneralSubagent.name).toBe('flue-general');
  function Impostor() {
    useModel('anthropic/claude-haiku-4-5');
    useSubagent({ name: 'flue-general', description: 'An impostor.', agent: () => 'x' });
    return 'Work.';
  }
  function Genuine() {
    useModel('anthropic/claude-haiku-4-5');
    useSubagent(GeneralSubagent);
    return 'Work.';
  }
  await ctx.start([Impostor, Genuine]);
  ctx.server.script({ text: 'Ready.' });
  const impostor = init(Impostor, { id: 'reserved-1' });
  const failed = await impostor.read(await impostor.dispatch('hi')).catch((error: unknown) => error);
  expect(failed).toBeInstanceOf(AgentRunError);
  expect((failed as Error).message).toContain('useSubagent(): the name "flue-general" is reserved for GeneralSubagent');
  expect(ctx.server.requests).toHaveLength(0);

  const genuine = init(Genuine, { id: 'reserved-2' });
  expect((await genuine.read(await genuine.dispatch('hi'))).text).toBe('Ready.');
  expect(ctx.server.requests[0]!.system).toContain('- **flue-general** — A general-purpose agent');
});

test('a per-mount override of GeneralSubagent spreads cleanly: { ...GeneralSubagent, model } registers as flue-general with that model', async () => {
  const override = { ...GeneralSubagent, model: 'anthropic/claude-sonnet-4-6' };
  expect(defineSubagent(override)).toEqual(override);
  function Delegator() {
    useModel('anthropic/claude-haiku-4-5');
    useSubagent(override);
    return 'Delegate.';
  }
  await ctx.start([Delegator]);
  ctx.server.script(
    { toolCalls: [{ name: 'task', arguments: { agent: 'flue-general', prompt: 'Say hi.' } }] },
    { text: 'hi' },
    { text: 'Delegated.' },
  );
  const handle = init(Delegator, { id: 'reserved-spread' });
  expect((await handle.read(await handle.dispatch('go'))).text).toBe('Delegated.');
  expect(ctx.server.requests[0]!.system).toContain('- **flue-general** — A general-purpose agent');
  expect(ctx.server.requests.map((r) => r.body.model)).toEqual(['claude-haiku-4-5', 'claude-sonnet-4-6', 'claude-haiku-4-5']);
});

const custom = (name: string) =>
  defineTool({ name, description: `A custom ${name}.`, input: v.object({}), run: () => `custom ${name} ran` });

test('a custom tool may not take a framework name; finish and give_up are free outside harness prompts', async () => {
  function Clash() {
    useModel('anthropic/claude-haiku-4-5');
    useTool(custom('activate_skill'));
    return 'Work.';
  }
  function Finisher() {
    useModel('anthropic/claude-haiku-4-5');
    useTool(custom('finish'));
    useTool(custom('give_up'));
    return 'Work.';
  }
  await ctx.start([Clash, Finisher]);
  const clash = init(Clash, { id: 'reserved-3' });
  const failed = await clash.read(await clash.dispatch('hi')).catch((error: unknown) => error);
  expect(failed).toBeInstanceOf(AgentRunError);
  expect((failed as AgentRunError).cause).toMatchObject({
    type: 'tool_name_conflict',
    message: 'Tool name "activate_skill" is reserved by the framework.',
  });

  ctx.server.script({ toolCalls: [{ name: 'finish', arguments: {} }] }, { text: 'Done.' });
  const finisher = init(Finisher, { id: 'reserved-4' });
  expect((await finisher.read(await finisher.dispatch('hi'))).text).toBe('Done.');
  expect(ctx.server.requests[0]!.tools.map((t) => t.name)).toEqual(['task', 'finish', 'give_up']);
  expect(ctx.server.requests[1]!.messages.filter((m) => m.role === 'tool').at(-1)).toMatchObject({
    content: JSON.stringify('custom finish ran'),
    isError: false,
  });
});

test('inside a harness prompt, finish and give_up are reserved: a tool of that name fails the prompt with tool_name_conflict', async () => {
  const consult = defineTool({
    name: 'consult',
    description: 'Ask a scratch conversation.',
    input: v.object({}),
    harness: true,
    async run({ harness }) {
      try {
        await harness.prompt('Summarize.', { tools: [custom('give_up')] });
        return 'no conflict';
      } catch (error) {
        return `${(error as { type?: string }).type}: ${(error as Error).message}`;
      }
    },
  });
  function Consultant() {
    useModel('anthropic/claude-haiku-4-5');
    useTool(consult);
    return 'Consult.';
  }
  await ctx.start([Consultant]);
  ctx.server.script({ toolCalls: [{ name: 'consult', arguments: {} }] }, { text: 'Reported.' });
  const handle = init(Consultant, { id: 'reserved-5' });
  expect((await handle.read(await handle.dispatch('go'))).text).toBe('Reported.');
  expect(ctx.server.requests).toHaveLength(2);
  expect(ctx.server.requests[1]!.messages.filter((m) => m.role === 'tool').at(-1)!.content).toBe(
    JSON.stringify('tool_name_conflict: Tool name "give_up" is reserved by the framework inside harness prompts.'),
  );
});
