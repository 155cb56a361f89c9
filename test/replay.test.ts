/**
 * `replayConversation()` from `@flue/runtime/testing`, offline: a recorded conversation replayed
 * against the unchanged agent reports no divergence and calls no model; a changed tool, prompt or
 * tool description reports the real divergence at the turn where it happened.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConversationExport, exportConversation, init, useModel, useSandbox, useTool, virtualSandbox } from '@flue/runtime';
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

const SUMMARY = 'SUMMARY: pages were read';

function reply(request: RecordedRequest): ScriptedResponse {
  const last = request.messages.at(-1)!;
  if (request.system?.startsWith('You write summaries')) return { text: SUMMARY };
  const page = /page (\d+):/.exec(last.role === 'tool' ? last.content : '');
  if (page)
    return Number(page[1]) < 3 ? { toolCalls: [{ name: 'page', arguments: { n: Number(page[1]) + 1 } }] } : { text: 'read 3 pages' };
  if (last.role === 'user' && last.content.includes('pages')) return { toolCalls: [{ name: 'page', arguments: { n: 1 } }] };
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

/** Reads long pages with a small window, so a response reading three of them compacts between its turns. */
function reader(pageText: (n: number) => string) {
  return function Reader() {
    useModel(MODEL, { compaction: { contextWindow: 6000, keepRecentTokens: 20 } });
    useTool({ name: 'page', description: 'Reads a page.', input: v.object({ n: v.number() }), run: ({ data }) => pageText(data.n) });
    return 'You read pages.';
  };
}
const Reader = reader((n) => `page ${n}: ${'lorem '.repeat(1000)}`);
/** The next version: page 3 reads differently. */
const ReaderRevised = reader((n) => `page ${n}: ${(n === 3 ? 'ipsum ' : 'lorem ').repeat(1000)}`);

/** With a sandbox, so the runtime adds its built-in file tools. */
function Desk() {
  useModel(MODEL);
  useSandbox(virtualSandbox());
  return 'You keep files.';
}

let server: ScriptedModelServer;
let recording: ConversationExport;
let compacted: ConversationExport;
let desk: ConversationExport;

beforeAll(async () => {
  server = await startScriptedModelServer({ fallback: reply });
  const flue = await start({ agents: [Shop, Reader, Desk], db: sqlite(), providers: seedProviders(server), env: {} });
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
  const pages = init(Reader, { id: 'reader' });
  await pages.read(await pages.dispatch('hello'));
  await pages.read(await pages.dispatch('read pages 1 to 3'));
  await pages.read(await pages.dispatch('thanks'));
  compacted = JSON.parse(JSON.stringify(await exportConversation(Reader, 'reader'))) as ConversationExport;
  const files = init(Desk, { id: 'desk' });
  await files.read(await files.dispatch('hello'));
  desk = JSON.parse(JSON.stringify(await exportConversation(Desk, 'desk'))) as ConversationExport;
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

  it('replays a conversation that compacted between turns: summaries answered from the recording, turns still in line', async () => {
    // The recording compacted inside the response that read the pages, before its last turn.
    const records = compacted.conversations[0]!.batches.flatMap((batch) => batch.records);
    const compaction = records.findIndex((record) => record.type === 'compaction');
    const compacting = (records[compaction] as { submissionId?: string } | undefined)?.submissionId;
    const lastTurn = records.findLastIndex((record) => record.type === 'assistant_completed' && record.submissionId === compacting);
    expect(compaction).toBeGreaterThan(0);
    expect(lastTurn).toBeGreaterThan(compaction);

    const before = server.requests.length;
    const report = await replayConversation({ agent: Reader, recording: compacted });
    expect(report.divergences).toEqual([]);
    expect(server.requests.length).toBe(before);
    expect(report.turns.every((turn) => turn.answeredFrom === 'recording')).toBe(true);
    // One compaction of a split turn: the history summary and the turn-prefix summary.
    expect(report.turns.filter((turn) => turn.purpose === 'compaction').map(({ delivery, turn }) => ({ delivery, turn }))).toEqual([
      { delivery: 1, turn: 0 },
      { delivery: 1, turn: 0 },
    ]);
    expect(report.turns.filter((turn) => turn.delivery === 1 && turn.purpose === undefined).map((turn) => turn.turn)).toEqual([0, 1, 2, 3]);
    expect(report.replayed.map((delivery) => delivery.reply)).toEqual(['heard: hello', 'read 3 pages', 'heard: thanks']);
    expect(report.replayed[1]!.summaries).toEqual(report.recorded[1]!.summaries);
    expect(report.recorded[1]!.summaries[0]).toContain(SUMMARY);

    // Live tools that return what they returned still match, the summarized results included.
    expect((await replayConversation({ agent: Reader, recording: compacted, liveTools: true })).divergences).toEqual([]);
  });

  it('reports a changed tool of a conversation that compacted at the turn it changed', async () => {
    const report = await replayConversation({ agent: ReaderRevised, recording: compacted, liveTools: ['page'] });
    expect(report.divergences.map(({ delivery, turn, kind }) => ({ delivery, turn, kind }))).toEqual([
      { delivery: 1, turn: 2, kind: 'tool_results' },
    ]);
    // The turn after the compaction is still the delivery's fourth, answered by the model now that page 3 changed.
    expect(
      report.turns.filter((turn) => turn.delivery === 1).map(({ turn, answeredFrom, purpose }) => [turn, answeredFrom, purpose]),
    ).toEqual([
      [0, 'recording', undefined],
      [1, 'recording', undefined],
      [2, 'recording', undefined],
      [0, 'recording', 'compaction'],
      [0, 'recording', 'compaction'],
      [3, 'model', undefined],
    ]);
  });

  /** The recording as a runtime upgrade would leave it: the named built-in tools reworded in every snapshot. */
  function upgrade(from: ConversationExport, names: readonly string[]): ConversationExport {
    const upgraded = JSON.parse(JSON.stringify(from)) as ConversationExport;
    const edited = new Set<string>();
    for (const record of upgraded.conversations[0]!.batches.flatMap((batch) => batch.records)) {
      if (record.type !== 'resource_snapshot') continue;
      for (const tool of record.snapshot.tools) {
        if (names.includes(tool.name)) {
          tool.description = 'A description from another runtime version.';
          tool.schema = 'another-schema';
          edited.add(tool.name);
        }
      }
    }
    expect([...edited].sort()).toEqual([...names].sort());
    return upgraded;
  }

  it("ignores a change of the framework's own tools and text: only what the agent defines is compared", async () => {
    const upgraded = upgrade(recording, ['task']);
    // The log says which tools the runtime added, beside each snapshot.
    const added = upgraded.conversations[0]!.batches.flatMap((batch) =>
      batch.records.flatMap((r) => (r.type === 'resource_snapshot' ? [r.builtinTools] : [])),
    );
    expect(added[0]).toEqual(['task']);
    expect((await replayConversation({ agent: Shop, recording: upgraded })).divergences).toEqual([]);
    // The agent's own prompt and tools still count.
    expect((await replayConversation({ agent: ShopReworded, recording: upgraded })).divergences[0]).toMatchObject({ kind: 'instructions' });
    expect((await replayConversation({ agent: ShopRedescribed, recording: upgraded })).divergences[0]).toMatchObject({ kind: 'tools' });
  });

  it('ignores a reworded sandbox built-in tool, and still sees one the agent no longer has', async () => {
    const upgraded = upgrade(desk, ['read', 'write']);
    expect((await replayConversation({ agent: Desk, recording: upgraded })).divergences).toEqual([]);
    // Without its sandbox the agent offers no file tools: that is a change of the agent.
    function DeskWithoutSandbox() {
      useModel(MODEL);
      return 'You keep files.';
    }
    const report = await replayConversation({ agent: DeskWithoutSandbox, recording: upgraded });
    expect(report.divergences[0]).toMatchObject({ delivery: 0, turn: 0, kind: 'tools' });
  });
});
