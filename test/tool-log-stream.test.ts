import { Hono } from 'hono';
import { expect, test } from 'vitest';
import * as v from 'valibot';
import { defineTool, init, useModel, useTool } from '@flue/runtime';
import { createAgentRouter } from '@flue/runtime/routing';
import { useScriptedRuntime } from './support/scripted-runtime.ts';

const ctx = useScriptedRuntime();

type Chunk = { type: string; [key: string]: any };

/** Opened by the test once it has seen the tool's first progress chunk: the tool is still running then. */
let openGate: () => void = () => {};

const crawl = defineTool({
  name: 'crawl',
  description: 'Crawls pages, logging progress.',
  input: v.object({ pages: v.number() }),
  async run({ data, log }) {
    log.info('fetched page 1 of 2', { page: 1, of: data.pages });
    await new Promise<void>((resolve) => {
      openGate = resolve;
    });
    log.warn('page 2 was slow');
    return { output: { pages: data.pages } };
  },
});

function Crawler() {
  useModel('anthropic/claude-haiku-4-5');
  useTool(crawl);
  return 'Crawl.';
}

const isProgress = (chunk: Chunk) => chunk.type === 'tool-input' && 'progress' in chunk;
const progressLines = (chunks: Chunk[]) => chunks.filter(isProgress).flatMap((chunk) => chunk.progress as Record<string, unknown>[]);

test("a running tool's log lines reach the reader in progress chunks before its result, replay from the log, and are never model context", async () => {
  await ctx.start([Crawler]);
  ctx.server.script({ toolCalls: [{ id: 'call_log', name: 'crawl', arguments: { pages: 2 } }] }, { text: 'Crawled.' });
  const handle = init(Crawler, { id: 'logs-1' });
  const chunks: Chunk[] = [];
  const receipt = await handle.dispatch('go');
  const reply = await handle.read(receipt, {
    onEvent: (chunk) => {
      chunks.push(chunk as Chunk);
      // The tool waits for this: its first line arrived while it ran.
      if (isProgress(chunk as Chunk)) openGate();
    },
  });
  expect(reply.text).toBe('Crawled.');
  // Not client data: the reply's data holds useDataWriter parts only.
  expect(reply.data).toEqual({});

  const first = chunks.findIndex(isProgress);
  const result = chunks.findIndex((chunk) => chunk.type === 'tool-output');
  expect(first).toBeGreaterThan(chunks.findIndex((chunk) => chunk.type === 'tool-input' && !('progress' in chunk)));
  expect(first).toBeLessThan(result);
  expect(chunks[first]).toEqual({
    type: 'tool-input',
    conversationId: expect.any(String),
    position: expect.any(Object),
    messageId: chunks[result - 1]?.messageId ?? expect.any(String),
    toolCallId: 'call_log',
    toolName: 'crawl',
    progress: [{ level: 'info', message: 'fetched page 1 of 2', attributes: { page: 1, of: 2 }, timestamp: expect.any(String) }],
  });
  expect(progressLines(chunks).map((line) => line.message)).toEqual(['fetched page 1 of 2', 'page 2 was slow']);
  // The result chunk carries no log lines.
  expect(chunks[result]).toEqual({
    type: 'tool-output',
    conversationId: expect.any(String),
    position: expect.any(Object),
    toolCallId: 'call_log',
    output: { pages: 2 },
    durationMs: expect.any(Number),
    timestamp: expect.any(String),
  });

  // Never part of the model's context: the next request carries the result, not the lines.
  const next = JSON.stringify(ctx.server.requests[1]!.body);
  expect(next).toContain('"pages":2');
  expect(next).not.toContain('fetched page 1');
  expect(next).not.toContain('page 2 was slow');

  // Durable: a reader attaching later replays them from any offset, plain and over SSE alike.
  const app = new Hono().route('/agents/crawler', createAgentRouter(Crawler));
  const updates = async (offset: string) =>
    (await (await app.fetch(new Request(`http://flue.test/agents/crawler/logs-1?view=updates&offset=${offset}`))).json()) as Chunk[];
  const replay = await updates('-1');
  expect(progressLines(replay).map((line) => line.message)).toEqual(['fetched page 1 of 2', 'page 2 was slow']);
  expect(replay.findIndex(isProgress)).toBeLessThan(replay.findIndex((chunk) => chunk.type === 'tool-output'));
  // From the offset just before the first progress batch, the reader starts (after the checkpoint) at that chunk.
  const before = String(chunks[first]!.position.batch - 1).padStart(16, '0');
  const tail = await updates(`${before}_${before}`);
  expect(tail.filter((chunk) => chunk.type !== 'stream-checkpoint')[0]).toMatchObject({
    type: 'tool-input',
    toolCallId: 'call_log',
    progress: [{ message: 'fetched page 1 of 2' }],
  });

  const sse = (await app.fetch(new Request('http://flue.test/agents/crawler/logs-1?view=updates&offset=-1&live=sse'))).body!.getReader();
  let text = '';
  while (!text.includes('"upToDate":true')) text += new TextDecoder().decode((await sse.read()).value);
  await sse.cancel();
  expect(text).toContain('"toolCallId":"call_log","toolName":"crawl","progress":[{"level":"info","message":"fetched page 1 of 2"');
});

test('a failing call keeps its lines; a chatty one is bounded with one marker; a quiet one writes no progress', async () => {
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
  const quiet = defineTool({ name: 'quiet', description: 'Says nothing.', input: v.object({}), run: () => 'ok' });
  function Flaky() {
    useModel('anthropic/claude-haiku-4-5');
    useTool(flaky);
    useTool(chatty);
    useTool(quiet);
    return 'Try.';
  }
  await ctx.start([Flaky]);
  ctx.server.script(
    {
      toolCalls: [
        { id: 'call_f', name: 'flaky', arguments: {} },
        { id: 'call_c', name: 'chatty', arguments: {} },
        { id: 'call_q', name: 'quiet', arguments: {} },
      ],
    },
    { text: 'Failed.' },
  );
  const handle = init(Flaky, { id: 'logs-3' });
  const chunks: Chunk[] = [];
  await handle.read(await handle.dispatch('go'), { onEvent: (chunk) => chunks.push(chunk as Chunk) });
  const of = (id: string) => progressLines(chunks.filter((chunk) => chunk.toolCallId === id));
  expect(of('call_f')).toEqual([
    {
      level: 'error',
      message: 'upstream refused',
      attributes: { status: 503, cause: { name: 'Error', message: 'busy' } },
      timestamp: expect.any(String),
    },
  ]);
  expect(chunks.find((chunk) => chunk.type === 'tool-output-error')).not.toHaveProperty('logs');
  const chattyLines = of('call_c');
  expect(chattyLines).toHaveLength(201);
  expect(chattyLines[199]!.message).toBe('line 199');
  expect(chattyLines[200]).toMatchObject({
    level: 'warn',
    message: '… 50 more log line(s) of this call dropped',
    attributes: { dropped: 50 },
  });
  // The burst cost one progress chunk, not 250.
  expect(chunks.filter((chunk) => isProgress(chunk) && chunk.toolCallId === 'call_c')).toHaveLength(1);
  expect(of('call_q')).toEqual([]);
  expect(JSON.stringify(ctx.server.requests[1]!.body)).not.toContain('upstream refused');
});

test('while the tool still runs, its progress is in the plain, long-poll and SSE updates views', async () => {
  await ctx.start([Crawler]);
  ctx.server.script({ toolCalls: [{ id: 'call_live', name: 'crawl', arguments: { pages: 2 } }] }, { text: 'Crawled.' });
  const app = new Hono().route('/agents/crawler', createAgentRouter(Crawler));
  const handle = init(Crawler, { id: 'logs-live' });
  const receipt = await handle.dispatch('go');
  const url = 'http://flue.test/agents/crawler/logs-live?view=updates';
  // Long-poll from the head until the progress chunk arrives; the tool is held at its gate meanwhile.
  let offset = '-1';
  let seen: Chunk[] = [];
  while (!seen.some(isProgress)) {
    const response = await app.fetch(new Request(`${url}&offset=${offset}${offset === '-1' ? '' : '&live=long-poll'}`));
    offset = response.headers.get('Stream-Next-Offset')!;
    seen = [...seen, ...((await response.json()) as Chunk[])];
  }
  expect(seen.some((chunk) => chunk.type === 'tool-output')).toBe(false);
  const plain = (await (await app.fetch(new Request(`${url}&offset=-1`))).json()) as Chunk[];
  expect(progressLines(plain).map((line) => line.message)).toEqual(['fetched page 1 of 2']);
  const sse = (await app.fetch(new Request(`${url}&offset=-1&live=sse`))).body!.getReader();
  let text = '';
  while (!text.includes('"upToDate":true')) text += new TextDecoder().decode((await sse.read()).value);
  await sse.cancel();
  expect(text).toContain('"progress":[{"level":"info","message":"fetched page 1 of 2"');
  expect(text).not.toContain('"type":"tool-output"');
  openGate();
  expect((await handle.read(receipt)).text).toBe('Crawled.');
});
