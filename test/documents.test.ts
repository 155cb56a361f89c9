import { afterEach, expect, test, vi } from 'vitest';
import * as v from 'valibot';
import { defineTool, init, useModel, useTool } from '@flue/runtime';
import { useScriptedRuntime } from './support/scripted-runtime.ts';

const ctx = useScriptedRuntime();

// Bytes that are not valid UTF-8 text, so any re-encoding on the way would show.
const pdf = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.from([0xe2, 0xe3, 0xcf, 0xd3, 0x00, 0xff]), Buffer.from('\n%%EOF')]);

let promptModel = 'anthropic/claude-haiku-4-5';
const readPdf = defineTool({
  name: 'read_pdf',
  description: 'Ask a helper model about the PDF.',
  input: v.object({}),
  harness: true,
  async run({ harness }) {
    const reply = await harness.prompt('What does the PDF say?', {
      model: promptModel,
      documents: [{ type: 'document', data: pdf.toString('base64'), mimeType: 'application/pdf' }],
    });
    return reply.text;
  },
});

function Reader() {
  useModel('anthropic/claude-haiku-4-5');
  useTool(readPdf);
  return 'Read documents.';
}

function PlainReader() {
  useModel('scripted/model');
  useTool(readPdf);
  return 'Read documents.';
}

const withDocument = (body: string) => ({
  message: {
    kind: 'user' as const,
    body,
    attachments: [{ type: 'document' as const, data: pdf.toString('base64'), mimeType: 'application/pdf', filename: 'report.pdf' }],
  },
});

afterEach(() => {
  vi.restoreAllMocks();
});

test('a delivered PDF reaches an Anthropic Messages model as a native document block with its exact bytes', async () => {
  await ctx.start([Reader]);
  ctx.server.script({ text: 'It is a report.' }, { text: 'Still a report.' });
  const handle = init(Reader, { id: 'doc-anthropic' });
  expect((await handle.read(await handle.dispatch(withDocument('Summarize this')))).text).toBe('It is a report.');
  expect((await handle.read(await handle.dispatch('And again?'))).text).toBe('Still a report.');

  for (const request of ctx.server.requests) {
    const blocks = request.body.messages[0].content as Record<string, any>[];
    expect(blocks[0]).toMatchObject({ type: 'text', text: 'Summarize this' });
    const document = blocks.find((block) => block.type === 'document')!;
    expect(document.source).toEqual({ type: 'base64', media_type: 'application/pdf', data: pdf.toString('base64') });
    expect(document.title).toBe('report.pdf');
    expect(Buffer.from(document.source.data, 'base64').equals(pdf)).toBe(true);
    expect(JSON.stringify(request.body)).not.toContain('flue-document');
    expect(JSON.stringify(request.body)).not.toContain('omitted');
  }
});

test('harness.prompt documents reach an Anthropic Messages model natively', async () => {
  promptModel = 'anthropic/claude-haiku-4-5';
  await ctx.start([Reader]);
  ctx.server.script({ toolCalls: [{ name: 'read_pdf', arguments: {} }] }, { text: 'Helper: a report.' }, { text: 'Done.' });
  const handle = init(Reader, { id: 'doc-harness' });
  expect((await handle.read(await handle.dispatch('Use the tool'))).text).toBe('Done.');
  const scratch = ctx.server.requests[1]!.body;
  const document = (scratch.messages[0].content as Record<string, any>[]).find((block) => block.type === 'document')!;
  expect(document.source).toEqual({ type: 'base64', media_type: 'application/pdf', data: pdf.toString('base64') });
});

test('other model APIs get a placeholder, and the runtime warns once per API', async () => {
  const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
  promptModel = 'scripted/model';
  await ctx.start([PlainReader]);
  ctx.server.script(
    { text: 'No document here.' },
    { text: 'Nor here.' },
    { toolCalls: [{ name: 'read_pdf', arguments: {} }] },
    { text: 'Helper.' },
    { text: 'Done.' },
  );
  const handle = init(PlainReader, { id: 'doc-plain' });
  await handle.read(await handle.dispatch(withDocument('Summarize this')));
  await handle.read(await handle.dispatch(withDocument('And this one')));
  await handle.read(await handle.dispatch('Use the tool'));

  const userContents = (index: number) =>
    (ctx.server.requests[index]!.body.messages as { role: string; content: unknown }[])
      .filter((m) => m.role === 'user')
      .map((m) => JSON.stringify(m.content));
  expect(userContents(0)[0]).toContain('[document report.pdf omitted: this model API does not accept documents]');
  expect(userContents(1)).toHaveLength(2);
  for (const content of userContents(1))
    expect(content).toContain('[document report.pdf omitted: this model API does not accept documents]');
  expect(userContents(3)[0]).toContain('[document omitted: this model API does not accept documents]');
  for (const request of ctx.server.requests) expect(JSON.stringify(request.body)).not.toContain(pdf.toString('base64'));

  const documentWarnings = warn.mock.calls.filter((call) => String(call[0]).includes('does not accept documents'));
  expect(documentWarnings).toHaveLength(1);
  expect(String(documentWarnings[0]![0])).toContain('"openai-completions"');
});

function Summarizing() {
  useModel('anthropic/claude-haiku-4-5', { compaction: { keepRecentTokens: 20 } });
  return 'Chat.';
}

test('a compaction summary request names a delivered PDF as [document], never its reference or bytes', async () => {
  await ctx.start([Summarizing], { contextWindow: 2000 });
  ctx.server.script({ text: 'word '.repeat(120), usage: { input: 1500, output: 100 } }, { text: 'SUMMARY' });
  const handle = init(Summarizing, { id: 'doc-compaction' });
  await handle.read(await handle.dispatch(withDocument('Summarize this')));
  const summarization = JSON.stringify(ctx.server.requests[1]!.body);
  expect(summarization).toContain('[document]');
  expect(summarization).not.toContain('flue-document');
  expect(summarization).not.toContain(pdf.toString('base64'));
});
