import { env, runInDurableObject } from 'cloudflare:test';
import { afterEach, expect, test } from 'vitest';
import { getUsage, init } from '@flue/runtime';
import { configuredRuntime } from '../../src/runtime/host/runtime.ts';
import { durableObjectSqlDriver } from '../../src/durable-objects/sql-driver.ts';
import { Conversation } from '../../src/runtime/engine/conversation.ts';
import { ConversationView } from '../../src/runtime/engine/conversation-view.ts';
import { ConversationWriter } from '../../src/runtime/engine/conversation-writer.ts';
import { input, ts } from '../../src/runtime/engine/log-records.fixtures.ts';
import { conversationKey } from '../../src/runtime/store/conversation-key.ts';
import { FLUE_FORMAT_VERSION, SqlStore, migrate } from '../../src/runtime/store/sql-store.ts';
import { lazyRows } from '../../src/runtime/store/schema.ts';
import { HOARD_LANE, Hoarder } from './large-agents.ts';
import { resetLane, scriptLane } from './lanes.ts';
import { resetObject } from './reset-object.ts';
import './worker.ts';

const MiB = 1024 * 1024;
const stub = (id: string) =>
  (env as unknown as { FLUE_HOARDER_AGENT: DurableObjectNamespace }).FLUE_HOARDER_AGENT.getByName(id) as DurableObjectStub;

afterEach(async () => resetLane(HOARD_LANE));

/** Inside the object: where a fresh view's wake starts reading the log, its fold, and the whole log's fold. */
function probeWake(id: string) {
  return runInDurableObject(stub(id), (_instance, state) => {
    const store = new SqlStore(durableObjectSqlDriver(state.storage));
    const key = conversationKey('Hoarder', id);
    const readFrom: number[] = [];
    const read = store.readBatchesSized.bind(store);
    store.readBatchesSized = (k, after, ...rest) => {
      readFrom.push(after);
      return read(k, after, ...rest);
    };
    const woken = new ConversationView(store).live('Hoarder', id);
    const full = new Conversation('live');
    for (const batch of store.readBatches(key, -1)) full.apply(batch);
    const checkpoint = state.storage.sql.exec('SELECT seq FROM flue_checkpoints').toArray();
    return { readFrom: readFrom[0], woken: woken.conv.state(), full: full.state(), checkpoint };
  });
}

test('a conversation wakes from its checkpoint, and from its whole log when the checkpoint is damaged', async () => {
  const id = 'checkpointed';
  const handle = init(Hoarder, { id });
  // 9 MiB of messages: past the byte interval (and the scripted model's window: compactions may
  // answer from the script too), so a later batch carries a checkpoint.
  await scriptLane(HOARD_LANE, ...Array.from({ length: 12 }, () => ({ text: 'Ok.' })));
  const receipts = [];
  const replies = [];
  for (const letter of ['a', 'b', 'c']) {
    const receipt = await handle.dispatch(letter.repeat(3 * MiB));
    receipts.push(receipt);
    replies.push((await handle.read(receipt)).text);
  }
  const probed = await probeWake(id);
  expect(probed.checkpoint).toHaveLength(1);
  expect(probed.readFrom).toBe(Number(probed.checkpoint[0]!.seq));
  expect(probed.woken).toEqual(probed.full);

  // A fresh object wakes from it: the next message is answered, old replies and the history are read from the log.
  await resetObject(stub(id));
  expect((await handle.read(await handle.dispatch('four'))).text).toBe('Ok.');
  expect((await handle.read(receipts[0]!)).text).toBe(replies[0]);
  expect((await handle.read(receipts[1]!)).text).toBe(replies[1]);
  const history = (await configuredRuntime()!.history('Hoarder', id))!;
  expect(history.messages.filter((m) => m.role === 'user').map((m) => (m.parts[0] as { text: string }).text.slice(0, 1))).toEqual([
    'a',
    'b',
    'c',
    'f',
  ]);

  // A damaged checkpoint is not trusted.
  await runInDurableObject(stub(id), (_instance, state) => {
    state.storage.sql.exec(`UPDATE flue_checkpoints SET body = '{"incarnation":'`);
  });
  await resetObject(stub(id));
  const damaged = await probeWake(id);
  expect(damaged.readFrom).toBe(-1);
  expect(damaged.woken).toEqual(damaged.full);
  expect((await handle.read(await handle.dispatch('five'))).text).toBe('Ok.');

  // Settlements are read from their rows (the fold woke without them), and from the log where no row keeps one.
  const ids = [...receipts.map((r) => r.submissionId)];
  expect((await getUsage(Hoarder, id))!.submissions.map((entry) => entry.submissionId).slice(0, 3)).toEqual(ids);
  await runInDurableObject(stub(id), (_instance, state) => {
    lazyRows(durableObjectSqlDriver(state.storage), 'UPDATE flue_submissions SET settlement = NULL');
  });
  await resetObject(stub(id));
  expect((await handle.read(receipts[1]!)).text).toBe(replies[1]);
  const usage = (await getUsage(Hoarder, id))!;
  expect(usage.submissions.map((entry) => entry.submissionId).slice(0, 3)).toEqual(ids);
  expect(usage.submissions).toHaveLength(5);
}, 120_000);

test('a Durable Object whose submissions table predates stored settlements gains the column when it opens', async () => {
  const columns = await runInDurableObject(stub('older-store'), (_instance, state) => {
    const driver = durableObjectSqlDriver(state.storage);
    // The store as a new object's first call makes it (with no ledger until its first row); then the
    // ledger as the version before stored settlements made it.
    migrate(driver);
    expect(driver.query(`SELECT value FROM flue_meta WHERE key = 'format_version'`)[0]!.value).toBe(FLUE_FORMAT_VERSION);
    driver.run(`CREATE TABLE flue_submissions (
      id TEXT NOT NULL PRIMARY KEY, ord INTEGER NOT NULL, stream TEXT NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL,
      accepted_at TEXT NOT NULL, status TEXT NOT NULL, attempt_id TEXT, attempt_count INTEGER NOT NULL DEFAULT 0,
      max_attempts INTEGER, timeout_ms INTEGER, started_at INTEGER, abort_requested_at INTEGER,
      continuation INTEGER NOT NULL DEFAULT 0, joined_into TEXT, outcome TEXT, error TEXT, settled_at INTEGER
    ) WITHOUT ROWID`);
    migrate(driver);
    migrate(driver);
    return state.storage.sql
      .exec(`SELECT name FROM pragma_table_info('flue_submissions')`)
      .toArray()
      .map((row) => row.name);
  });
  expect(columns.filter((name) => name === 'settlement')).toHaveLength(1);
});

test('in a Durable Object a checkpoint lands with its batch or not at all', async () => {
  const outcome = await runInDurableObject(stub('torn'), (_instance, state) => {
    // A store of its own on the object's SQLite, made as the object's first call would make it.
    const driver = durableObjectSqlDriver(state.storage);
    migrate(driver);
    const store = new SqlStore(driver);
    const view = new ConversationView(store);
    const writer = new ConversationWriter(store, view);
    const live = view.live('Scratch', 'torn');
    const submission = {
      id: 'sub_1',
      kind: 'dispatch' as const,
      payload: { message: { kind: 'user' as const, body: 'hi' } },
      acceptedAt: ts,
    };
    writer.admit(live, { type: 'conversation_created', conversationId: 'conv_torn', uid: 'inst_torn', ts }, submission, []);
    view.keep(live);
    writer.commit(live, [input('sub_1', 'hi')]);
    writer.commit(live, [{ type: 'compaction', summary: 'Earlier.', firstKept: 1, tokensBefore: 10, ts }]);
    // The next commit carries a checkpoint (a compaction just landed); it dies while writing it.
    const write = store.writeCheckpoint.bind(store);
    store.writeCheckpoint = () => {
      throw new Error('crash');
    };
    let thrown = '';
    try {
      writer.commit(live, [input('sub_2', 'lost')]);
    } catch (error) {
      thrown = (error as Error).message;
    }
    store.writeCheckpoint = write;
    const key = conversationKey('Scratch', 'torn');
    const afterCrash = { head: store.head(key), checkpoint: store.readCheckpoint(key) };
    // The next commit writes both.
    writer.commit(live, [input('sub_2', 'kept')]);
    const woken = new ConversationView(store).live('Scratch', 'torn');
    const full = new Conversation('live');
    for (const batch of store.readBatches(key, -1)) full.apply(batch);
    return {
      thrown,
      afterCrash,
      head: store.head(key),
      checkpoint: store.readCheckpoint(key)?.seq,
      woken: woken.conv.state(),
      full: full.state(),
    };
  });
  expect(outcome.thrown).toBe('crash');
  expect(outcome.afterCrash).toEqual({ head: 2, checkpoint: undefined });
  expect(outcome.head).toBe(3);
  expect(outcome.checkpoint).toBe(2);
  expect(outcome.woken).toEqual(outcome.full);
});
