import { describe, expect, it, vi } from 'vitest';
import { sqlite } from '../../node/sqlite.ts';
import { ConversationWriter, inputRecord } from './conversation-writer.ts';
import { ConversationView } from './conversation-view.ts';
import { childConversationKey, conversationKey } from '../store/conversation-key.ts';
import type { ConversationRecord } from '../store/records.ts';
import { SqlStore, type SubmissionRow } from '../store/sql-store.ts';

const ts = '2026-01-01T00:00:00.000Z';

async function open(): Promise<{ store: SqlStore; view: ConversationView; writer: ConversationWriter }> {
  const adapter = sqlite();
  await adapter.migrate();
  const store = new SqlStore(await adapter.connect());
  const view = new ConversationView(store);
  return { store, view, writer: new ConversationWriter(store, view) };
}

const birth: ConversationRecord = { type: 'conversation_created', conversationId: 'conv_1', uid: 'inst_1', ts };

/** A conversation with one queued submission per id, admitted through the writer. */
function admitted({ view, writer }: { view: ConversationView; writer: ConversationWriter }, ...ids: string[]) {
  const live = view.live('Agent', 'a1');
  ids.forEach((id, index) => {
    writer.admit(
      live,
      index === 0 ? birth : undefined,
      { id, kind: 'dispatch', payload: { message: { kind: 'user', body: `m ${id}` } }, acceptedAt: ts },
      [],
    );
  });
  view.keep(live);
  return live;
}

function signal(body: string): ConversationRecord {
  return { type: 'signal', messageId: `msg_${body}`, origin: 'framework', signalType: 'note', body, ts };
}

describe('ConversationWriter', () => {
  it('admits with a birth record, keeps the conversation and folds it', async () => {
    const opened = await open();
    const { store, view } = opened;
    const live = admitted(opened, 'sub_1');
    expect(live.key).toBe(conversationKey('Agent', 'a1'));
    expect(live.conv.uid).toBe('inst_1');
    expect(live.incarnation).toMatch(/^inc_/);
    expect(store.openSubmissions(live.key).map((row) => row.id)).toEqual(['sub_1']);
    expect([...view.conversations()]).toEqual([live]);
    expect(view.live('Agent', 'a1')).toBe(live);
  });

  it('a conversation born through the writer is kept with its birth folded and its incarnation known: nothing is read back', async () => {
    const { store, view, writer } = await open();
    const live = view.live('Agent', 'a1');
    const reads = (['getConversation', 'head', 'readBatchesSized', 'readBatches', 'readState', 'openSubmissions'] as const).map((name) =>
      vi.spyOn(store, name),
    );
    writer.admit(live, birth, { id: 'sub_1', kind: 'dispatch', payload: { message: { kind: 'user', body: 'hi' } }, acceptedAt: ts }, []);
    view.keep(live);
    expect(view.liveByKey(live.key)).toBe(live);
    expect(view.queueHead(live.key)?.id).toBe('sub_1');
    writer.commitWithState(live, [signal('no state written')], []);
    const info = view.conversationInfo(live.key);
    for (const read of reads) expect(read).not.toHaveBeenCalled();
    expect(info).toEqual(store.getConversation(live.key));
    // What the fold and the view took is what a fresh view reads from the store.
    const fresh = new ConversationView(store).live('Agent', 'a1');
    expect([live.incarnation, live.conv.head, live.conv.uid, live.sinceCheckpoint]).toEqual([
      fresh.incarnation,
      fresh.conv.head,
      fresh.conv.uid,
      fresh.sinceCheckpoint,
    ]);
  });

  it('commits a batch at the head it knows, advances the fold and tells the listeners', async () => {
    const opened = await open();
    const { store, writer } = opened;
    const live = admitted(opened, 'sub_1');
    let told = 0;
    live.listeners.add(() => told++);
    const before = { ...live.sinceCheckpoint };
    writer.commit(live, [signal('one')]);
    writer.commit(live, [signal('two')]);
    expect(told).toBe(2);
    expect(live.conv.head).toBe(2);
    expect(store.readBatches(live.key, 0).map((batch) => batch.seq)).toEqual([1, 2]);
    // Counted towards the next checkpoint.
    expect(live.sinceCheckpoint.batches).toBe(before.batches + 2);
    expect(live.sinceCheckpoint.bytes).toBeGreaterThan(before.bytes);
  });

  it('after a write the log refused (a batch written behind its back), reads the store again so the next write succeeds', async () => {
    const opened = await open();
    const { store, view, writer } = opened;
    const live = admitted(opened, 'sub_1');
    // Another writer (only this one should exist) appended at the head this process knows.
    store.append(live.key, [signal('foreign')]);
    expect(() => writer.commit(live, [signal('mine')])).toThrow(/UNIQUE/);
    const caught = view.live('Agent', 'a1');
    expect(caught.conv.head).toBe(1);
    writer.commit(caught, [signal('mine')]);
    expect(store.readBatches(live.key, 0).map((batch) => batch.records.map((record) => (record as { body?: string }).body))).toEqual([
      ['foreign'],
      ['mine'],
    ]);
  });

  describe('a held input (hold)', () => {
    const records = (store: SqlStore, key: ReturnType<typeof conversationKey>) =>
      store.readBatches(key, 0).map((batch) => batch.records.map((record) => record.type));

    it('the fold takes it at once; the store with the next batch, one row where two would be', async () => {
      const opened = await open();
      const { store, view, writer } = opened;
      const live = admitted(opened, 'sub_1');
      let told = 0;
      live.listeners.add(() => told++);
      writer.hold(live, [inputRecord({ id: 'sub_1', kind: 'dispatch', payload: { message: { kind: 'user', body: 'hi' } } })]);
      // The fold knows the input; the log and its head are as stored, and no reader was woken.
      expect(live.conv.applied.has('sub_1')).toBe(true);
      expect(live.conv.head).toBe(0);
      expect(records(store, live.key)).toEqual([]);
      expect(told).toBe(0);
      writer.commit(live, [signal('step')]);
      expect(records(store, live.key)).toEqual([['user_message', 'signal']]);
      expect(live.conv.head).toBe(1);
      expect(live.held).toEqual([]);
      // A fresh process folds the same log.
      const fresh = new ConversationView(store).live('Agent', 'a1');
      expect([fresh.conv.head, fresh.conv.applied.has('sub_1')]).toEqual([1, true]);
      expect(view.live('Agent', 'a1')).toBe(live);
    });

    it('rides only where it costs no page: not in a batch that fits its page alone and would not with it', async () => {
      const opened = await open();
      const { store, writer } = opened;
      const live = admitted(opened, 'sub_1');
      const held = () =>
        writer.hold(live, [
          inputRecord({ id: `sub_${live.conv.head}`, kind: 'dispatch', payload: { message: { kind: 'user', body: 'hi' } } }),
        ]);
      // Fits its page alone (about 3,900 characters: the body twice), would not with the input: two rows.
      held();
      writer.commit(live, [signal('x'.repeat(1_900))]);
      // Takes an overflow page anyway, and no more with the input: the input rides.
      held();
      writer.commit(live, [signal('y'.repeat(3_000))]);
      // Small enough together: the input rides.
      held();
      writer.commit(live, [signal('z')]);
      expect(records(store, live.key)).toEqual([['user_message'], ['signal'], ['user_message', 'signal'], ['user_message', 'signal']]);
    });

    it('is sized as the store holds the rows: a step whose start the store leaves out makes room for it', async () => {
      const opened = await open();
      const { store, writer } = opened;
      const live = admitted(opened, 'sub_1');
      const input = inputRecord({ id: 'sub_2', kind: 'dispatch', payload: { message: { kind: 'user', body: 'hi' } } });
      const step = (text: string): ConversationRecord[] => [
        {
          type: 'assistant_started',
          messageId: 'msg_1',
          stepId: 'step_1',
          submissionId: 'sub_1',
          attemptId: 'attempt_1',
          ts: '2026-01-01T00:00:00.000Z',
        },
        {
          type: 'assistant_completed',
          stepId: 'step_1',
          messageId: 'msg_1',
          submissionId: 'sub_1',
          message: { role: 'assistant', content: [{ type: 'text', text }] } as never,
          ts: '2026-01-01T00:00:00.000Z',
        },
      ];
      const pages = (records: ConversationRecord[]) => store.logRowOverflowPages(live.key, 1, store.storedSize(records));
      const whole = (records: ConversationRecord[]) => store.logRowOverflowPages(live.key, 1, JSON.stringify(records).length);
      // A reply that fits its page with the input as the row holds the step, and would not as the records are.
      let size = 3_000;
      while (!(whole([input, ...step('r'.repeat(size))]) > whole(step('r'.repeat(size))))) size++;
      expect(pages([input, ...step('r'.repeat(size))])).toBe(pages(step('r'.repeat(size))));
      writer.hold(live, [input]);
      writer.commit(live, step('r'.repeat(size)));
      expect(records(store, live.key)).toEqual([['user_message', 'assistant_started', 'assistant_completed']]);
    });

    it('a reader that starts following has it written at once, in a batch of its own', async () => {
      const opened = await open();
      const { store, writer } = opened;
      const live = admitted(opened, 'sub_1');
      writer.hold(live, [inputRecord({ id: 'sub_1', kind: 'dispatch', payload: { message: { kind: 'user', body: 'hi' } } })]);
      const release = live.follow();
      expect(records(store, live.key)).toEqual([['user_message']]);
      expect(live.conv.head).toBe(1);
      writer.commit(live, [signal('step')]);
      release();
      expect(records(store, live.key)).toEqual([['user_message'], ['signal']]);
    });

    it('a refused write keeps it held, and the next batch writes it once', async () => {
      const opened = await open();
      const { store, writer } = opened;
      const live = admitted(opened, 'sub_1');
      writer.hold(live, [inputRecord({ id: 'sub_1', kind: 'dispatch', payload: { message: { kind: 'user', body: 'hi' } } })]);
      const append = vi.spyOn(store, 'appendSized').mockImplementationOnce(() => {
        throw new Error('disk full');
      });
      expect(() => writer.commit(live, [signal('lost')])).toThrow(/disk full/);
      append.mockRestore();
      writer.commit(live, [signal('step')]);
      expect(records(store, live.key)).toEqual([['user_message', 'signal']]);
    });

    it('the settlement batch carries it when nothing else was written', async () => {
      const opened = await open();
      const { store, writer } = opened;
      const live = admitted(opened, 'sub_1');
      writer.hold(live, [inputRecord({ id: 'sub_1', kind: 'dispatch', payload: { message: { kind: 'user', body: 'hi' } } })]);
      writer.close(live, [signal('last step')], () => ({
        records: [{ type: 'submission_settled', submissionId: 'sub_1', outcome: 'completed', ts }],
        settled: ['sub_1'],
        outcome: 'completed',
        error: null,
      }));
      expect(records(store, live.key)).toEqual([['user_message', 'signal', 'submission_settled']]);
      expect(store.getSubmission('sub_1')?.status).toBe('settled');
    });
  });

  it('writes persistent state in the transaction of its batch and keeps the read cache current', async () => {
    const opened = await open();
    const { store, view, writer } = opened;
    const live = admitted(opened, 'sub_1');
    expect(view.stateOf(live).size).toBe(0);
    writer.commitWithState(live, [signal('state')], [['count', 2]]);
    expect(view.stateOf(live).get('count')).toBe(2);
    expect(store.readState(live.key).get('count')).toBe(2);
  });

  it('commits a batch alone without a transaction around it, also one with no state to write, and a batch with more writes in one', async () => {
    const opened = await open();
    const { store, writer } = opened;
    const live = admitted(opened, 'sub_1');
    const transactions = vi.spyOn(store, 'transaction');
    writer.commit(live, [signal('alone')]);
    // A batch that could carry state and timer writes but has none (most tool results) is alone too.
    writer.commitWithState(live, [signal('no state')], [], []);
    expect(transactions).not.toHaveBeenCalled();
    writer.commitWithState(live, [signal('with state')], [['count', 1]]);
    expect(transactions).toHaveBeenCalledTimes(1);
    expect(store.readBatches(live.key, 0).map((batch) => batch.records)).toEqual([
      [signal('alone')],
      [signal('no state')],
      [signal('with state')],
    ]);
  });

  it('rolls the batch and its state writes back together', async () => {
    const opened = await open();
    const { store, writer } = opened;
    const live = admitted(opened, 'sub_1');
    expect(() =>
      writer.commit(live, [signal('x')], () => {
        store.writeState(live.key, 'lost', 1, 1);
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(store.readState(live.key).has('lost')).toBe(false);
    expect(store.readBatches(live.key, -1)).toHaveLength(1);
    expect(live.conv.head).toBe(0);
  });

  it('joins queued deliveries into their leader: input records and ledger marks in one batch', async () => {
    const opened = await open();
    const { store, view, writer } = opened;
    const live = admitted(opened, 'sub_1', 'sub_2', 'sub_3');
    const [leader, ...queued] = view.openSubmissions(live.key) as [SubmissionRow, SubmissionRow, SubmissionRow];
    const head = live.conv.head;
    writer.join(live, queued, leader.id);
    expect(live.conv.head).toBe(head + 1);
    expect(store.readBatches(live.key, head).map((batch) => batch.records.map((record) => record.type))).toEqual([
      ['user_message', 'user_message'],
    ]);
    expect(['sub_2', 'sub_3'].every((id) => live.conv.applied.has(id))).toBe(true);
    expect(view.joinedIds(leader)).toEqual(['sub_2', 'sub_3']);
    expect(store.getSubmission('sub_3')).toMatchObject({ status: 'joined', joinedInto: 'sub_1' });
  });

  it('settles submissions with their batch; the first terminal state wins', async () => {
    const opened = await open();
    const { store, view, writer } = opened;
    const live = admitted(opened, 'sub_1');
    const [row] = view.openSubmissions(live.key) as [SubmissionRow];
    const settled = (outcome: 'completed' | 'failed'): ConversationRecord => ({
      type: 'submission_settled',
      submissionId: row.id,
      outcome,
      ts,
    });
    writer.settle(live, { records: [settled('completed')], settled: [row.id], outcome: 'completed', error: null });
    writer.settle(live, { records: [settled('failed')], settled: [row.id], outcome: 'failed', error: 'late' });
    expect(store.getSubmission(row.id)).toMatchObject({ status: 'settled', outcome: 'completed', error: null });
  });

  it('tells the view what it admitted: unsettled without a store read, until its settlement commits', async () => {
    const opened = await open();
    const { store, view, writer } = opened;
    const live = admitted(opened, 'sub_1');
    store.storeSubmission({
      id: 'sub_x',
      conversation: live.key,
      kind: 'dispatch',
      payload: { message: { kind: 'user', body: 'x' } },
      acceptedAt: ts,
    });
    const reads = vi.spyOn(store, 'settlementOf');
    expect(view.settled(live, 'sub_1')).toBeUndefined();
    expect(reads).not.toHaveBeenCalled();
    // Not admitted through this writer: the store is asked.
    expect(view.settled(live, 'sub_x')).toBeUndefined();
    expect(reads).toHaveBeenCalledTimes(1);
    const settled: ConversationRecord = {
      type: 'submission_settled',
      submissionId: 'sub_1',
      outcome: 'completed',
      answeredBySubmissionId: 'sub_1',
      ts,
    };
    // A settlement that does not commit leaves it unsettled.
    expect(() => writer.settle(live, { records: [], settled: ['sub_1'], outcome: 'completed', error: null })).toThrow();
    expect(view.settled(live, 'sub_1')).toBeUndefined();
    writer.settle(live, { records: [settled], settled: ['sub_1'], outcome: 'completed', error: null });
    expect(view.settled(live, 'sub_1')?.settlement.outcome).toBe('completed');
    // A fresh view (the next process) reads the settlement from the row.
    expect(new ConversationView(store).settled(live, 'sub_1')?.settlement.outcome).toBe('completed');
  });

  it('settles a leader and its joined deliveries in the ledger, with the one batch that says so', async () => {
    const opened = await open();
    const { store, view, writer } = opened;
    const live = admitted(opened, 'sub_1', 'sub_2', 'sub_3');
    const [leader, joined] = view.openSubmissions(live.key) as [SubmissionRow, SubmissionRow];
    writer.join(live, [joined], leader.id);
    const records: ConversationRecord[] = [leader, joined].map((row) => ({
      type: 'submission_settled',
      submissionId: row.id,
      outcome: 'failed',
      answeredBySubmissionId: leader.id,
      ts,
    }));
    const head = live.conv.head;
    writer.settle(live, { records, settled: [leader.id, ...view.joinedIds(leader)], outcome: 'failed', error: 'boom' });
    expect(
      ['sub_1', 'sub_2', 'sub_3'].map((id) => [
        id,
        store.getSubmission(id)?.status,
        store.getSubmission(id)?.outcome,
        store.getSubmission(id)?.error,
      ]),
    ).toEqual([
      ['sub_1', 'settled', 'failed', 'boom'],
      ['sub_2', 'settled', 'failed', 'boom'],
      ['sub_3', 'queued', null, null],
    ]);
    expect(view.joinedIds(leader)).toEqual([]);
    const batches = store.readBatches(live.key, head);
    expect(batches.map((batch) => batch.records.map((record) => record.type))).toEqual([['submission_settled', 'submission_settled']]);
  });

  it('claims attempts, marks continuations and stamps aborts through the ledger', async () => {
    const opened = await open();
    const { store, writer } = opened;
    const live = admitted(opened, 'sub_1', 'sub_2');
    const claimed = writer.claimAttempt(
      { id: 'sub_1', conversation: live.key },
      { attemptId: 'attempt_1', now: 1, maxAttempts: 3, timeoutMs: 1000 },
    );
    expect(claimed).toMatchObject({ status: 'running', attemptCount: 1, attemptId: 'attempt_1' });
    writer.markContinuation({ id: 'sub_1', conversation: live.key });
    expect(
      writer.claimAttempt({ id: 'sub_1', conversation: live.key }, { attemptId: 'attempt_2', now: 2, maxAttempts: 3, timeoutMs: 1000 })
        .attemptCount,
    ).toBe(1);
    expect(writer.requestAbort(live, 5)).toBe(2);
    expect(store.getSubmission('sub_2')?.abortRequestedAt).toBe(5);
  });

  it('keeps durable step memos per key; the first write wins', async () => {
    const opened = await open();
    const { writer } = opened;
    const live = admitted(opened, 'sub_1');
    const memo = writer.stepMemo(live, 'step_1:call_1');
    expect(memo.lookup('fetch')).toEqual({ found: false });
    memo.record('fetch', { n: 1 });
    memo.record('fetch', { n: 2 });
    expect(memo.lookup('fetch')).toEqual({ found: true, value: { n: 1 } });
    expect(writer.stepMemo(live, 'step_2:call_1').lookup('fetch')).toEqual({ found: false });
  });

  it('bears a child conversation once, retained on its parent in the same transaction', async () => {
    const opened = await open();
    const { store, view, writer } = opened;
    const parent = admitted(opened, 'sub_1');
    const stream = childConversationKey(parent.key, 'step_1', 'call_1');
    expect(stream).toBe(`tasks/${parent.key}/step_1/call_1`);
    expect(view.childConversationId(stream)).toBeUndefined();
    let births = 0;
    const birthOf = () => {
      births++;
      return {
        records: [{ type: 'conversation_created', conversationId: 'conv_child', uid: 'inst_1', kind: 'task', ts } as ConversationRecord],
        retained: {
          type: 'child_session_retained',
          child: {
            type: 'task',
            conversationId: 'conv_child',
            stream,
            agent: 'helper',
            taskId: 'call_1',
            harness: 'default',
            parentToolCallId: 'call_1',
          },
          ts,
        } as ConversationRecord,
      };
    };
    const child = writer.openChild({ parent, key: stream, birth: birthOf });
    expect(child.conv.conversationId).toBe('conv_child');
    expect(parent.conv.children.map((ref) => ref.stream)).toEqual([stream]);
    expect(view.childConversationId(stream)).toBe('conv_child');
    expect(store.getConversation(stream)).toMatchObject({ agent: 'Agent', instanceId: 'a1' });
    const again = writer.openChild({ parent, key: stream, birth: birthOf });
    expect(again.conv.conversationId).toBe('conv_child');
    expect(births).toBe(1);
  });

  it('writes the canonical input record of a delivery, with its origin from the transport', () => {
    const row = { id: 'sub_9', kind: 'http', payload: { message: { kind: 'user', body: 'hi' } } } as SubmissionRow;
    expect(inputRecord(row)).toMatchObject({ type: 'user_message', messageId: 'msg_in_sub_9', deliveryOrigin: 'http', body: 'hi' });
    const joined = inputRecord({ ...row, kind: 'dispatch', payload: { ...row.payload, fromAgent: true } }, 'sub_1');
    expect(joined).toMatchObject({ joinedInto: 'sub_1', deliveryOrigin: 'agent' });
  });
});
