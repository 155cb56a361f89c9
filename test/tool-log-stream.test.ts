import { Hono } from 'hono';
import { expect, test } from 'vitest';
import * as v from 'valibot';
import { defineTool, init, useModel, useTool } from '@flue/runtime';
import { createAgentRouter } from '@flue/runtime/routing';
import { useScriptedRuntime } from './support/scripted-runtime.ts';

const ctx = useScriptedRuntime();

const crawl = defineTool({
  name: 'crawl',
  description: 'Crawls pages, logging progress.',
  input: v.object({ pages: v.number() }),
  async run({ data, log }) {
    log.info('fetched page 1 of 2', { page: 1, of: data.pages });
    log.warn('page 2 was slow');
    return { output: { pages: data.pages } };
  },
});

function Crawler() {
  useModel('anthropic/claude-haiku-4-5');
  useTool(crawl);
  return 'Crawl.';
}

type Chunk = { type: string; [key: string]: any };

const expectedLines = [
  { level: 'info', message: 'fetched page 1 of 2', attributes: { page: 1, of: 2 }, timestamp: expect.any(String) },
  { level: 'warn', message: 'page 2 was slow', timestamp: expect.any(String) },
];

test("tool log lines ride on the call's output chunk, are durable, and are never model context", async () => {
  await ctx.start([Crawler]);
  ctx.server.script({ toolCalls: [{ id: 'call_log', name: 'crawl', arguments: { pages: 2 } }] }, { text: 'Crawled.' });
  const handle = init(Crawler, { id: 'logs-1' });
  const chunks: Chunk[] = [];
  const receipt = await handle.dispatch('go');
  const reply = await handle.read(receipt, { onEvent: (chunk) => chunks.push(chunk as Chunk) });
  expect(reply.text).toBe('Crawled.');
  // Not client data: the reply's data holds useDataWriter parts only.
  expect(reply.data).toEqual({});

  expect(chunks.find((chunk) => chunk.type === 'tool-output')).toMatchObject({
    toolCallId: 'call_log',
    output: { pages: 2 },
    logs: expectedLines,
  });
  expect(chunks.filter((chunk) => 'logs' in chunk)).toHaveLength(1);

  // Never part of the model's context: the next request carries the result, not the lines.
  const next = JSON.stringify(ctx.server.requests[1]!.body);
  expect(next).toContain('"pages":2');
  expect(next).not.toContain('fetched page 1');
  expect(next).not.toContain('page 2 was slow');

  // Durable: a reader attaching later replays them from the log, over long-poll and SSE alike.
  const app = new Hono().route('/agents/crawler', createAgentRouter(Crawler));
  const replay = (await (await app.fetch(new Request('http://flue.test/agents/crawler/logs-1?view=updates&offset=-1'))).json()) as Chunk[];
  expect(replay.find((chunk) => chunk.type === 'tool-output')).toMatchObject({ toolCallId: 'call_log', logs: expectedLines });

  const sse = (await app.fetch(new Request('http://flue.test/agents/crawler/logs-1?view=updates&offset=-1&live=sse'))).body!.getReader();
  let text = '';
  while (!text.includes('"upToDate":true')) text += new TextDecoder().decode((await sse.read()).value);
  await sse.cancel();
  expect(text).toContain('"logs":[{"level":"info","message":"fetched page 1 of 2"');
});

test('a failing call keeps its lines on the error chunk; a chatty one is bounded', async () => {
  const flaky = defineTool({
    name: 'flaky',
    description: 'Logs, then fails.',
    input: v.object({}),
    run({ log }) {
      log.error('upstream refused', { status: 503, cause: new Error('busy') });
      throw new Error('upstream down');
    },
  });
  const chatty = defineTool({
    name: 'chatty',
    description: 'Logs a lot.',
    input: v.object({}),
    run({ log }) {
      for (let i = 0; i < 250; i++) log.info(`line ${i}`);
      return 'ok';
    },
  });
  function Flaky() {
    useModel('anthropic/claude-haiku-4-5');
    useTool(flaky);
    useTool(chatty);
    return 'Try.';
  }
  await ctx.start([Flaky]);
  ctx.server.script(
    {
      toolCalls: [
        { id: 'call_f', name: 'flaky', arguments: {} },
        { id: 'call_c', name: 'chatty', arguments: {} },
      ],
    },
    { text: 'Failed.' },
  );
  const handle = init(Flaky, { id: 'logs-3' });
  const chunks: Chunk[] = [];
  await handle.read(await handle.dispatch('go'), { onEvent: (chunk) => chunks.push(chunk as Chunk) });
  expect(chunks.find((chunk) => chunk.type === 'tool-output-error')).toMatchObject({
    toolCallId: 'call_f',
    logs: [{ level: 'error', message: 'upstream refused', attributes: { status: 503, cause: { name: 'Error', message: 'busy' } } }],
  });
  const logs = chunks.find((chunk) => chunk.type === 'tool-output')!.logs as { message: string }[];
  expect(logs).toHaveLength(201);
  expect(logs[199]!.message).toBe('line 199');
  expect(logs[200]!.message).toBe('[flue] 50 further log line(s) of this call were not kept in the conversation.');
  expect(JSON.stringify(ctx.server.requests[1]!.body)).not.toContain('upstream refused');
});

test('a tool that logs nothing adds no log part', async () => {
  const quiet = defineTool({ name: 'quiet', description: 'Says nothing.', input: v.object({}), run: () => 'ok' });
  function Quiet() {
    useModel('anthropic/claude-haiku-4-5');
    useTool(quiet);
    return 'Be quiet.';
  }
  await ctx.start([Quiet]);
  ctx.server.script({ toolCalls: [{ id: 'call_q', name: 'quiet', arguments: {} }] }, { text: 'Done.' });
  const handle = init(Quiet, { id: 'logs-2' });
  const chunks: Chunk[] = [];
  await handle.read(await handle.dispatch('go'), { onEvent: (chunk) => chunks.push(chunk as Chunk) });
  expect(chunks.filter((chunk) => 'logs' in chunk)).toEqual([]);
});
