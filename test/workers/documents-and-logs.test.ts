import { afterEach, expect, test } from 'vitest';
import { init } from '@flue/runtime';
import { ECHO_LANE, Echo } from './agents.ts';
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

test('inside a Durable Object other model APIs get the placeholder, and tool log lines ride on the output chunk only', async () => {
  await scriptLane(ECHO_LANE, { toolCalls: [{ id: 'call_do_log', name: 'lookup', arguments: { key: 'k1' } }] }, { text: 'Found.' });
  const handle = init(Echo, { id: 'pdf-echo' });
  const chunks: { type: string; [key: string]: unknown }[] = [];
  await handle.read(await handle.dispatch({ message: withPdf }), { onEvent: (chunk) => chunks.push(chunk as (typeof chunks)[number]) });
  const requests = await laneRequests(ECHO_LANE);
  expect(JSON.stringify(requests[0]!.body.messages)).toContain('[document memo.pdf omitted: this model API does not accept documents]');
  expect(JSON.stringify(requests[0]!.body)).not.toContain(pdf);
  expect(chunks.find((chunk) => chunk.type === 'tool-output')).toMatchObject({
    toolCallId: 'call_do_log',
    logs: [{ level: 'info', message: 'looked up', attributes: { key: 'k1' } }],
  });
  expect(JSON.stringify(requests[1]!.body)).not.toContain('looked up');
});
