import { describe, expect, it, vi } from 'vitest';
import { sqlite } from '../../node/sqlite.ts';
import { ConversationView, type LiveConversation } from './conversation-view.ts';
import { ConversationWriter } from './conversation-writer.ts';
import { MAX_KEPT, MAX_KEPT_SMALL, SMALL_PAYLOAD_BYTES } from './open-submissions.ts';
import type { ConversationKey } from '../store/conversation-key.ts';
import type { ConversationRecord } from '../store/records.ts';
import { SqlStore } from '../store/sql-store.ts';

const ts = '2026-01-01T00:00:00.000Z';

async function open() {
  const adapter = sqlite();
  await adapter.migrate();
  const store = new SqlStore(await adapter.connect());
  const view = new ConversationView(store);
  return { store, view, writer: new ConversationWriter(store, view) };
}

/** Every question the queue asks of the ledger, as `view` answers it. */
function answers(view: ConversationView, key: ConversationKey, leaderId: string) {
  return {
    keys: view.keysWithOpenWork().sort(),
    open: view.openSubmissions(key),
    ids: view.openSubmissionIds(key),
    head: view.queueHead(key),
    // What a join reads of a delivery (a kept row answers with the rest of its row too).
    unjoined: view
      .unjoinedDeliveries(key)
      .map(({ id, kind, payload, status, abortRequestedAt }) => ({ id, kind, payload, status, abortRequestedAt })),
    joined: view.joinedIds({ id: leaderId, conversation: key }),
  };
}

/** The ledger queries a view makes of the store. */
function ledgerReads(store: SqlStore) {
  return [
    'openSubmissions',
    'openSubmissionIds',
    'queueHead',
    'unjoinedDeliveries',
    'joinedIds',
    'getConversation',
    'keysWithOpenWork',
  ].map((name) => vi.spyOn(store, name as 'openSubmissions'));
}

function admit(
  writer: ConversationWriter,
  live: LiveConversation,
  id: string,
  birth?: ConversationRecord,
  claim = false,
  body = `m ${id}`,
) {
  return writer.admit(
    live,
    birth,
    {
      id,
      kind: 'dispatch',
      payload: { message: { kind: 'user', body } },
      acceptedAt: ts,
      ...(claim ? { claim: { attemptId: `attempt_${id}`, now: 1, maxAttempts: 3, timeoutMs: 1000 } } : {}),
    },
    [],
  );
}

function settled(...ids: string[]): ConversationRecord[] {
  return ids.map((submissionId) => ({
    type: 'submission_settled',
    submissionId,
    outcome: 'completed',
    answeredBySubmissionId: ids[0],
    ts,
  }));
}

const birth: ConversationRecord = { type: 'conversation_created', conversationId: 'conv_1', uid: 'inst_1', ts };

/** A view that keeps conversation a1's open rows, after its first admission (`id`, with the birth). */
async function openKept(id: string, body?: string) {
  const opened = await open();
  const live = opened.view.live('Agent', 'a1');
  admit(opened.writer, live, id, birth, false, body);
  opened.view.keep(live);
  return { ...opened, live };
}

describe('the open submissions the view keeps', () => {
  it('answer every queue question as the store does, through admission, claim, join, abort stamp and settlement, without a query', async () => {
    const { store, view, writer } = await open();
    const live = view.live('Agent', 'a1');
    // Another conversation with open work, admitted before this view was asked which have some.
    const other = view.live('Agent', 'a2');
    admit(writer, other, 'sub_other', { ...birth, conversationId: 'conv_2', uid: 'inst_2' });
    expect(view.keysWithOpenWork()).toEqual([other.key]);
    const reads = ledgerReads(store);
    const steps: [string, () => void][] = [
      ['born with its first submission, claimed', () => admit(writer, live, 'sub_1', birth, true)],
      ['kept', () => view.keep(live)],
      ['two more queued', () => [admit(writer, live, 'sub_2'), admit(writer, live, 'sub_3', undefined, true)]],
      [
        'a claim',
        () =>
          writer.claimAttempt({ id: 'sub_1', conversation: live.key }, { attemptId: 'attempt_x', now: 2, maxAttempts: 3, timeoutMs: 1000 }),
      ],
      ['a join', () => writer.join(live, view.unjoinedDeliveries(live.key).slice(1, 2), 'sub_1')],
      ['a fourth queued', () => admit(writer, live, 'sub_4')],
      ['an abort stamp', () => writer.requestAbort(live, 7)],
      [
        'the leader settles with its joined one',
        () => writer.settle(live, { records: settled('sub_1', 'sub_2'), settled: ['sub_1', 'sub_2'], outcome: 'completed', error: null }),
      ],
      [
        'the rest settle',
        () => writer.settle(live, { records: settled('sub_3', 'sub_4'), settled: ['sub_3', 'sub_4'], outcome: 'completed', error: null }),
      ],
    ];
    for (const [step, write] of steps) {
      write();
      for (const read of reads) read.mockClear();
      const kept = answers(view, live.key, 'sub_1');
      for (const read of reads) expect(read, step).not.toHaveBeenCalled();
      // A fresh view reads the store: the kept rows are the store's rows.
      expect(kept, step).toEqual(answers(new ConversationView(store), live.key, 'sub_1'));
    }
    expect(answers(view, live.key, 'sub_1')).toEqual({ keys: [other.key], open: [], ids: [], head: undefined, unjoined: [], joined: [] });
  });

  it('a view no writer reports to (the crash harness reads a file other processes write) asks the store every time', async () => {
    const { store, view, writer } = await open();
    const inspector = new ConversationView(store);
    const live = view.live('Agent', 'a1');
    admit(writer, live, 'sub_1', birth);
    view.keep(live);
    expect(answers(inspector, live.key, 'sub_1')).toEqual(answers(view, live.key, 'sub_1'));
    inspector.live('Agent', 'a1');
    writer.settle(live, { records: settled('sub_1'), settled: ['sub_1'], outcome: 'completed', error: null });
    admit(writer, live, 'sub_2');
    expect(answers(inspector, live.key, 'sub_1')).toEqual(answers(view, live.key, 'sub_1'));
    expect(inspector.keysWithOpenWork()).toEqual([live.key]);
    expect(inspector.queueHead(live.key)?.id).toBe('sub_2');
  });

  it('answers the stored row on admission: the one a read of the store gives', async () => {
    const { store, view, writer } = await open();
    const live = view.live('Agent', 'a1');
    expect(admit(writer, live, 'sub_1', birth, true)).toBe(true);
    expect(admit(writer, live, 'sub_2', undefined, true)).toBe(false);
    expect(view.openSubmissions(live.key)).toEqual(['sub_1', 'sub_2'].map((id) => store.getSubmission(id)));
    expect(view.openSubmissions(live.key)[1]!.ord).toBeGreaterThan(view.openSubmissions(live.key)[0]!.ord);
  });

  it('reads a queue longer than it keeps from the store, and keeps it again once settlements shorten it', async () => {
    // One payload over the small size: past MAX_KEPT rows, the queue is not kept.
    const { store, view, writer, live } = await openKept('sub_0', 'x'.repeat(SMALL_PAYLOAD_BYTES));
    const ids = Array.from({ length: MAX_KEPT + 2 }, (_, i) => `sub_${i}`);
    for (const id of ids.slice(1)) admit(writer, live, id);
    writer.join(live, view.unjoinedDeliveries(live.key).slice(1, 3), 'sub_0');
    const fresh = () => answers(new ConversationView(store), live.key, 'sub_0');
    expect(answers(view, live.key, 'sub_0')).toEqual(fresh());
    expect(view.openSubmissionIds(live.key)).toEqual(ids);
    const reads = vi.spyOn(store, 'unjoinedDeliveries');
    view.unjoinedDeliveries(live.key);
    expect(reads).toHaveBeenCalledTimes(1);
    const done = ids.slice(0, 10);
    writer.settle(live, { records: settled(...done), settled: done, outcome: 'completed', error: null });
    expect(answers(view, live.key, 'sub_0')).toEqual(fresh());
    reads.mockClear();
    view.unjoinedDeliveries(live.key);
    expect(reads).not.toHaveBeenCalled();
  });

  it('keeps a burst of small admissions past MAX_KEPT, up to MAX_KEPT_SMALL, and answers it with no query', async () => {
    const { store, view, writer, live } = await openKept('sub_0');
    const ids = Array.from({ length: MAX_KEPT + 40 }, (_, i) => `sub_${i}`);
    for (const id of ids.slice(1)) admit(writer, live, id);
    writer.join(live, view.unjoinedDeliveries(live.key).slice(1, 3), 'sub_0');
    view.keysWithOpenWork();
    const reads = ledgerReads(store);
    const kept = answers(view, live.key, 'sub_0');
    for (const read of reads) expect(read).not.toHaveBeenCalled();
    expect(kept).toEqual(answers(new ConversationView(store), live.key, 'sub_0'));
    expect(kept.ids).toEqual(ids);
    // A large payload past MAX_KEPT ends the keeping: the next question reads the store.
    admit(writer, live, 'sub_large', undefined, false, 'x'.repeat(SMALL_PAYLOAD_BYTES));
    expect(view.openSubmissionIds(live.key)).toEqual([...ids, 'sub_large']);
    expect(reads.some((read) => read.mock.calls.length > 0)).toBe(true);
  });

  it('keeps no more than MAX_KEPT_SMALL rows however small', async () => {
    const { store, view, writer, live } = await openKept('sub_0');
    for (let i = 1; i <= MAX_KEPT_SMALL; i++) admit(writer, live, `sub_${i}`);
    const reads = vi.spyOn(store, 'openSubmissionIds');
    expect(view.openSubmissionIds(live.key)).toHaveLength(MAX_KEPT_SMALL + 1);
    expect(reads).toHaveBeenCalledTimes(1);
  });

  it('admits to a queue longer than it keeps without asking the store for its highest order', async () => {
    const { store, writer, live } = await openKept('sub_0');
    const ids = Array.from({ length: MAX_KEPT + 8 }, (_, i) => `sub_${i}`);
    const query = vi.spyOn(store.driver, 'query');
    for (const id of ids.slice(1)) admit(writer, live, id);
    expect(query.mock.calls.filter(([sql]) => /max\(ord\)/.test(sql))).toEqual([]);
    const ords = store.openSubmissions(live.key).map((row) => row.ord);
    expect(ords).toEqual([...ords].sort((a, b) => a - b));
    expect(new Set(ords).size).toBe(ids.length);
    // Read back from the store (and so not told its highest order), the queue asks once.
    const reread = new ConversationView(store);
    const rereadWriter = new ConversationWriter(store, reread);
    const rereadLive = reread.live('Agent', 'a1');
    reread.keep(rereadLive);
    reread.openSubmissionIds(live.key);
    query.mockClear();
    admit(rereadWriter, rereadLive, 'sub_late_1');
    admit(rereadWriter, rereadLive, 'sub_late_2');
    expect(query.mock.calls.filter(([sql]) => /max\(ord\)/.test(sql))).toHaveLength(1);
    expect(store.openSubmissionIds(live.key).slice(-2)).toEqual(['sub_late_1', 'sub_late_2']);
  });

  it('reads the store again after a ledger write that failed', async () => {
    const { store, view, writer, live } = await openKept('sub_1');
    // A second admission under the same id fails on its key; what the store holds decides.
    expect(() => admit(writer, live, 'sub_1')).toThrow(/UNIQUE|constraint/i);
    const reads = vi.spyOn(store, 'openSubmissions');
    expect(view.openSubmissionIds(live.key)).toEqual(['sub_1']);
    expect(reads).toHaveBeenCalledTimes(1);
    vi.spyOn(store, 'claimAttempt').mockImplementationOnce(() => {
      throw new Error('refused');
    });
    expect(() =>
      writer.claimAttempt({ id: 'sub_1', conversation: live.key }, { attemptId: 'a', now: 1, maxAttempts: 3, timeoutMs: 1 }),
    ).toThrow('refused');
    reads.mockClear();
    expect(view.queueHead(live.key)).toEqual(store.getSubmission('sub_1'));
    expect(reads).toHaveBeenCalledTimes(1);
  });
});
