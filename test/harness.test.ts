import { expect, test } from 'vitest';
import * as v from 'valibot';
import { defineTool, init, ResultUnavailableError, useAgentStart, useModel, useTool } from '@flue/runtime';
import { useScriptedRuntime } from './support/scripted-runtime.ts';
import { expectReduced } from './support/reduced-text.ts';

const ctx = useScriptedRuntime();

const Report = v.object({ riskLevel: v.picklist(['low', 'medium', 'high']), summary: v.string() });

let lastReport: unknown;
let lastError: unknown;

const reviewText = defineTool({
  name: 'review_text',
  description: 'Review the text and return a structured risk report.',
  input: v.object({ text: v.string() }),
  harness: true,
  async run({ harness, data }) {
    try {
      const { data: report, usage, model } = await harness.prompt(`Review: ${data.text}`, { result: Report });
      lastReport = { report, usage, model };
      return { output: report };
    } catch (error) {
      lastError = error;
      throw error;
    }
  },
});

function Reviewer() {
  useModel('anthropic/claude-haiku-4-5');
  useTool(reviewText);
  return 'Review contracts.';
}

test('harness.prompt with a result schema resolves with validated data after a corrected finish', async () => {
  await ctx.start([Reviewer]);
  ctx.server.script(
    { toolCalls: [{ name: 'review_text', arguments: { text: 'clause 7' } }] },
    // The scratch conversation: a bad finish first, then a valid one.
    { toolCalls: [{ name: 'finish', arguments: { riskLevel: 'extreme', summary: 'x' } }] },
    { toolCalls: [{ name: 'finish', arguments: { riskLevel: 'high', summary: 'Clause 7 is unusual.' } }] },
    { text: 'The contract is high risk.' },
  );
  const handle = init(Reviewer, { id: 'h1' });
  const reply = await handle.read(await handle.dispatch('Check this contract'));
  expect(reply.text).toBe('The contract is high risk.');
  expect((lastReport as { report: unknown }).report).toEqual({ riskLevel: 'high', summary: 'Clause 7 is unusual.' });
  expect((lastReport as { model: unknown }).model).toEqual({ provider: 'anthropic', id: 'claude-haiku-4-5' });

  const scratch = ctx.server.requests[1]!;
  expect(scratch.tools.map((t) => t.name).sort()).toEqual(['finish', 'give_up', 'review_text', 'task']);
  expect(scratch.messages[0]!.content).toContain('Review: clause 7');
  expect(scratch.messages[0]!.content).toContain('call the `finish` tool');
  const retry = ctx.server.requests[2]!;
  const rejection = retry.messages.find((m) => m.role === 'tool')!;
  expect(rejection.content).toContain('Result does not match the required schema');
  expect(rejection.isError).toBe(true);
  // The scratch conversation never reaches the main conversation's model context.
  const main = ctx.server.requests[3]!;
  expect(main.messages.some((m) => m.content.includes('Result accepted'))).toBe(false);
  expect(main.messages.find((m) => m.role === 'tool')!.content).toContain('"riskLevel":"high"');
});

test('give_up rejects harness.prompt with ResultUnavailableError carrying the reason', async () => {
  await ctx.start([Reviewer]);
  lastError = undefined;
  ctx.server.script(
    { toolCalls: [{ name: 'review_text', arguments: { text: 'blank' } }] },
    { text: 'Hmm.', toolCalls: [{ name: 'give_up', arguments: { reason: 'The contract is empty.' } }] },
    { text: 'I could not review it.' },
  );
  const handle = init(Reviewer, { id: 'h2' });
  const reply = await handle.read(await handle.dispatch('Check this'));
  expect(reply.text).toBe('I could not review it.');
  expect(lastError).toBeInstanceOf(ResultUnavailableError);
  expect((lastError as ResultUnavailableError).reason).toBe('The contract is empty.');
  expect((lastError as ResultUnavailableError).assistantText).toBe('Hmm.');
  expect(ctx.server.requests[2]!.messages.find((m) => m.role === 'tool')!.content).toContain('The agent gave up: The contract is empty.');
});

test('harness.prompt without a result returns text and continues its scratch conversation', async () => {
  const seen: string[] = [];
  function Summarizer() {
    useModel('anthropic/claude-haiku-4-5');
    useAgentStart(async ({ harness }) => {
      seen.push((await harness.prompt('first')).text);
      seen.push((await harness.prompt('second')).text);
    });
    return 'Summarize.';
  }
  await ctx.start([Summarizer]);
  ctx.server.script({ text: 'one' }, { text: 'two' }, { text: 'done' });
  const handle = init(Summarizer, { id: 'h3' });
  await handle.read(await handle.dispatch('go'));
  expect(seen).toEqual(['one', 'two']);
  // The second scratch call sees the first exchange.
  expect(ctx.server.requests[1]!.messages.map((m) => m.content)).toEqual(['first', 'one', 'second']);
});

test('a concurrent harness operation is refused with SessionBusyError', async () => {
  let busyType: string | undefined;
  function Busy() {
    useModel('anthropic/claude-haiku-4-5');
    useAgentStart(async ({ harness }) => {
      const first = harness.prompt('slow');
      try {
        await harness.prompt('again');
      } catch (error) {
        busyType = (error as { type?: string }).type;
      }
      await first;
    });
    return 'x';
  }
  await ctx.start([Busy]);
  ctx.server.script({ text: 'ok', chunkDelayMs: 20 }, { text: 'final' });
  const handle = init(Busy, { id: 'h4' });
  await handle.read(await handle.dispatch('go'));
  expect(busyType).toBe('session_busy');
});

test('harness.compact() summarizes the scratch conversation; later prompts see the summary', async () => {
  function Compacting() {
    useModel('anthropic/claude-haiku-4-5');
    useAgentStart(async ({ harness }) => {
      await harness.prompt('x'.repeat(40_000));
      await harness.prompt('y'.repeat(40_000));
      await harness.compact();
      await harness.prompt('after');
    });
    return 'x';
  }
  await ctx.start([Compacting]);
  ctx.server.script({ text: 'first' }, { text: 'second' }, { text: 'SCRATCH SUMMARY' }, { text: 'third' }, { text: 'main' });
  const handle = init(Compacting, { id: 'h5' });
  await handle.read(await handle.dispatch('go'));
  const summarize = ctx.server.requests[2]!;
  expect(summarize.messages[0]!.content).toContain('xxxx');
  const after = ctx.server.requests[3]!;
  expect(after.messages[0]!.content).toContain('<compaction type="context_summary">');
  expect(after.messages[0]!.content).toContain('SCRATCH SUMMARY');
  expect(after.messages.some((m) => m.content.startsWith('xxxx'))).toBe(false);
  expect(after.messages.at(-1)!.content).toBe('after');
});

test('a harness prompt too large for the window reaches the model reduced, head and tail with the marker, and does not fail', async () => {
  const big = `START ${'z'.repeat(100_000)} FINISH`;
  function Oversized() {
    useModel('anthropic/claude-haiku-4-5');
    useAgentStart(async ({ harness }) => {
      await harness.prompt(big);
    });
    return 'x';
  }
  await ctx.start([Oversized], { contextWindow: 8000 });
  ctx.server.script({ text: 'skimmed' }, { text: 'main' });
  const handle = init(Oversized, { id: 'h6' });
  expect((await handle.read(await handle.dispatch('go'))).text).toBe('main');
  expectReduced(ctx.server.requests[0]!.messages.at(-1)!.content, big, 'message', 8000);
});
