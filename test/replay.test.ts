/**
 * `replayConversation()` from `@flue/runtime/testing`, offline: a recorded conversation replayed
 * against the unchanged agent reports no divergence and calls no model; a changed tool, prompt or
 * tool description reports the real divergence at the turn where it happened.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConversationExport, exportConversation, init, useModel, useTool } from '@flue/runtime';
import { sqlite, start } from '@flue/runtime/node';
import {
  type RecordedRequest,
  ReplayDivergenceError,
  type ScriptedModelServer,
  type ScriptedResponse,
  replayConversation,
  startScriptedModelServer,
} from '@flue/runtime/testing';
import * as v from 'valibot';
import { seedProviders } from './support/scripted-runtime.ts';

const MODEL = 'anthropic/claude-haiku-4-5';

function reply(request: RecordedRequest): ScriptedResponse {
  const last = request.messages.at(-1)!;
  if (last.role === 'user' && last.content.includes('cost')) return { toolCalls: [{ name: 'price', arguments: { item: 'apple' } }] };
  if (last.role === 'tool') return { text: `It costs ${last.content}.` };
  return { text: `heard: ${last.content}` };
}

function priceTool(price: number, description = 'Looks up a price.') {
  return { name: 'price', description, input: v.object({ item: v.string() }), run: () => ({ output: price }) };
}

function Shop() {
  useModel(MODEL);
  useTool(priceTool(42));
  return 'You sell fruit.';
}

/** The next version: the price tool now answers 43. */
function ShopRepriced() {
  useModel(MODEL);
  useTool(priceTool(43));
  return 'You sell fruit.';
}

/** The next version: other instructions. */
function ShopReworded() {
  useModel(MODEL);
  useTool(priceTool(42));
  return 'You sell fruit and vegetables.';
}

/** The next version: the tool is described differently. */
function ShopRedescribed() {
  useModel(MODEL);
  useTool(priceTool(42, 'Looks up the price of one item.'));
  return 'You sell fruit.';
}

let server: ScriptedModelServer;
let recording: ConversationExport;

beforeAll(async () => {
  server = await startScriptedModelServer({ fallback: reply });
  const flue = await start({ agents: [Shop], db: sqlite(), providers: seedProviders(server), env: {} });
  const handle = init(Shop, { id: 'customer' });
  const pixel = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489', 'hex').toString('base64');
  await handle.read(
    await handle.dispatch({
      message: { kind: 'user', body: 'what does an apple cost?', attachments: [{ type: 'image', data: pixel, mimeType: 'image/png' }] },
      initialData: { store: 'north' },
    }),
  );
  await handle.read(await handle.dispatch('thanks'));
  recording = await exportConversation(Shop, 'customer');
  await flue.stop();
  // A recording survives a trip through a JSON file.
  recording = JSON.parse(JSON.stringify(recording)) as ConversationExport;
});
afterAll(() => server.close());

describe('replayConversation()', () => {
  it('replays the unchanged agent with every answer from the recording and no divergence, calling no model', async () => {
    const before = server.requests.length;
    const report = await replayConversation({ agent: Shop, recording });
    expect(report.divergences).toEqual([]);
    expect(report.turns).toEqual([
      { delivery: 0, turn: 0, answeredFrom: 'recording' },
      { delivery: 0, turn: 1, answeredFrom: 'recording' },
      { delivery: 1, turn: 0, answeredFrom: 'recording' },
    ]);
    expect(report.replayed.map((delivery) => delivery.reply)).toEqual(['It costs 42.', 'heard: thanks']);
    expect(() => report.expectNoDivergence()).not.toThrow();
    expect(server.requests.length).toBe(before);
    // Delivered again as recorded: the initial data and the attachment's bytes.
    const [replayedRoot, recordedRoot] = [report.export.conversations[0]!, recording.conversations[0]!];
    expect(replayedRoot.batches[0]!.records[0]).toMatchObject({ initialData: { store: 'north' } });
    expect(replayedRoot.attachments.map((a) => [a.ref.digest, a.data])).toEqual(
      recordedRoot.attachments.map((a) => [a.ref.digest, a.data]),
    );
  });

  it('answers tool calls from the recording unless they run live; a live tool that changed diverges at its turn', async () => {
    // From the recording, the new price never runs.
    expect((await replayConversation({ agent: ShopRepriced, recording })).divergences).toEqual([]);

    const report = await replayConversation({ agent: ShopRepriced, recording, liveTools: ['price'], model: { text: 'It costs 43.' } });
    expect(report.divergences).toEqual([
      expect.objectContaining({
        delivery: 0,
        turn: 0,
        kind: 'tool_results',
        recorded: { isError: false, content: '42' },
        replayed: { isError: false, content: '43' },
      }),
    ]);
    // The turn after the changed result no longer matches the recording: the scripted model answered it.
    expect(report.turns[1]).toEqual({ delivery: 0, turn: 1, answeredFrom: 'model' });
    expect(report.replayed[0]!.reply).toBe('It costs 43.');
    const error = (() => {
      try {
        report.expectNoDivergence();
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(ReplayDivergenceError);
    expect((error as ReplayDivergenceError).message).toContain('delivery 0, turn 0: price returned something else');
  });

  it('reports changed instructions and a changed tool description at the first turn', async () => {
    const reworded = await replayConversation({ agent: ShopReworded, recording });
    expect(reworded.divergences.map(({ delivery, turn, kind }) => ({ delivery, turn, kind }))).toEqual([
      { delivery: 0, turn: 0, kind: 'instructions' },
      { delivery: 1, turn: 0, kind: 'instructions' },
    ]);
    const redescribed = await replayConversation({ agent: ShopRedescribed, recording });
    expect(redescribed.divergences[0]).toMatchObject({ delivery: 0, turn: 0, kind: 'tools' });
  });
});
