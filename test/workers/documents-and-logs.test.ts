import { Hono } from 'hono';
import { afterEach, expect, test } from 'vitest';
import { init } from '@flue/runtime';
import { createAgentRouter } from '@flue/runtime/routing';
import { ECHO_LANE, Echo, openCrawlGate } from './agents.ts';
import { laneRequests, resetLane, scriptLane } from './lanes.ts';
import { LAB_PERSIST_LANE, SandboxLab } from './sandbox-agents.ts';
import './worker.ts';

afterEach(async () => {
  await resetLane(ECHO_LANE);
  await resetLane(LAB_PERSIST_LANE);
});

const pdf = btoa('%PDF-1.7\n\u00e2\u00e3\u00cf\u00d3\n%%EOF');
const withPdf = {
  kind: 'user' as const,
  body: 'Summarize.',
  attachments: [{ type: 'document' as const, data: pdf, mimeType: 'application/pdf', filename: 'memo.pdf' }],
};

test('inside a Durable Object a PDF reaches an Anthropic Messages model as a document block', async () => {
  await scriptLane(LAB_PERSIST_LANE, { text: 'A memo.' });
  const handle = init(SandboxLab, { id: 'persist-pdf' });
  expect((await handle.read(await handle.dispatch({ message: withPdf }))).text).toBe('A memo.');
  const [request] = await laneRequests(LAB_PERSIST_LANE);
  const blocks = request!.body.messages.at(-1).content as { type: string; source?: unknown }[];
  expect(blocks.find((block) => block.type === 'document')!.source).toEqual({ type: 'base64', media_type: 'application/pdf', data: pdf });
});

test('inside a Durable Object other model APIs get the placeholder, and tool log lines come in a progress chunk, not on the output chunk', async () => {
  await scriptLane(ECHO_LANE, { toolCalls: [{ id: 'call_do_log', name: 'lookup', arguments: { key: 'k1' } }] }, { text: 'Found.' });
  const handle = init(Echo, { id: 'pdf-echo' });
  const chunks: { type: string; [key: string]: unknown }[] = [];
  await handle.read(await handle.dispatch({ message: withPdf }), { onEvent: (chunk) => chunks.push(chunk as (typeof chunks)[number]) });
  const requests = await laneRequests(ECHO_LANE);
  expect(JSON.stringify(requests[0]!.body.messages)).toContain('[document memo.pdf omitted: this model API does not accept documents]');
  expect(JSON.stringify(requests[0]!.body)).not.toContain(pdf);
  expect(chunks.find((chunk) => chunk.type === 'tool-input' && 'progress' in chunk)).toMatchObject({
    toolCallId: 'call_do_log',
    toolName: 'lookup',
    progress: [{ level: 'info', message: 'looked up', attributes: { key: 'k1' } }],
  });
  expect(chunks.find((chunk) => chunk.type === 'tool-output')).not.toHaveProperty('logs');
  expect(JSON.stringify(requests[1]!.body)).not.toContain('looked up');
});

test("inside a Durable Object a running tool's progress reaches read({ onEvent }) and the updates view before its result", async () => {
  await scriptLane(ECHO_LANE, { toolCalls: [{ id: 'call_crawl', name: 'crawl', arguments: {} }] }, { text: 'Crawled.' });
  const handle = init(Echo, { id: 'progress-do' });
  const chunks: { type: string; [key: string]: unknown }[] = [];
  const reply = await handle.read(await handle.dispatch('Crawl.'), {
    onEvent: (chunk) => {
      chunks.push(chunk as (typeof chunks)[number]);
      // The tool waits for this: its first line reached the reader while it ran.
      if (chunk.type === 'tool-input' && 'progress' in chunk) openCrawlGate();
    },
  });
  expect(reply).toMatchObject({ text: 'Crawled.', data: {} });
  const progress = chunks.filter((chunk) => chunk.type === 'tool-input' && 'progress' in chunk);
  expect(progress.map((chunk) => chunk.progress)).toEqual([
    [{ level: 'info', message: 'page 1 fetched', timestamp: expect.any(String) }],
    [{ level: 'info', message: 'page 2 fetched', timestamp: expect.any(String) }],
  ]);
  expect(chunks.indexOf(progress[1]!)).toBeLessThan(chunks.findIndex((chunk) => chunk.type === 'tool-output'));
  // Replayable: the updates view from the origin has them too, in the same order.
  const app = new Hono().route('/agents/echo', createAgentRouter(Echo));
  const updates = await app.fetch(new Request('http://flue.test/agents/echo/progress-do?view=updates&offset=-1'));
  const replay = (await updates.json()) as typeof chunks;
  const types = replay.map((chunk) => (chunk.type === 'tool-input' && 'progress' in chunk ? 'progress' : chunk.type));
  expect(types.filter((type) => type === 'progress' || type === 'tool-output')).toEqual(['progress', 'progress', 'tool-output']);
  expect(JSON.stringify((await laneRequests(ECHO_LANE))[1]!.body)).not.toContain('page 1 fetched');
});
