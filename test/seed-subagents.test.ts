/**
 * Seed 004, defineSubagent: per-mount `model` / `thinkingLevel` overrides (spread onto a shared
 * definition, or omitted to inherit the parent turn's), and two subagents of one name in a render.
 */
import { expect, test } from 'vitest';
import { AgentRunError, defineSubagent, init, useModel, useSubagent } from '@flue/runtime';
import { startWithExtraModels, thinkingBudget } from './support/extra-models.ts';
import { useScriptedRuntime } from './support/scripted-runtime.ts';
import { dispatchAndFail } from './seed-tools/helpers.ts';

const ctx = useScriptedRuntime();

const researcher = defineSubagent({
  name: 'researcher',
  description: 'Looks things up.',
  agent: () => 'You research.',
});

test("a subagent runs on its model / thinkingLevel override; without one it inherits the parent turn's", async () => {
  function Lead() {
    useModel('reasoner/think', { thinkingLevel: 'high' });
    useSubagent(researcher); // inherits both
    useSubagent({ ...researcher, name: 'quick', thinkingLevel: 'minimal' });
    useSubagent({ ...researcher, name: 'cheap', model: 'anthropic/claude-haiku-4-5' });
    return 'Lead the research.';
  }
  await startWithExtraModels(ctx, [Lead]);
  const delegate = (agent: string) => ({ toolCalls: [{ name: 'task', arguments: { agent, prompt: `Work, ${agent}.` } }] });
  ctx.server.script(
    delegate('researcher'),
    { text: 'researched' },
    delegate('quick'),
    { text: 'quickly' },
    delegate('cheap'),
    { text: 'cheaply' },
    { text: 'All done.' },
  );
  const handle = init(Lead, { id: 'sub-models' });
  expect((await handle.read(await handle.dispatch('go'))).text).toBe('All done.');

  const byPrompt = (text: string) => ctx.server.requests.find((r) => r.messages[0]?.content === text)!;
  const parent = ctx.server.requests[0]!;
  const inherited = byPrompt('Work, researcher.');
  const quick = byPrompt('Work, quick.');
  const cheap = byPrompt('Work, cheap.');
  expect([parent, inherited, quick, cheap].map((r) => r.body.model)).toEqual(['think', 'think', 'think', 'claude-haiku-4-5']);
  expect(thinkingBudget(inherited)).toBe(thinkingBudget(parent));
  expect(thinkingBudget(quick)).toBeLessThan(thinkingBudget(parent)!);
  expect(thinkingBudget(quick)).toBeGreaterThan(0);
  // The non-reasoning model is asked for no thinking at all.
  expect(cheap.body.thinking).toBeUndefined();
});

test('two subagents of one name in a render fail the submission with the documented message', async () => {
  function Twice() {
    useModel('anthropic/claude-haiku-4-5');
    useSubagent(researcher);
    useSubagent({ ...researcher, model: 'anthropic/claude-sonnet-4-6' });
    return 'x';
  }
  await startWithExtraModels(ctx, [Twice]);
  const error = await dispatchAndFail(Twice, 'sub-twice', 'go');
  expect(error).toBeInstanceOf(AgentRunError);
  expect(error.message).toContain('[flue] useSubagent("researcher") was declared twice in one render.');
  expect(ctx.server.requests).toHaveLength(0);
});
