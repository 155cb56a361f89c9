import { expect, test } from 'vitest';
import * as v from 'valibot';
import { type FlueEvent, init, observe, useModel, useTool } from '@flue/runtime';
import type { RecordedRequest } from '@flue/runtime/testing';
import { DEFAULT_CONTEXT_WINDOW } from '../src/runtime/model/compaction.ts';
import { configuredRuntime } from '../src/runtime/host/runtime.ts';
import { useScriptedRuntime } from './support/scripted-runtime.ts';
import { expectReduced } from './support/reduced-text.ts';

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

// ── The request always fits the window ──────────────────────────────────────────────────────

/** A request's estimated input tokens at four characters a token: system prompt, tools, messages. */
function requestTokens(request: RecordedRequest): number {
  let chars = (request.system ?? '').length + JSON.stringify(request.tools).length;
  for (const message of request.messages) chars += message.content.length + JSON.stringify(message.toolCalls ?? []).length;
  return Math.ceil(chars / 4);
}

const isSummarization = (request: RecordedRequest) => (request.system ?? '').startsWith('You write summaries');

let readSizes: number[] = [];
function Reader() {
  useModel('anthropic/claude-haiku-4-5');
  useTool({
    name: 'read',
    description: 'Read a part.',
    input: v.object({ n: v.number() }),
    run: ({ data }) => `part ${data.n}: ${'r'.repeat(readSizes[data.n] ?? 100)} end of part ${data.n}`,
  });
  return 'Read everything.';
}

test('a model without a known window gets the default one: an oversized message reaches it reduced, the log keeps it whole', async () => {
  await ctx.start([Chatty], { contextWindow: 0 });
  ctx.server.script({ text: 'got the gist' });
  const body = `BEGIN ${'lorem ipsum '.repeat(40_000)} END`;
  const handle = init(Chatty, { id: 'unknown-window' });
  expect((await handle.read(await handle.dispatch(body))).text).toBe('got the gist');
  const [request] = ctx.server.requests;
  expect(requestTokens(request!)).toBeLessThanOrEqual(DEFAULT_CONTEXT_WINDOW);
  expectReduced(request!.messages.at(-1)!.content, body, 'message', DEFAULT_CONTEXT_WINDOW);
  const history = (await configuredRuntime()!.history('Chatty', 'unknown-window'))!;
  expect((history.messages[0]!.parts[0] as { text: string }).text).toBe(body);
});

test('a long tool loop with oversized results stays within the window: compaction before a turn, reduced results, no dead end', async () => {
  const contextWindow = 8000;
  await ctx.start([Reader], { contextWindow });
  // Every third result alone is far over the window; the others add up past it.
  readSizes = Array.from({ length: 13 }, (_, n) => (n % 3 === 2 ? 200_000 : 3000));
  let reads = 0;
  const step = (request: RecordedRequest) =>
    isSummarization(request)
      ? { text: `SUMMARY ${reads}` }
      : reads < 12
        ? { toolCalls: [{ name: 'read', arguments: { n: ++reads } }] }
        : { text: 'all read' };
  ctx.server.script(...Array.from({ length: 40 }, () => step));
  const handle = init(Reader, { id: 'loop' });
  expect((await handle.read(await handle.dispatch('read all twelve parts'))).text).toBe('all read');

  const requests = ctx.server.requests;
  const summaries = requests.filter(isSummarization);
  expect(summaries.length).toBeGreaterThan(0);
  for (const request of requests) expect(requestTokens(request)).toBeLessThanOrEqual(contextWindow);
  // The oversized results reached the model reduced (their JSON text), with the marker telling it how to get the rest.
  const sent = requests.flatMap((request) => request.messages).filter((m) => m.role === 'tool' && m.content.startsWith('"part 2:'));
  expect(sent.length).toBeGreaterThan(0);
  expectReduced(sent[0]!.content, JSON.stringify(`part 2: ${'r'.repeat(200_000)} end of part 2`), 'tool result', contextWindow);
  // After a compaction the next request leads with the summary.
  const after = requests[requests.indexOf(summaries[0]!) + 1]!;
  expect(after.messages[0]!.content).toContain('<compaction type="context_summary">');
  // The log keeps every result whole.
  const history = (await configuredRuntime()!.history('Reader', 'loop'))!;
  const outputs = history.messages.flatMap((m) => m.parts).filter((p) => p.type === 'dynamic-tool') as { output?: unknown }[];
  expect(outputs).toHaveLength(12);
  expect(JSON.stringify(outputs[1]!.output)).toContain('r'.repeat(200_000));
});

test('compaction: { contextWindow } sets the window a model is held to', async () => {
  function Small() {
    useModel('anthropic/claude-haiku-4-5', { compaction: { contextWindow: 4096 } });
    return 'Chat.';
  }
  await ctx.start([Small], { contextWindow: 0 });
  ctx.server.script({ text: 'ok' });
  const body = `BEGIN ${'lorem ipsum '.repeat(10_000)} END`;
  const handle = init(Small, { id: 'set-window' });
  expect((await handle.read(await handle.dispatch(body))).text).toBe('ok');
  expect(requestTokens(ctx.server.requests[0]!)).toBeLessThanOrEqual(4096);
  expectReduced(ctx.server.requests[0]!.messages.at(-1)!.content, body, 'message', 4096);
});
