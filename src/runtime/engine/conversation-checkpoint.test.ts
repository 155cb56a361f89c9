import { beforeEach, describe, expect, it } from 'vitest';
import { sqlite } from '../../node/sqlite.ts';
import { Conversation } from './conversation.ts';
import {
  CHECKPOINT_EVERY_BATCHES,
  CHECKPOINT_EVERY_BYTES,
  CHECKPOINT_VERSION,
  checkpointDue,
  encodeCheckpoint,
} from './conversation-checkpoint.ts';
import { emptyUsage } from '../model/usage.ts';
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

/** A new conversation on a fresh store, with `sub_1` admitted carrying `body`. */
async function admitted(body: string): Promise<Omit<Opened, 'key'>> {
  const adapter = sqlite();
  await adapter.migrate();
  const store = new SqlStore(await adapter.connect());
  const view = new ConversationView(store);
  const writer = new ConversationWriter(store, view);
  const live = view.live('Agent', 'a1');
  writer.admit(
    live,
    { type: 'conversation_created', conversationId: 'conv_1', uid: 'inst_1', ts },
    { id: 'sub_1', kind: 'dispatch', payload: { message: { kind: 'user', body } }, acceptedAt: ts },
    [],
  );
  view.keep(live);
  return { store, view, writer, live };
}

/**
 * A conversation whose live context holds 1.5 MiB (so its checkpoint is spilled), compacted, with
 * its checkpoint written by the batch after the compaction and two batches after that.
 */
async function grown(): Promise<Opened> {
  const { store, view, writer, live } = await admitted('big');
  // A lone surrogate keeps the text inside the JSON, so the checkpoint is spilled whole (see below
  // for one whose large strings are kept apart).
  writer.commit(live, [input('sub_1', `${'x'.repeat(1.5 * MiB)}\ud800`)]);
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
  return JSON.parse(store.readCheckpoint(key)!.body!);
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
      'with an open submission of the wrong shape',
      ({ store, key }) =>
        store.writeCheckpoint(
          key,
          5,
          CHECKPOINT_VERSION,
          forged(store, key, (body) => (body.state.applied = [5])),
        ),
    ],
    [
      'with a settlement count that is no count',
      ({ store, key }) =>
        store.writeCheckpoint(
          key,
          5,
          CHECKPOINT_VERSION,
          forged(store, key, (body) => (body.state.settledCount = -1)),
        ),
    ],
    [
      'of the version that kept every settlement',
      ({ store, key }) =>
        store.writeCheckpoint(
          key,
          5,
          1,
          forged(store, key, (body) => Object.assign(body.state, { settlements: [], ledger: [], replySources: [] })),
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

  it('is not held back by a held input: when one is due, the input is committed at once and carries it', () => {
    const { store, writer, live, key } = opened;
    writer.commit(live, [{ type: 'compaction', summary: 'Again.', firstKept: 1, tokensBefore: 10, ts }]);
    writer.hold(live, [input('sub_3', 'three')]);
    expect(live.held).toEqual([]);
    expect(store.readCheckpoint(key)).toMatchObject({ seq: 8 });
    expect(store.readBatches(key, 8).map((batch) => batch.records.map((record) => record.type))).toEqual([['user_message']]);
  });

  it('waits while the fold holds records the log does not have: the batch that writes them carries none', () => {
    const { store, writer, live, key } = opened;
    writer.hold(live, [input('sub_3', 'three')]);
    // Due while the input is held (nothing does this but a test: holding waits for no due one).
    live.sinceCheckpoint.compacted = true;
    writer.commit(live, [note('with the input')]);
    expect(store.readCheckpoint(key)).toMatchObject({ seq: 5 });
    // The next batch writes it, and a wake from it folds the log as a fold of the whole log does.
    writer.commit(live, [note('after')]);
    expect(store.readCheckpoint(key)).toMatchObject({ seq: 8 });
    const woken = wake(store).live;
    expect(woken.conv.state()).toEqual(fullFold(store, key).state());
    expect(woken.conv.applied.has('sub_3')).toBe(true);
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

describe('settled submissions', () => {
  /** One exchange settled through the writer, as the engine settles one: its row keeps the settlement. */
  function exchange({ view, writer, live }: Opened, id: string, tokens: number): void {
    writer.admit(live, undefined, { id, kind: 'dispatch', payload: { message: { kind: 'user', body: id } }, acceptedAt: ts }, []);
    writer.commit(live, [input(id, `question ${id}`)]);
    const [started, completed] = answer(id, `Answer ${id}.`);
    const delta: ConversationRecord = {
      type: 'assistant_delta',
      messageId: `msg_a_${id}`,
      stepId: `s_${id}`,
      kind: 'text',
      block: 0,
      delta: `Answer ${id}.`,
    };
    writer.commit(live, [started!, delta, completed!]);
    const usage = { ...emptyUsage(), input: tokens, totalTokens: tokens };
    writer.settle(live, {
      records: [
        {
          type: 'submission_settled',
          submissionId: id,
          outcome: 'completed',
          answeredBySubmissionId: id,
          usage: { usage, modelCalls: 1, toolCalls: 0, attempts: 1 },
          ts,
        },
      ],
      settled: [id],
      outcome: 'completed',
      error: null,
    });
  }

  it('stay out of memory and the checkpoint: their rows keep them, and readers find them there', () => {
    const { store, view, writer, live, key } = opened;
    const ids = Array.from({ length: 600 }, (_, i) => `sub_x${i}`);
    // Measured right after a compaction, so the model context is empty both times.
    const size = () => {
      writer.commit(live, [{ type: 'compaction', summary: 'S.', firstKept: live.conv.modelLength, tokensBefore: 1, ts }]);
      return encodeCheckpoint(live.conv, live.incarnation).length;
    };
    ids.slice(0, 10).forEach((id) => exchange(opened, id, 1));
    const small = size();
    ids.slice(10).forEach((id) => exchange(opened, id, 1));
    // 590 more settlements, and the fold's stored form is the same size give or take a few characters of ids.
    expect(size()).toBeLessThan(small + 100);
    expect(live.conv.settlements.size).toBeLessThanOrEqual(256);
    expect(live.conv.applied.size + live.conv.startRuns.size).toBe(1);
    expect(live.conv.settledCount).toBe(601);
    // The oldest one is no longer in the fold: its row answers, and its reply is read from its batches.
    expect(live.conv.settlements.has('sub_x0')).toBe(false);
    const old = view.settled(live, 'sub_x0')!;
    expect(old.settlement).toEqual({ submissionId: 'sub_x0', outcome: 'completed', answeredBySubmissionId: 'sub_x0' });
    expect(old.reply()).toEqual({ text: 'Answer sub_x0.', data: {} });
    expect(view.settled(live, 'sub_x599')!.reply()).toEqual({ text: 'Answer sub_x599.', data: {} });
    expect(view.settled(live, 'sub_2')).toBeUndefined();
    expect(view.settled(live, 'sub_unknown')).toBeUndefined();
    // The ledger: every entry in settlement order (sub_1's from the log: its row never kept it), the sum from the fold.
    const usage = view.usage(live);
    expect(usage.submissions.map((entry) => entry.submissionId)).toEqual(['sub_1', ...ids]);
    expect(usage.total.totalTokens).toBe(600);
    // A fresh process reads the same.
    const woken = wake(store).live;
    expect(new ConversationView(store).usage(woken)).toEqual(usage);
    expect(store.readCheckpoint(key)).toBeDefined();
  });

  it('settled before rows kept them are read from the log', () => {
    const { store, view, live } = opened;
    ['sub_y0', 'sub_y1', 'sub_y2'].forEach((id, i) => exchange(opened, id, i + 1));
    store.driver.run('UPDATE flue_submissions SET settlement = NULL');
    const woken = wake(store).live;
    const fresh = new ConversationView(store);
    expect(fresh.settled(woken, 'sub_y0')!.reply()).toEqual({ text: 'Answer sub_y0.', data: {} });
    expect(fresh.usage(woken).submissions.map((entry) => entry.submissionId)).toEqual(['sub_1', 'sub_y0', 'sub_y1', 'sub_y2']);
    // A row whose settlement is not one is read from the log too.
    store.driver.run(`UPDATE flue_submissions SET settlement = '{"seq":"x"}' WHERE id = 'sub_y1'`);
    expect(fresh.settled(woken, 'sub_y1')!.reply()).toEqual({ text: 'Answer sub_y1.', data: {} });
    expect(view.usage(live).total.totalTokens).toBe(6);
  });
});

describe('a checkpoint of a fold holding a large text', () => {
  const spillRows = (store: SqlStore, like: string) =>
    Number(store.driver.query(`SELECT count(*) AS n FROM flue_spill WHERE key LIKE ?`, like)[0]!.n);

  it('names the chunks the log keeps instead of writing the text again, and a wake restores the same fold', async () => {
    const body = 'Grüße 😀\n'.repeat(0.3 * MiB);
    const { store, writer, live } = await admitted(body);
    writer.commit(live, [input('sub_1', body)]);
    writer.commit(live, answer('sub_1', 'One.'));
    writer.commit(live, [{ type: 'compaction', summary: 'Earlier.', firstKept: 0, tokensBefore: 10, ts }]);
    writer.commit(live, [note('after')]);
    const stored = store.readCheckpoint(live.key)!;
    expect(stored).toMatchObject({ seq: 3, version: CHECKPOINT_VERSION });
    expect(stored.body).toBeUndefined();
    expect(String(store.driver.query('SELECT body FROM flue_checkpoints')[0]!.body)).toMatch(/^~spill:parts:/);
    // The text is in the log once (the record names the submission's chunks) and nowhere else.
    expect(spillRows(store, '["checkpoint"%')).toBe(0);
    expect(spillRows(store, '%')).toBe(Math.ceil(new TextEncoder().encode(body).byteLength / MiB));
    const woken = new ConversationView(new SqlStore(store.driver)).live('Agent', 'a1');
    expect(woken.conv.state()).toEqual(fullFold(store, live.key).state());

    // A store that does not know the text (a fresh process) writes the checkpoint's own chunks; the
    // next checkpoint deletes those, never the ones the log names.
    const fresh = new SqlStore(store.driver);
    fresh.writeCheckpoint(live.key, 3, CHECKPOINT_VERSION, { value: JSON.parse(encodeCheckpoint(live.conv, 'inst_1')) });
    expect(spillRows(store, '["checkpoint"%')).toBeGreaterThan(0);
    fresh.writeCheckpoint(live.key, 3, CHECKPOINT_VERSION, encodeCheckpoint(new Conversation('live'), 'inst_1'));
    expect(spillRows(store, '["checkpoint"%')).toBe(0);
    expect(new SqlStore(store.driver).getSubmission('sub_1')!.payload.message).toEqual({ kind: 'user', body });
    expect((new SqlStore(store.driver).readBatches(live.key, 0, 1)[0]!.records[0] as { body: string }).body).toBe(body);
  });
});
