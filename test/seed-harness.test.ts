/**
 * Seed 004, Harness: the `prompt()` options a tool or hook passes (`model`, `thinkingLevel`,
 * `images`), the `PromptUsage` totals over every model call of one operation (follow-ups and an
 * overflow's compaction included), the result-retry cap, and `compact()` at its edges: nothing
 * to compact, already compacted, busy, a failed summary, an aborted turn, a closed harness.
 */
import { expect, test } from 'vitest';
import * as v from 'valibot';
import {
  HarnessClosedError,
  ResultUnavailableError,
  defineTool,
  init,
  useAgentStart,
  useModel,
  useTool,
  type FlueHarness,
  type PromptUsage,
} from '@flue/runtime';
import type { RecordedRequest } from '@flue/runtime/testing';
import { RATES, startWithExtraModels, thinkingBudget } from './support/extra-models.ts';
import { useScriptedRuntime } from './support/scripted-runtime.ts';

const ctx = useScriptedRuntime();

/** A 1×1 PNG. */
const PIXEL = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

/** Runs `work` with the agent's harness in a `useAgentStart` hook, during one dispatched message. */
async function withHarness<T>(id: string, work: (harness: FlueHarness) => Promise<T>): Promise<T> {
  let outcome: { value: T } | { error: unknown } | undefined;
  function Worker() {
    useModel('anthropic/claude-haiku-4-5');
    useAgentStart(async ({ harness }) => {
      outcome = await work(harness).then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      );
    });
    return 'Work.';
  }
  await startWithExtraModels(ctx, [Worker]);
  ctx.server.script({ text: 'main turn' });
  const handle = init(Worker, { id });
  await handle.read(await handle.dispatch('go'));
  if (outcome === undefined) throw new Error('the hook did not run');
  if ('error' in outcome) throw outcome.error;
  return outcome.value;
}

function thinking(request: RecordedRequest): unknown {
  return request.body.thinking;
}

test('prompt() model / thinkingLevel / images overrides reach the model request of that operation only', async () => {
  ctx.server.script({ text: 'A pixel.' }, { text: 'Less.' }, { text: 'None.' }, { text: 'Default.' });
  const responses = await withHarness('overrides', async (harness) => [
    await harness.prompt('Describe the picture.', {
      model: 'reasoner/think',
      thinkingLevel: 'high',
      images: [{ type: 'image', data: PIXEL, mimeType: 'image/png' }],
    }),
    await harness.prompt('Think less.', { model: 'reasoner/think', thinkingLevel: 'minimal' }),
    await harness.prompt('No thinking.', { model: 'reasoner/think', thinkingLevel: 'off' }),
    await harness.prompt('Back to the default.'),
  ]);
  expect(responses.map((r) => r.model)).toEqual([
    { provider: 'reasoner', id: 'think' },
    { provider: 'reasoner', id: 'think' },
    { provider: 'reasoner', id: 'think' },
    { provider: 'anthropic', id: 'claude-haiku-4-5' },
  ]);
  const [high, minimal, off, fallback, main] = ctx.server.requests;
  expect([high, minimal, off, fallback, main].map((r) => r!.body.model)).toEqual([
    'think',
    'think',
    'think',
    'claude-haiku-4-5',
    'claude-haiku-4-5',
  ]);

  // The reasoning level sets the thinking budget; `off` turns thinking off.
  expect(thinkingBudget(high!)).toBeGreaterThan(thinkingBudget(minimal!)!);
  expect(thinkingBudget(minimal!)).toBeGreaterThan(0);
  expect(thinking(off!)).toEqual({ type: 'disabled' });
  // The agent's model is not a reasoning model: nothing asks it to think.
  expect([thinking(fallback!), thinking(main!)]).toEqual([undefined, undefined]);

  // The image rides on the operation's user message, after its text.
  const content = high!.body.messages[0].content as {
    type: string;
    text?: string;
    source?: { type: string; media_type: string; data: string };
  }[];
  expect(content.map((part) => part.type)).toEqual(['text', 'image']);
  expect(content[0]!.text).toBe('Describe the picture.');
  expect(content[1]!.source).toEqual({ type: 'base64', media_type: 'image/png', data: PIXEL });
  expect(minimal!.messages.filter((m) => m.content.includes('[image]'))).toHaveLength(1);
});

test('PromptUsage sums every model call of one operation: tool turns, result follow-ups, retries after a bad finish', async () => {
  const lookup = defineTool({ name: 'lookup', description: 'Look it up.', run: () => 'found' });
  const calls = [
    { input: 100, output: 10, cacheRead: 1000 },
    { input: 200, output: 20, cacheRead: 0 },
    { input: 300, output: 30, cacheRead: 2000 },
    { input: 400, output: 40, cacheRead: 0 },
  ];
  ctx.server.script(
    { toolCalls: [{ name: 'lookup', arguments: {} }], usage: calls[0] },
    { text: 'It is 4.', usage: calls[1] }, // no finish: a reminder follows
    { toolCalls: [{ name: 'finish', arguments: { count: 'four' } }], usage: calls[2] },
    { toolCalls: [{ name: 'finish', arguments: { count: 4 } }], usage: calls[3] },
  );
  const response = await withHarness('usage', (harness) =>
    harness.prompt('Count.', { model: 'rated/priced', result: v.object({ count: v.number() }), tools: [lookup] }),
  );
  expect(response.data).toEqual({ count: 4 });
  expect(ctx.server.requests).toHaveLength(5); // four scratch calls, then the main turn

  const input = 1000;
  const output = 100;
  const cacheRead = 3000;
  const expected: PromptUsage = {
    input,
    output,
    cacheRead,
    cacheWrite: 0,
    totalTokens: input + output + cacheRead,
    cost: {
      input: (input * RATES.input) / 1e6,
      output: (output * RATES.output) / 1e6,
      cacheRead: (cacheRead * RATES.cacheRead) / 1e6,
      cacheWrite: 0,
      total: (input * RATES.input + output * RATES.output + cacheRead * RATES.cacheRead) / 1e6,
    },
  };
  expect(Object.keys(response.usage).sort()).toEqual(Object.keys(expected).sort());
  expect(Object.keys(response.usage.cost).sort()).toEqual(Object.keys(expected.cost).sort());
  expect(response.usage.input).toBe(expected.input);
  expect(response.usage.output).toBe(expected.output);
  expect(response.usage.cacheRead).toBe(expected.cacheRead);
  expect(response.usage.cacheWrite).toBe(0);
  expect(response.usage.totalTokens).toBe(expected.totalTokens);
  for (const key of ['input', 'output', 'cacheRead', 'cacheWrite', 'total'] as const) {
    expect(response.usage.cost[key]).toBeCloseTo(expected.cost[key], 12);
  }
});

test('a prompt the model refuses as too large compacts the scratch conversation once and retries; the summary counts in its usage', async () => {
  ctx.server.script(
    { text: 'hi', usage: { input: 10, output: 1 } },
    { status: 400, errorBody: 'prompt is too long: 250000 tokens > 200000 maximum' },
    { text: 'SCRATCH SUMMARY', usage: { input: 500, output: 50 } },
    { text: 'answer after compaction', usage: { input: 9000, output: 20 } },
  );
  const responses = await withHarness('overflow', async (harness) => [
    await harness.prompt('hello'),
    await harness.prompt('y'.repeat(40_000)),
  ]);
  expect(responses[1]!.text).toBe('answer after compaction');
  expect(responses[1]!.usage).toMatchObject({ input: 9500, output: 70, totalTokens: 9570 });
  const summarize = ctx.server.requests[2]!;
  expect(summarize.tools).toEqual([]);
  expect(summarize.messages[0]!.content).toContain('hello');
  const retried = ctx.server.requests[3]!.messages;
  expect(retried[0]!.content).toContain('SCRATCH SUMMARY');
  expect(retried.map((m) => m.content.slice(0, 5)).slice(1)).toEqual(['yyyyy']);
});

test('a second overflow in one prompt fails it with the model error', async () => {
  const overflow = { status: 400, errorBody: 'prompt is too long: 250000 tokens > 200000 maximum' };
  ctx.server.script({ text: 'hi' }, overflow, { text: 'SUMMARY' }, overflow);
  const error = await withHarness('overflow-twice', async (harness) => {
    await harness.prompt('hello');
    return harness.prompt('y'.repeat(40_000));
  }).then(
    () => undefined,
    (caught: unknown) => caught as Error,
  );
  expect(error?.message).toContain('prompt is too long');
  expect(ctx.server.requests).toHaveLength(5); // hi, overflow, summary, overflow, the main turn
});

const Count = v.object({ count: v.number() });

test('a result prompt whose model keeps answering in plain text is reminded, then rejected after 33 attempts', async () => {
  ctx.server.script(...Array.from({ length: 33 }, (_, i) => ({ text: `Attempt ${i + 1}.` })));
  const error = await withHarness('cap-text', (harness) => harness.prompt('Count.', { result: Count })).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ResultUnavailableError);
  expect((error as ResultUnavailableError).reason).toBe('Agent did not call `finish` with a valid result or `give_up` after 33 attempts.');
  expect((error as ResultUnavailableError).assistantText).toMatch(/^Attempt 1\.\n\nAttempt 2\.[\s\S]*Attempt 33\.$/);
  // 33 scratch calls, then the main turn; each retry carried a reminder.
  expect(ctx.server.requests).toHaveLength(34);
  const last = ctx.server.requests[32]!;
  expect(last.messages.filter((m) => m.content.startsWith('Reminder: call `finish`'))).toHaveLength(32);
});

test('a result prompt whose model keeps calling finish with invalid data is rejected after 33 attempts', async () => {
  ctx.server.script(...Array.from({ length: 33 }, () => ({ toolCalls: [{ name: 'finish', arguments: { count: 'many' } }] })));
  const error = await withHarness('cap-finish', (harness) => harness.prompt('Count.', { result: Count })).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ResultUnavailableError);
  expect((error as ResultUnavailableError).message).toBe('Agent did not call `finish` with a valid result or `give_up` after 33 attempts.');
  expect(ctx.server.requests).toHaveLength(34);
  const last = ctx.server.requests[32]!;
  const rejections = last.messages.filter((m) => m.role === 'tool');
  expect(rejections).toHaveLength(32);
  expect(rejections.every((m) => m.isError === true && m.content.startsWith('Result does not match the required schema'))).toBe(true);
  // The validation message is the correction; no plain-text reminder is added on top of it.
  expect(last.messages.some((m) => m.content.startsWith('Reminder:'))).toBe(false);
});

test('tool turns of a result prompt are work, not failed attempts: the cap counts only turns without a result', async () => {
  const lookup = defineTool({ name: 'lookup', description: 'Look it up.', run: () => 'found' });
  ctx.server.script(...Array.from({ length: 34 }, () => ({ toolCalls: [{ name: 'lookup', arguments: {} }] })), {
    toolCalls: [{ name: 'finish', arguments: { count: 34 } }],
  });
  const response = await withHarness('cap-work', (harness) => harness.prompt('Count.', { result: Count, tools: [lookup] }));
  expect(response.data).toEqual({ count: 34 });
});

test('compact() with nothing to compact resolves without a model call: empty, short, and just-compacted conversations', async () => {
  ctx.server.script({ text: 'short answer' }, { text: 'ok' }, { text: 'SUMMARY' }, { text: 'after' });
  await withHarness('compact-noop', async (harness) => {
    await harness.compact(); // empty
    await harness.prompt('A short question.');
    await harness.compact(); // shorter than what is kept
    expect(ctx.server.requests).toHaveLength(1);
    await harness.prompt('y'.repeat(40_000));
    await harness.compact(); // summarizes the short exchange, keeps the long one
    expect(ctx.server.requests).toHaveLength(3);
    await harness.compact(); // already compacted: only the summary lies before what is kept
    await harness.prompt('Next.');
  });
  // Four scratch calls and the main turn: the no-op compactions called no model.
  expect(ctx.server.requests).toHaveLength(5);
  const summarize = ctx.server.requests[2]!;
  expect(summarize.tools).toEqual([]);
  expect(summarize.messages[0]!.content).toContain('A short question.');
  expect(summarize.messages[0]!.content).not.toContain('yyyy');
  const next = ctx.server.requests[3]!.messages;
  expect(next[0]!.content).toContain('SUMMARY');
  expect(next.map((m) => m.content.slice(0, 5))).toEqual([next[0]!.content.slice(0, 5), 'yyyyy', 'ok', 'Next.']);
});

test('compact() rejects with SessionBusyError while a prompt runs, and when summarization fails keeps the conversation', async () => {
  ctx.server.script(
    { text: 'hi' },
    { text: 'first' },
    { text: 'slow reply', chunkDelayMs: 20 },
    { status: 400, errorBody: 'The summarizer refused.' },
    { text: 'still here' },
  );
  const outcomes = await withHarness('compact-edges', async (harness) => {
    const seen: unknown[] = [];
    await harness.prompt('hello');
    await harness.prompt('z'.repeat(40_000));
    const running = harness.prompt('slow');
    seen.push(
      await harness.compact().then(
        () => 'compacted',
        (error: unknown) => error,
      ),
    );
    await running;
    seen.push(
      await harness.compact().then(
        () => 'compacted',
        (error: unknown) => error,
      ),
    );
    seen.push((await harness.prompt('after the failure')).text);
    return seen;
  });
  expect(outcomes[0]).toMatchObject({ type: 'session_busy' });
  expect(outcomes[1]).toMatchObject({ type: 'operation_failed' });
  expect(String((outcomes[1] as Error).message)).toContain('The summarizer refused.');
  expect(outcomes[2]).toBe('still here');
  // The failed compaction left the scratch conversation whole.
  expect(ctx.server.requests[4]!.messages.map((m) => m.content.slice(0, 5))).toEqual([
    'hello',
    'hi',
    'zzzzz',
    'first',
    'slow',
    'slow ',
    'after',
  ]);
});

test('compact() in flight when the turn is aborted rejects with an AbortError; a kept harness then refuses with HarnessClosedError', async () => {
  let kept: FlueHarness | undefined;
  let inFlight: unknown;
  const summarize = defineTool({
    name: 'summarize_notes',
    description: 'Summarize the notes.',
    harness: true,
    async run({ harness }) {
      kept = harness;
      await harness.prompt('hello');
      await harness.prompt('n'.repeat(40_000));
      inFlight = await harness.compact().then(
        () => 'compacted',
        (error: unknown) => error,
      );
      return 'done';
    },
  });
  function Notes() {
    useModel('anthropic/claude-haiku-4-5');
    useTool(summarize);
    return 'Take notes.';
  }
  await ctx.start([Notes]);
  ctx.server.script(
    { toolCalls: [{ name: 'summarize_notes', arguments: {} }] },
    { text: 'hi' },
    { text: 'ok' },
    { text: ['Summ', 'ary'], hangAfterChunks: 2 }, // the summarizer never finishes
  );
  const handle = init(Notes, { id: 'compact-abort' });
  const receipt = await handle.dispatch('go');
  await ctx.server.waitForRequests(4);
  await handle.abort();
  await expect(handle.read(receipt)).rejects.toMatchObject({ outcome: 'aborted' });
  expect(inFlight).toBeInstanceOf(DOMException);
  expect((inFlight as DOMException).name).toBe('AbortError');
  expect((inFlight as DOMException).message).toBe('harness.compact() was aborted.');

  // The call is over; its harness closed with it, so a kept reference calls no model.
  const closed = await kept!.compact().then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(closed).toBeInstanceOf(HarnessClosedError);
  expect(closed).toMatchObject({ type: 'harness_closed', meta: { operation: 'compact' } });
  expect(ctx.server.requests).toHaveLength(4);
});
