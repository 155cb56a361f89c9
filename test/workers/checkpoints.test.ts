import { env, runInDurableObject } from 'cloudflare:test';
import { afterEach, expect, test } from 'vitest';
import { init } from '@flue/runtime';
import { configuredRuntime } from '../../src/runtime/host/runtime.ts';
import { durableObjectSqlDriver } from '../../src/durable-objects/sql-driver.ts';
import { Conversation } from '../../src/runtime/engine/conversation.ts';
import { ConversationView } from '../../src/runtime/engine/conversation-view.ts';
import { conversationKey } from '../../src/runtime/store/conversation-key.ts';
import { SqlStore } from '../../src/runtime/store/sql-store.ts';
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
}, 120_000);
