import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, test } from 'vitest';
import * as v from 'valibot';
import {
  AgentInstanceNotFoundError,
  type ConversationStreamChunk,
  PayloadTooLargeError,
  dispatch,
  exportConversation,
  fork,
  getAgentInstance,
  init,
  useModel,
  usePersistentState,
  useTool,
} from '@flue/runtime';
import { sqlite } from '@flue/runtime/node';
import { createAgentRouter } from '../src/runtime/routing.ts';
import { configuredRuntime } from '../src/runtime/host/runtime.ts';
import { MAX_MESSAGE_BYTES, MAX_REQUEST_BODY_BYTES, deliveredMessageSize } from '../src/runtime/common/limits.ts';
import { useScriptedRuntime } from './support/scripted-runtime.ts';
import { storeRows } from './support/store-rows.ts';
import { expectReduced } from './support/reduced-text.ts';

const ctx = useScriptedRuntime();
const MiB = 1024 * 1024;

/** JSON data of about `bytes` UTF-8 bytes, with quotes, escapes and multi-byte characters. */
function bigOutput(bytes: number): { rows: string[] } {
  const row = 'Zoë said "hi" \\ — naïve café 😀 €\n'.repeat(32);
  const perRow = new TextEncoder().encode(JSON.stringify(row)).byteLength + 1;
  return { rows: Array.from({ length: Math.ceil(bytes / perRow) }, (_, i) => `${row}${i}`) };
}

function tmpDb(): string {
  return join(mkdtempSync(join(tmpdir(), 'flue-large-')), 'flue.db');
}

function count(path: string, sql: string): number {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return Number(storeRows(db, sql)[0]?.n ?? 0);
  } finally {
    db.close();
  }
}

let dumpBytes = 0;
function Dumper() {
  useModel('scripted/model');
  useTool({ name: 'dump', description: 'Dump data.', input: v.object({}), run: () => ({ output: bigOutput(dumpBytes) }) });
  useTool({ name: 'huge', description: 'Too much.', input: v.object({}), run: () => 'x'.repeat(25 * MiB) });
  useTool({
    name: 'memo',
    description: 'A large durable step.',
    input: v.object({}),
    durable: true,
    run: async ({ step }) => ({ output: ((await step.do('big', () => 'y'.repeat(25 * MiB))) as string).length }),
  });
  return 'Dump.';
}

let seenBlob: unknown;
function Keeper() {
  useModel('scripted/model');
  const [blob, setBlob] = usePersistentState<unknown>('blob', null);
  seenBlob = blob;
  useTool({ name: 'save', description: 'Save.', input: v.object({}), run: () => (setBlob(bigOutput(3 * MiB)), 'saved') });
  useTool({ name: 'oversave', description: 'Save too much.', input: v.object({}), run: () => (setBlob('z'.repeat(25 * MiB)), 'saved') });
  return 'Keep.';
}

let recited = '';
function Reciter() {
  useModel('scripted/model');
  useTool({ name: 'recite', description: 'Recite.', input: v.object({}), run: () => recited });
  return 'Recite.';
}

function Echo() {
  useModel('scripted/model');
  return 'Echo.';
}

function toolOutputs(chunks: ConversationStreamChunk[]): unknown[] {
  return chunks.filter((chunk) => chunk.type === 'tool-output').map((chunk) => (chunk as { output: unknown }).output);
}

describe('large values round-trip', () => {
  for (const size of [5, 20]) {
    test(`a tool returning ${size} MB of JSON reaches the reader and the history view byte-identically, the model reduced`, async () => {
      await ctx.start([Dumper], { db: sqlite(tmpDb()) });
      dumpBytes = size * 1_000_000;
      const expected = bigOutput(dumpBytes);
      const text = JSON.stringify(expected);
      expect(text.length).toBeGreaterThan(size * 1_000_000 * 0.8);
      ctx.server.script({ toolCalls: [{ name: 'dump', arguments: {} }] }, { text: 'Dumped.' });
      const handle = init(Dumper, { id: `dump-${size}` });
      const chunks: ConversationStreamChunk[] = [];
      const reply = await handle.read(await handle.dispatch('dump it'), { onEvent: (chunk) => chunks.push(chunk) });
      expect(reply.text).toBe('Dumped.');
      const [streamed] = toolOutputs(chunks);
      expect(JSON.stringify(streamed)).toBe(text);
      const history = (await configuredRuntime()!.history('Dumper', `dump-${size}`))!;
      const part = history.messages.flatMap((m) => m.parts).find((p) => p.type === 'dynamic-tool') as { output: unknown };
      expect(JSON.stringify(part.output)).toBe(text);
      // No model window holds it: the model gets its head and tail, told the rest was cut.
      const toolTurn = ctx.server.requests[1]!.messages.find((m) => m.role === 'tool')!;
      expectReduced(toolTurn.content, text, 'tool result', 128_000);
    }, 180_000);
  }

  test('a 20 MB user message round-trips to the history view and reaches the model reduced', async () => {
    await ctx.start([Echo]);
    const body = 'Grüße "aus" Köln 😀\n'.repeat(1_000_000).slice(0, 20_000_000);
    ctx.server.script({ text: 'Read it.' });
    const handle = init(Echo, { id: 'long' });
    expect((await handle.read(await handle.dispatch(body))).text).toBe('Read it.');
    expectReduced(ctx.server.requests[0]!.messages.at(-1)!.content, body, 'message', 128_000);
    const history = (await configuredRuntime()!.history('Echo', 'long'))!;
    expect((history.messages[0]!.parts[0] as { text: string }).text).toBe(body);
  });

  test('a large message and a large string tool output are stored once each and read back whole after a restart: history, export, fork', async () => {
    const path = tmpDb();
    await ctx.start([Reciter], { db: sqlite(path) });
    const body = 'Grüße "aus" Köln 😀\n'.repeat(250_000); // 5.5 MB of UTF-8
    recited = 'line "two"\n\tzwei é '.repeat(250_000);
    // Two conversations, so that neither model request holds both texts (that would compact).
    ctx.server.script({ text: 'Read.' }, { toolCalls: [{ name: 'recite', arguments: {} }] }, { text: 'Recited.' });
    const told = init(Reciter, { id: 'told' });
    expect((await told.read(await told.dispatch(body))).text).toBe('Read.');
    const asked = init(Reciter, { id: 'asked' });
    expect((await asked.read(await asked.dispatch('recite'))).text).toBe('Recited.');
    expectReduced(
      ctx.server.requests[2]!.messages.find((m) => m.role === 'tool')!.content,
      JSON.stringify(recited),
      'tool result',
      128_000,
    );
    // One copy of the message (the committed record names the submission's) and one of the output's
    // text, besides what a checkpoint of the fold holds (derived data, spilled whole).
    const utf8 = (text: string) => Buffer.byteLength(text);
    expect(count(path, `SELECT sum(length(data)) AS n FROM flue_spill WHERE key NOT LIKE '["checkpoint"%'`)).toBe(
      utf8(body) + utf8(JSON.stringify(recited)),
    );

    await ctx.flue!.stop();
    ctx.flue = undefined;
    await ctx.start([Reciter], { db: sqlite(path) });
    const history = (await configuredRuntime()!.history('Reciter', 'told'))!;
    expect((history.messages[0]!.parts[0] as { text: string }).text).toBe(body);
    const part = (await configuredRuntime()!.history('Reciter', 'asked'))!.messages
      .flatMap((m) => m.parts)
      .find((p) => p.type === 'dynamic-tool') as { output: unknown };
    expect(part.output).toBe(recited);

    const exportedMessage = (await exportConversation(Reciter, 'told')).conversations[0]!.batches.flatMap((batch) => batch.records);
    expect(exportedMessage.find((record) => record.type === 'user_message')).toMatchObject({ body });
    const exported = await exportConversation(Reciter, 'asked');
    const results = exported.conversations[0]!.batches.flatMap((batch) => batch.records).find((record) => record.type === 'tool_results');
    expect((results as { outcomes: unknown[] }).outcomes[0]).toMatchObject({ output: recited, content: JSON.stringify(recited) });

    const forked = await fork(Reciter, { from: 'told', id: 'told-fork' });
    const forkHistory = (await configuredRuntime()!.history('Reciter', forked.id))!;
    expect(JSON.stringify(forkHistory.messages)).toBe(JSON.stringify(history.messages));
    // The fork stores its own copy: no conversation names another's chunks.
    expect(count(path, `SELECT sum(length(data)) AS n FROM flue_spill WHERE key NOT LIKE '["checkpoint"%'`)).toBe(
      2 * utf8(body) + utf8(JSON.stringify(recited)),
    );
  }, 120_000);

  test('3 MB of persistent state persists across a restart', async () => {
    const path = tmpDb();
    await ctx.start([Keeper], { db: sqlite(path) });
    ctx.server.script({ toolCalls: [{ name: 'save', arguments: {} }] }, { text: 'Saved.' });
    const handle = init(Keeper, { id: 'keep' });
    await handle.read(await handle.dispatch('save'));
    await ctx.flue!.stop();
    ctx.flue = undefined;
    seenBlob = undefined;
    await ctx.start([Keeper], { db: sqlite(path) });
    ctx.server.script({ text: 'Still here.' });
    await handle.read(await handle.dispatch('again'));
    expect(JSON.stringify(seenBlob)).toBe(JSON.stringify(bigOutput(3 * MiB)));
    expect(count(path, 'SELECT count(*) AS n FROM flue_spill')).toBeGreaterThan(0);
  });
});

describe('limits', () => {
  async function refused(promise: Promise<unknown>, field: string | RegExp): Promise<PayloadTooLargeError> {
    const error = await promise.then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(PayloadTooLargeError);
    const typed = error as PayloadTooLargeError;
    expect(typed.type).toBe('payload_too_large');
    expect(typed.status).toBe(413);
    expect(typed.meta!.field).toMatch(field);
    expect(typed.meta!.size).toBeGreaterThan(typed.meta!.limit as number);
    return typed;
  }

  test('a message over 32 MiB and an attachment over 14 MiB of base64 are refused before anything is stored', async () => {
    const path = tmpDb();
    await ctx.start([Echo], { db: sqlite(path) });
    const message = await refused(dispatch(Echo, { id: 'm', message: 'x'.repeat(32 * MiB) }), 'message');
    expect(message.message).toMatch(/^message is 32(\.\d+)? MiB, over the 32 MiB limit\.$/);
    await refused(
      dispatch(Echo, {
        id: 'm',
        message: { kind: 'user', body: 'hi', initialData: undefined } as never,
        initialData: 'x'.repeat(32 * MiB),
      }),
      'message',
    );
    await refused(
      dispatch(Echo, {
        id: 'm',
        message: { kind: 'user', body: '', attachments: [{ type: 'image', data: 'A'.repeat(14 * MiB + 4), mimeType: 'image/png' }] },
      }),
      'message.attachments[0].data',
    );
    expect(await getAgentInstance(Echo, 'm')).toBeNull();
    expect(count(path, 'SELECT count(*) AS n FROM flue_submissions')).toBe(0);
    expect(count(path, 'SELECT count(*) AS n FROM flue_streams')).toBe(0);
    expect(ctx.server.requests).toHaveLength(0);
  });

  test('dispatch() and HTTP pass a message and a body exactly at their limits and refuse one byte more', async () => {
    const path = tmpDb();
    await ctx.start([Echo], { db: sqlite(path) });
    // A uid no incarnation has: admission answers 404 once every size check has passed, so a
    // value at the limit is shown accepted without being stored or sent to a model.
    const uid = 'inst_missing';
    const overhead = deliveredMessageSize({ kind: 'user', body: '' });
    const ofSize = (bytes: number) => ({ kind: 'user' as const, body: 'x'.repeat(bytes - overhead) });
    const app = createAgentRouter(Echo);
    const post = (body: string) =>
      app.request('/edge', {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
      });
    const errorOf = async (response: Response) =>
      ((await response.json()) as { error: { type: string; meta?: Record<string, unknown> } }).error;

    await expect(dispatch(Echo, { id: 'edge', message: ofSize(MAX_MESSAGE_BYTES), uid })).rejects.toBeInstanceOf(
      AgentInstanceNotFoundError,
    );
    const viaDispatch = await refused(dispatch(Echo, { id: 'edge', message: ofSize(MAX_MESSAGE_BYTES + 1), uid }), 'message');
    expect(viaDispatch.meta).toMatchObject({ limit: MAX_MESSAGE_BYTES, size: MAX_MESSAGE_BYTES + 1 });

    const atMessage = await post(JSON.stringify({ ...ofSize(MAX_MESSAGE_BYTES), uid }));
    expect(atMessage.status).toBe(404);
    const pastMessage = await post(JSON.stringify({ ...ofSize(MAX_MESSAGE_BYTES + 1), uid }));
    expect(pastMessage.status).toBe(413);
    expect((await errorOf(pastMessage)).meta).toEqual({ field: 'message', limit: MAX_MESSAGE_BYTES, size: MAX_MESSAGE_BYTES + 1 });

    // JSON allows trailing whitespace: a small message padded to the body limit.
    const small = JSON.stringify({ kind: 'user', body: 'hi', uid });
    const atBody = await post(small.padEnd(MAX_REQUEST_BODY_BYTES, ' '));
    expect(atBody.status).toBe(404);
    const pastBody = await post(small.padEnd(MAX_REQUEST_BODY_BYTES + 1, ' '));
    expect(pastBody.status).toBe(413);
    expect((await errorOf(pastBody)).meta).toEqual({
      field: 'request body',
      limit: MAX_REQUEST_BODY_BYTES,
      size: MAX_REQUEST_BODY_BYTES + 1,
    });
    expect(count(path, 'SELECT count(*) AS n FROM flue_submissions')).toBe(0);
  });

  test('HTTP refuses an oversized body with 413 without holding it', async () => {
    const path = tmpDb();
    await ctx.start([Echo], { db: sqlite(path) });
    const app = createAgentRouter(Echo);
    const post = (body: BodyInit, headers: Record<string, string> = {}) =>
      app.request('/h', {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', ...headers },
        duplex: 'half',
      } as RequestInit);

    const declared = await post('{}', { 'content-length': String(40 * MiB) });
    expect(declared.status).toBe(413);
    expect(((await declared.json()) as { error: { type: string; meta: { field: string } } }).error).toMatchObject({
      type: 'payload_too_large',
      meta: { field: 'request body' },
    });

    let pulled = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled += MiB;
        controller.enqueue(new Uint8Array(MiB).fill(0x41));
      },
    });
    // Without Content-Length the size is counted while reading; an endless upload is cut off.
    const streamed = await post(endless);
    expect(streamed.status).toBe(413);
    expect(pulled).toBeLessThan(200 * MiB);

    expect(count(path, 'SELECT count(*) AS n FROM flue_submissions')).toBe(0);
  });

  test('a tool output over 24 MiB and a step value over 24 MiB become tool errors the model sees; nothing oversized is stored', async () => {
    const path = tmpDb();
    await ctx.start([Dumper], { db: sqlite(path) });
    ctx.server.script(
      {
        toolCalls: [
          { name: 'huge', arguments: {} },
          { name: 'memo', arguments: {} },
        ],
      },
      { text: 'Understood.' },
    );
    const handle = init(Dumper, { id: 'huge' });
    expect((await handle.read(await handle.dispatch('go'))).text).toBe('Understood.');
    const tools = ctx.server.requests[1]!.messages.filter((m) => m.role === 'tool');
    expect(tools[0]!.content).toMatch(/^Tool "huge" output is 25(\.\d+)? MiB, over the 24 MiB limit\. Return less: .*sandbox file/);
    expect(tools[1]!.content).toMatch(/Tool "memo" step "big" value is 25(\.\d+)? MiB, over the 24 MiB limit/);
    expect(count(path, 'SELECT count(*) AS n FROM flue_steps')).toBe(0);
    expect(count(path, 'SELECT count(*) AS n FROM flue_spill')).toBe(0);
  });

  test('a persistent state value over 24 MiB is refused by its setter', async () => {
    await ctx.start([Keeper]);
    ctx.server.script({ toolCalls: [{ name: 'oversave', arguments: {} }] }, { text: 'Could not.' });
    const handle = init(Keeper, { id: 'over' });
    expect((await handle.read(await handle.dispatch('save'))).text).toBe('Could not.');
    expect(ctx.server.requests[1]!.messages.find((m) => m.role === 'tool')!.content).toMatch(
      /usePersistentState\("blob"\) value is 25(\.\d+)? MiB, over the 24 MiB limit/,
    );
  });
});
