import { beforeEach, describe, expect, it } from 'vitest';
import { sqlite } from '../../node/sqlite.ts';
import { Conversation } from './conversation.ts';
import { CHECKPOINT_EVERY_BATCHES, CHECKPOINT_EVERY_BYTES, CHECKPOINT_VERSION, checkpointDue } from './conversation-checkpoint.ts';
import { ConversationView, type LiveConversation } from './conversation-view.ts';
import { ConversationWriter } from './conversation-writer.ts';
import type { ConversationKey } from '../store/conversation-key.ts';
import type { ConversationRecord } from '../store/records.ts';
import { SqlStore } from '../store/sql-store.ts';
import { assistant, input, ts } from './log-records.fixtures.ts';
const MiB = 1024 * 1024;

describe('when a checkpoint is due', () => {
  it.each([
    ['nothing written since the last one', { batches: 0, bytes: 0, compacted: true, lastBytes: 0 }, false],
    ['a compaction landed', { batches: 1, bytes: 10, compacted: true, lastBytes: 50 * MiB }, true],
    ['a few small batches', { batches: CHECKPOINT_EVERY_BATCHES - 1, bytes: 1000, compacted: false, lastBytes: 0 }, false],
    ['enough batches', { batches: CHECKPOINT_EVERY_BATCHES, bytes: 1000, compacted: false, lastBytes: 0 }, true],
    ['enough bytes', { batches: 3, bytes: CHECKPOINT_EVERY_BYTES, compacted: false, lastBytes: 0 }, true],
    // Rewriting a large checkpoint waits until the log written since is half its size.
    ['enough batches, little log for a large checkpoint', { batches: 1000, bytes: MiB, compacted: false, lastBytes: 4 * MiB }, false],
    ['enough batches, half a large checkpoint of log', { batches: 1000, bytes: 2 * MiB, compacted: false, lastBytes: 4 * MiB }, true],
  ])('%s → %s', (_name, since, due) => {
    expect(checkpointDue(since)).toBe(due);
  });
});

interface Opened {
  store: SqlStore;
  view: ConversationView;
  writer: ConversationWriter;
  live: LiveConversation;
  key: ConversationKey;
}

function answer(id: string, text: string): ConversationRecord[] {
  return [
    { type: 'assistant_started', messageId: `msg_a_${id}`, stepId: `s_${id}`, submissionId: id, attemptId: 'att', ts },
    {
      type: 'assistant_completed',
      messageId: `msg_a_${id}`,
      stepId: `s_${id}`,
      submissionId: id,
      message: assistant([{ type: 'text', text }]),
      ts,
    },
  ];
}

const note = (body: string): ConversationRecord => ({
  type: 'signal',
  messageId: `msg_${body}`,
  origin: 'framework',
  signalType: 'note',
  body,
  ts,
});

/**
 * A conversation whose live context holds 1.5 MiB (so its checkpoint is spilled), compacted, with
 * its checkpoint written by the batch after the compaction and two batches after that.
 */
async function grown(): Promise<Opened> {
  const adapter = sqlite();
  await adapter.migrate();
  const store = new SqlStore(await adapter.connect());
  const view = new ConversationView(store);
  const writer = new ConversationWriter(store, view);
  const live = view.live('Agent', 'a1');
  writer.admit(
    live,
    { type: 'conversation_created', conversationId: 'conv_1', uid: 'inst_1', ts },
    { id: 'sub_1', kind: 'dispatch', payload: { message: { kind: 'user', body: 'big' } }, acceptedAt: ts },
    [],
  );
  view.keep(live);
  writer.commit(live, [input('sub_1', 'x'.repeat(1.5 * MiB))]);
  writer.commit(live, answer('sub_1', 'One.'));
  writer.commit(live, [{ type: 'data_write', submissionId: 'sub_1', messageId: 'msg_a_sub_1', name: 'n', data: 1 }]);
  writer.commit(live, [{ type: 'submission_settled', submissionId: 'sub_1', outcome: 'completed', ts }]);
  writer.commit(live, [{ type: 'compaction', summary: 'Earlier.', firstKept: 0, tokensBefore: 10, ts }]);
  writer.commit(live, [input('sub_2', 'two')]);
  writer.commit(live, [note('after')]);
  return { store, view, writer, live, key: live.key };
}

/** The fold of the whole log, as a live fold from nothing would be. */
function fullFold(store: SqlStore, key: ConversationKey): Conversation {
  const conv = new Conversation('live');
  for (const batch of store.readBatches(key, -1)) conv.apply(batch);
  return conv;
}

/** A fresh process's view of the same store, and where its wake started reading the log. */
function wake(store: SqlStore): { live: LiveConversation; readFrom: number[] } {
  const readFrom: number[] = [];
  const read = store.readBatchesSized.bind(store);
  store.readBatchesSized = (key, after, ...rest) => {
    readFrom.push(after);
    return read(key, after, ...rest);
  };
  try {
    return { live: new ConversationView(store).live('Agent', 'a1'), readFrom };
  } finally {
    store.readBatchesSized = read;
  }
}

function storedBody(store: SqlStore, key: ConversationKey): { incarnation: string; state: Record<string, unknown> } {
  return JSON.parse(store.readCheckpoint(key)!.body);
}

let opened: Opened;
beforeEach(async () => {
  opened = await grown();
});

describe('a checkpoint', () => {
  it('is written after a compaction by the next batch, spilled when large, and a wake reads it and the batches after it', () => {
    const { store, key } = opened;
    const stored = store.readCheckpoint(key)!;
    expect(stored).toMatchObject({ seq: 5, version: CHECKPOINT_VERSION });
    expect(stored.bytes).toBeGreaterThan(MiB);
    expect(String(store.driver.query('SELECT body FROM flue_checkpoints')[0]!.body)).toMatch(/^~spill:/);
    const { live, readFrom } = wake(store);
    expect(readFrom[0]).toBe(5);
    expect(live.conv.head).toBe(7);
    expect(live.conv.state()).toEqual(fullFold(store, key).state());
    expect(live.conv.modelContext()).toEqual(opened.live.conv.modelContext());
  });

  it('is one row per conversation, rewritten in place, its old spilled chunks removed', () => {
    const { store, writer, live, key } = opened;
    const chunks = () => Number(store.driver.query(`SELECT count(*) AS n FROM flue_spill WHERE key LIKE '["checkpoint"%'`)[0]!.n);
    // The big message is in the model context and is the useDelivery() cursor: held twice.
    expect(chunks()).toBeGreaterThanOrEqual(3);
    writer.commit(live, [{ type: 'compaction', summary: 'Shorter.', firstKept: 2, tokensBefore: 10, ts }]);
    writer.commit(live, [note('again')]);
    expect(store.readCheckpoint(key)).toMatchObject({ seq: 8 });
    expect(store.driver.query('SELECT count(*) AS n FROM flue_checkpoints')[0]!.n).toBe(1);
    // The context after the cut is small: the body fits its row.
    expect(chunks()).toBe(0);
    expect(wake(store).live.conv.state()).toEqual(fullFold(store, key).state());
  });

  // Each is written so that trusting it would show: a forged conversation id, or a broken fold.
  const forged = (store: SqlStore, key: ConversationKey, edit: (body: { incarnation: string; state: Record<string, unknown> }) => void) => {
    const body = storedBody(store, key);
    body.state.conversationId = 'conv_forged';
    edit(body);
    return JSON.stringify(body);
  };
  it.each<[string, (opened: Opened) => void]>([
    ['missing', ({ store }) => store.driver.run('DELETE FROM flue_checkpoints')],
    ['not JSON', ({ store, key }) => store.writeCheckpoint(key, 5, CHECKPOINT_VERSION, '{"incarnation":')],
    ['a damaged spill', ({ store }) => store.driver.run(`DELETE FROM flue_spill WHERE key LIKE '["checkpoint"%' AND idx = 1`)],
    [
      'of the wrong shape',
      ({ store, key }) =>
        store.writeCheckpoint(
          key,
          5,
          CHECKPOINT_VERSION,
          forged(store, key, (body) => (body.state.messages = 'x')),
        ),
    ],
    [
      'with a ledger entry of the wrong shape',
      ({ store, key }) =>
        store.writeCheckpoint(
          key,
          5,
          CHECKPOINT_VERSION,
          forged(store, key, (body) => (body.state.ledger = [{ submissionId: 5 }])),
        ),
    ],
    [
      'with a reply source of the wrong shape',
      ({ store, key }) =>
        store.writeCheckpoint(
          key,
          5,
          CHECKPOINT_VERSION,
          forged(store, key, (body) => (body.state.replySources = [['sub_1', { of: 'sub_1' }]])),
        ),
    ],
    [
      'of another version',
      ({ store, key }) =>
        store.writeCheckpoint(
          key,
          5,
          CHECKPOINT_VERSION + 1,
          forged(store, key, () => {}),
        ),
    ],
    [
      'past the head',
      ({ store, key }) =>
        store.writeCheckpoint(
          key,
          9,
          CHECKPOINT_VERSION,
          forged(store, key, (body) => (body.state.head = 9)),
        ),
    ],
    [
      'of another incarnation',
      ({ store, key }) =>
        store.writeCheckpoint(
          key,
          5,
          CHECKPOINT_VERSION,
          forged(store, key, (body) => (body.incarnation = 'inc_other')),
        ),
    ],
    [
      'holding another batch than it is stored as',
      ({ store, key }) =>
        store.writeCheckpoint(
          key,
          5,
          CHECKPOINT_VERSION,
          forged(store, key, (body) => (body.state.head = 4)),
        ),
    ],
  ])('%s is not trusted: the wake folds the log from its start', (_name, damage) => {
    const { store, key } = opened;
    damage(opened);
    const { live, readFrom } = wake(store);
    expect(readFrom[0]).toBe(-1);
    expect(live.conv.conversationId).toBe('conv_1');
    expect(live.conv.state()).toEqual(fullFold(store, key).state());
  });

  it('lands with its batch or not at all: a crash between the two leaves the log and the checkpoint before either', () => {
    const { store, writer, live, key } = opened;
    writer.commit(live, [{ type: 'compaction', summary: 'Again.', firstKept: 1, tokensBefore: 10, ts }]);
    const write = store.writeCheckpoint.bind(store);
    store.writeCheckpoint = () => {
      throw new Error('crash');
    };
    expect(() => writer.commit(live, [note('lost')])).toThrow('crash');
    store.writeCheckpoint = write;
    expect(store.head(key)).toBe(8);
    expect(store.readCheckpoint(key)).toMatchObject({ seq: 5 });
    // The process after the crash wakes from the older checkpoint and the batches after it.
    const { live: woken, readFrom } = wake(store);
    expect(readFrom[0]).toBe(5);
    expect(woken.conv.state()).toEqual(fullFold(store, key).state());
    // This fold was not advanced past what committed, so its writer goes on at the right head.
    writer.commit(live, [note('kept')]);
    expect(store.readCheckpoint(key)).toMatchObject({ seq: 8 });
    expect(wake(store).live.conv.state()).toEqual(fullFold(store, key).state());
  });

  it('keeps the live fold small: no transcript, no model messages before the cut', () => {
    const { live, store, key, writer } = opened;
    expect(live.conv.messages).toEqual([]);
    writer.commit(live, [{ type: 'compaction', summary: 'Short.', firstKept: 2, tokensBefore: 10, ts }]);
    expect(live.conv.compactableEntries().map((entry) => entry.index)).toEqual([2, 3]);
    expect(JSON.stringify(live.conv.state()).length).toBeLessThan(20_000);
    // The transcript is still in the log for readers.
    expect(
      new ConversationView(store)
        .fold(key)
        .snapshot()
        .messages.map((m) => m.id),
    ).toContain('msg_in_sub_1');
  });
});
