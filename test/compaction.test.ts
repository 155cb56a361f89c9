import { expect, test } from 'vitest';
import { type FlueEvent, init, observe, useModel } from '@flue/runtime';
import { useScriptedRuntime } from './support/scripted-runtime.ts';

const ctx = useScriptedRuntime();

function Chatty() {
  useModel('anthropic/claude-haiku-4-5', { compaction: { keepRecentTokens: 20 } });
  return 'Chat.';
}

function NoCompaction() {
  useModel('anthropic/claude-haiku-4-5', { compaction: false });
  return 'Chat.';
}

const long = 'word '.repeat(120);

test('the threshold trigger summarizes older messages and the next request starts with the summary', async () => {
  await ctx.start([Chatty], { contextWindow: 2000 });
  ctx.server.script(
    { text: long, usage: { input: 1500, output: 100 } },
    { text: 'SUMMARY OF THE EARLIER CONVERSATION' },
    { text: 'second answer' },
  );
  const events: FlueEvent[] = [];
  const stop = observe((event) => {
    if (event.type.startsWith('compaction') || event.type === 'agent_end' || String(event.purpose).startsWith('compaction'))
      events.push(event);
  });
  const handle = init(Chatty, { id: 'c1' });
  const first = await handle.read(await handle.dispatch('tell me a long story')).finally(stop);
  expect(first.text).toBe(long);
  // Observers see the compaction's bounds, inside the operation that ran it.
  // The summarization call is a turn of its own purpose, without a turn_start.
  expect(events.map((e) => e.type)).toEqual(['compaction_start', 'turn_request', 'turn', 'compaction', 'agent_end']);
  expect(events[0]).toMatchObject({ reason: 'threshold', estimatedTokens: expect.any(Number), session: 'default' });
  // Here the cut splits the only turn: its start is summarized as a split-turn prefix.
  expect(events[1]).toMatchObject({ purpose: 'compaction_prefix', request: { input: { messages: [{ role: 'user' }] } } });
  expect(events[2]).toMatchObject({
    purpose: 'compaction_prefix',
    turnId: events[1]!.turnId,
    isError: false,
    response: { usage: expect.any(Object) },
  });
  expect(events[3]).toMatchObject({
    isError: false,
    messagesBefore: 2,
    messagesAfter: expect.any(Number),
    usage: { input: expect.any(Number) },
  });
  expect(ctx.server.requests).toHaveLength(2);
  const summarization = ctx.server.requests[1]!;
  expect(summarization.messages[0]!.content).toContain('tell me a long story');
  expect(summarization.tools).toEqual([]);

  const second = await handle.read(await handle.dispatch('and then?'));
  expect(second.text).toBe('second answer');
  const next = ctx.server.requests[2]!;
  expect(next.messages[0]!.content).toContain('<compaction type="context_summary">');
  expect(next.messages[0]!.content).toContain('SUMMARY OF THE EARLIER CONVERSATION');
  expect(next.messages.at(-1)!.content).toBe('and then?');
  // The kept suffix follows the summary; the summarized user turn is gone from the context.
  expect(next.messages.some((m) => m.content === 'tell me a long story')).toBe(false);
});

test('compaction: false disables the threshold trigger', async () => {
  await ctx.start([NoCompaction], { contextWindow: 2000 });
  ctx.server.script({ text: long, usage: { input: 1500, output: 100 } }, { text: 'second' });
  const handle = init(NoCompaction, { id: 'c2' });
  await handle.read(await handle.dispatch('tell me a long story'));
  await handle.read(await handle.dispatch('and then?'));
  expect(ctx.server.requests).toHaveLength(2);
  expect(ctx.server.requests[1]!.messages[0]!.content).toBe('tell me a long story');
});

test('a context overflow compacts once and retries the turn', async () => {
  await ctx.start([Chatty], { contextWindow: 200000 });
  ctx.server.script(
    { text: long },
    { status: 400, errorBody: 'prompt is too long: 250000 tokens > 200000 maximum' },
    { text: 'SUMMARY' },
    { text: 'answer after compaction' },
  );
  const handle = init(Chatty, { id: 'c3' });
  await handle.read(await handle.dispatch('first'));
  const reply = await handle.read(await handle.dispatch('second'));
  expect(reply.text).toBe('answer after compaction');
  expect(ctx.server.requests[3]!.messages[0]!.content).toContain('<compaction type="context_summary">');
});
