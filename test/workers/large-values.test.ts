import { env, runInDurableObject } from 'cloudflare:test';
import { afterEach, expect, test } from 'vitest';
import { type ConversationStreamChunk, PayloadTooLargeError, dispatch, init } from '@flue/runtime';
import { configuredRuntime } from '../../src/runtime/host/runtime.ts';
import { HOARD_LANE, Hoarder, bigOutput, bigText } from './large-agents.ts';
import { laneRequests, resetLane, scriptLane } from './lanes.ts';
import { expectReduced } from '../support/reduced-text.ts';
import './worker.ts';
import { objectHasStore, objectSubmissions } from './object-store.ts';

const MiB = 1024 * 1024;
const stub = (id: string) =>
  (env as unknown as { FLUE_HOARDER_AGENT: DurableObjectNamespace }).FLUE_HOARDER_AGENT.getByName(id) as DurableObjectStub;

function rows(id: string, sql: string) {
  return runInDurableObject(stub(id), (_instance, state) => state.storage.sql.exec(sql).toArray());
}

afterEach(async () => resetLane(HOARD_LANE));

for (const size of [5, 20]) {
  test(`a tool returning ${size} MB of JSON round-trips through Durable Object SQLite and RPC byte-identically and reaches the model reduced`, async () => {
    const bytes = size * 1_000_000;
    const text = JSON.stringify(bigOutput(bytes));
    await scriptLane(HOARD_LANE, { toolCalls: [{ name: 'dump', arguments: { bytes } }] }, { text: 'Dumped.' });
    const id = `dump-${size}`;
    const handle = init(Hoarder, { id });
    const chunks: ConversationStreamChunk[] = [];
    const reply = await handle.read(await handle.dispatch('dump it'), { onEvent: (chunk) => chunks.push(chunk) });
    expect(reply.text).toBe('Dumped.');
    const streamed = chunks.find((chunk) => chunk.type === 'tool-output') as { output: unknown };
    expect(JSON.stringify(streamed.output)).toBe(text);
    const history = (await configuredRuntime()!.history('Hoarder', id))!;
    const part = history.messages.flatMap((m) => m.parts).find((p) => p.type === 'dynamic-tool') as { output: unknown };
    expect(JSON.stringify(part.output)).toBe(text);
    const requests = await laneRequests(HOARD_LANE);
    // No model window holds it: the model gets its head and tail, told the rest was cut.
    expectReduced(requests[1]!.messages.find((m) => m.role === 'tool')!.content, text, 'tool result', 128_000);
    // Spilled, and stored once in the log: the model-facing text is derived from the output on read.
    const spilled = Number((await rows(id, `SELECT count(*) AS n FROM flue_spill WHERE key LIKE '["batch"%'`))[0]!.n);
    expect(spilled).toBeGreaterThanOrEqual(Math.ceil(bytes / 1_048_576));
    expect(spilled).toBeLessThan(2 * Math.ceil(bytes / 1_048_576));
    // The conversation's checkpoint (derived data) holds the model context once more, not the tool's output twice.
    const checkpoint = Number((await rows(id, `SELECT count(*) AS n FROM flue_spill WHERE key LIKE '["checkpoint"%'`))[0]!.n);
    expect(checkpoint).toBeLessThan(1.2 * Math.ceil(bytes / 1_048_576) + 1);
    expect(await objectSubmissions(stub(id))).toEqual([expect.objectContaining({ outcome: 'completed' })]);
  }, 180_000);
}

test('a tool returning 5 MB of text stores its model text once, unescaped, and reads back the same output and text', async () => {
  const bytes = 5_000_000;
  const text = bigText(bytes);
  await scriptLane(HOARD_LANE, { toolCalls: [{ name: 'recite', arguments: { bytes } }] }, { text: 'Recited.' });
  const handle = init(Hoarder, { id: 'recite' });
  expect((await handle.read(await handle.dispatch('recite'))).text).toBe('Recited.');
  const history = (await configuredRuntime()!.history('Hoarder', 'recite'))!;
  const part = history.messages.flatMap((m) => m.parts).find((p) => p.type === 'dynamic-tool') as { output: unknown };
  expect(part.output).toBe(text);
  expectReduced(
    (await laneRequests(HOARD_LANE))[1]!.messages.find((m) => m.role === 'tool')!.content,
    JSON.stringify(text),
    'tool result',
    128_000,
  );
  const stored = await rows('recite', `SELECT sum(length(data)) AS n FROM flue_spill WHERE key LIKE '["batch"%'`);
  expect(stored).toEqual([{ n: new TextEncoder().encode(JSON.stringify(text)).byteLength }]);
}, 180_000);

test('a 20 MB user message round-trips (the model gets it reduced); one over 32 MiB is refused before the object is contacted', async () => {
  const body = 'Grüße "aus" Köln 😀\n'.repeat(1_000_000).slice(0, 20_000_000);
  await scriptLane(HOARD_LANE, { text: 'Read it.' }, { text: 'You are welcome.' });
  const handle = init(Hoarder, { id: 'long' });
  expect((await handle.read(await handle.dispatch(body))).text).toBe('Read it.');
  expectReduced((await laneRequests(HOARD_LANE))[0]!.messages.at(-1)!.content, body, 'message', 128_000);
  // The log now holds more than a checkpoint's worth: the next response's input carries one.
  expect((await handle.read(await handle.dispatch('Thanks.'))).text).toBe('You are welcome.');
  const history = (await configuredRuntime()!.history('Hoarder', 'long'))!;
  expect((history.messages[0]!.parts[0] as { text: string }).text).toBe(body);
  // Stored once, as raw UTF-8: the admission record's chunks, which the fold's checkpoint names. A
  // store opened afresh on the object's SQLite reads it back.
  expect(await rows('long', 'SELECT count(*) AS n FROM flue_checkpoints')).toEqual([{ n: 1 }]);
  const stored = await rows('long', 'SELECT sum(length(data)) AS n FROM flue_spill');
  expect(stored).toEqual([{ n: new TextEncoder().encode(body).byteLength }]);
  const fresh = await runInDurableObject(stub('long'), async (_instance, state) => {
    const { SqlStore } = await import('../../src/runtime/store/sql-store.ts');
    const { durableObjectSqlDriver } = await import('../../src/durable-objects/sql-driver.ts');
    const store = new SqlStore(durableObjectSqlDriver(state.storage));
    const [key] = store.conversationKeys();
    const record = store
      .readBatches(key!, -1)
      .flatMap((batch) => batch.records)
      .find((r) => r.type === 'user_message') as { body: string };
    return { record: record.body === body, admitted: 'admission' in record, rows: store.listSubmissions().length };
  });
  // Admitted to an idle conversation: the record is the admission, and no ledger row holds a copy.
  expect(fresh).toEqual({ record: true, admitted: true, rows: 0 });

  const error = await dispatch(Hoarder, { id: 'too-long', message: 'x'.repeat(33 * MiB) }).catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(PayloadTooLargeError);
  expect(error).toMatchObject({ type: 'payload_too_large', status: 413, meta: { field: 'message', limit: 32 * MiB } });
  // The object was never contacted: its database holds no store at all (its first call would make it).
  expect(await objectHasStore(stub('too-long'))).toBe(false);
}, 180_000);

test('3 MB of persistent state is written in chunks and read back by a later render', async () => {
  const bytes = 3 * MiB;
  await scriptLane(HOARD_LANE, { toolCalls: [{ name: 'save', arguments: { bytes } }] }, { text: 'Saved.' }, { text: 'Still here.' });
  const handle = init(Hoarder, { id: 'keep' });
  await handle.read(await handle.dispatch('save'));
  await handle.read(await handle.dispatch('again'));
  const requests = await laneRequests(HOARD_LANE);
  expect(requests[2]!.system).toContain(`Stored state: ${JSON.stringify(bigOutput(bytes)).length} characters.`);
  expect((await rows('keep', 'SELECT count(*) AS n FROM flue_spill'))[0]!.n).toBeGreaterThan(0);
});

test('the row guard is on in the Durable Object driver', async () => {
  const { durableObjectSqlDriver } = await import('../../src/durable-objects/sql-driver.ts');
  await dispatch(Hoarder, { id: 'guard', message: 'hi' }).catch(() => undefined);
  const message = await runInDurableObject(stub('guard'), (_instance, state) => {
    try {
      durableObjectSqlDriver(state.storage).run('INSERT INTO flue_meta (key, value) VALUES (?, ?)', 'k', 'v'.repeat(2_000_001));
      return 'no error';
    } catch (error) {
      return (error as Error).message;
    }
  });
  expect(message).toMatch(/flue_meta.*row limit/);
});
