import { describe, expect, it, vi } from 'vitest';
import { sqlite } from '../../node/sqlite.ts';
import { ConversationView, IDLE_FOLDS_KEPT } from './conversation-view.ts';
import { type ConversationKey, conversationKey } from '../store/conversation-key.ts';
import type { ConversationRecord } from '../store/records.ts';
import { SqlStore } from '../store/sql-store.ts';
import { storedConversationKey } from '../store/conversation-key.ts';

const ts = '2026-01-01T00:00:00.000Z';

/** A view over a fresh store, and the store it reads (the tests write it directly, reporting appends as the writer does). */
async function open(): Promise<{ store: SqlStore; view: ConversationView }> {
  const adapter = sqlite();
  await adapter.migrate();
  const store = new SqlStore(await adapter.connect());
  return { store, view: new ConversationView(store) };
}

/** A stored conversation of agent `Agent` with its birth record and one queued submission. */
function born(store: SqlStore, instanceId: string, submissionId: string): ConversationKey {
  const stream = conversationKey('Agent', instanceId);
  store.createConversation({ key: stream, agent: 'Agent', instanceId, incarnation: `inc_${instanceId}` });
  store.append(stream, [{ type: 'conversation_created', conversationId: `conv_${instanceId}`, uid: `inst_${instanceId}`, ts }]);
  const payload = { message: { kind: 'user' as const, body: 'hi' } };
  store.storeSubmission({ id: submissionId, conversation: stream, kind: 'dispatch', payload, acceptedAt: ts });
  return stream;
}

function signal(body: string): ConversationRecord {
  return { type: 'signal', messageId: `msg_${body}`, origin: 'framework', signalType: 'note', body, ts };
}

describe('ConversationView', () => {
  it('does not keep the fold of a conversation that does not exist', async () => {
    const { view } = await open();
    view.live('Agent', 'nobody');
    expect([...view.conversations()]).toEqual([]);
  });

  it('catches a kept fold up with the batches the writer reports, and asks the store nothing at the head', async () => {
    const { store, view } = await open();
    const stream = born(store, 'a1', 'sub_1');
    const live = view.live('Agent', 'a1');
    expect([live.conv.head, live.incarnation, live.conv.uid]).toEqual([0, 'inc_a1', 'inst_a1']);
    view.appended(stream, store.append(stream, [signal('later')]));
    expect(view.live('Agent', 'a1')).toBe(live);
    expect(live.conv.head).toBe(1);
    const reads = vi.spyOn(store, 'readBatchesSized');
    expect(view.liveByKey(stream)).toBe(live);
    view.live('Agent', 'a1');
    expect(reads).not.toHaveBeenCalled();
  });

  it('answers a host which conversations have open work and which instance each one is', async () => {
    const { store, view } = await open();
    const one = born(store, 'a1', 'sub_1');
    const two = born(store, 'a2', 'sub_2');
    store.markSettled([{ id: 'sub_1', settlement: null }], 'completed', null, 1);
    expect(view.keysWithOpenWork()).toEqual([two]);
    expect(view.conversationInfo(two)).toEqual({ key: two, agent: 'Agent', instanceId: 'a2', incarnation: 'inc_a2' });
    expect(view.conversationInfo(one)?.instanceId).toBe('a1');
    expect(view.conversationInfo(storedConversationKey('agents/Agent/none'))).toBeUndefined();
    expect(() => view.liveByKey(storedConversationKey('agents/Agent/none'))).toThrow('No conversation is stored under "agents/Agent/none"');
  });

  it('knows a store made just now holds no work and no timer, and learns the rest from its writer', async () => {
    const { store, view } = await open();
    const openWork = vi.spyOn(store, 'keysWithOpenWork');
    const due = vi.spyOn(store, 'nextTimerDue');
    view.storeIsNew();
    // A view no writer reports to cannot know what the store holds later: it keeps asking.
    view.keysWithOpenWork();
    expect(openWork).toHaveBeenCalledTimes(1);
    view.writtenBy();
    view.storeIsNew();
    expect([view.keysWithOpenWork(), view.nextTimerDue()]).toEqual([[], undefined]);
    expect([openWork.mock.calls.length, due.mock.calls.length]).toEqual([1, 0]);
    const stream = born(store, 'a1', 'sub_1');
    view.admitted(store.getSubmission('sub_1')!, true);
    expect(view.keysWithOpenWork()).toEqual([stream]);
    view.timersWritten();
    view.nextTimerDue();
    expect([openWork.mock.calls.length, due.mock.calls.length]).toEqual([1, 1]);
  });

  it('lists every stream and every submission, settled ones included, for a post-mortem', async () => {
    const { store, view } = await open();
    const one = born(store, 'a1', 'sub_1');
    const two = born(store, 'a2', 'sub_2');
    store.markSettled([{ id: 'sub_2', settlement: null }], 'failed', 'boom', 1);
    expect(view.conversationKeys().sort()).toEqual([one, two]);
    expect(view.submissions().map((row) => [row.id, row.conversation, row.outcome])).toEqual([
      ['sub_1', one, null],
      ['sub_2', two, 'failed'],
    ]);
  });

  it('bounds the batches of one answer by bytes, always answering at least one', async () => {
    const { store, view } = await open();
    const stream = born(store, 'a1', 'sub_1');
    store.append(stream, [signal('one')]);
    store.append(stream, [signal('two')]);
    expect(view.boundedBatches(stream, -1, undefined, 1).map((batch) => batch.seq)).toEqual([0]);
    expect(view.boundedBatches(stream, 0, 1, Infinity).map((batch) => batch.seq)).toEqual([1]);
    expect(view.batches(stream, -1).map((batch) => batch.seq)).toEqual([0, 1, 2]);
    expect(view.fold(stream, 2).head).toBe(1);
  });
});

describe('the folds a long-running process keeps', () => {
  /** A stored conversation whose one submission has settled: nothing in the process holds it. */
  function settled(store: SqlStore, instanceId: string): ConversationKey {
    const key = born(store, instanceId, `sub_${instanceId}`);
    store.markSettled([{ id: `sub_${instanceId}`, settlement: null }], 'completed', null, 1);
    return key;
  }

  it('drops the oldest idle folds past its bound, and wakes a dropped one again from the store', async () => {
    const { store, view } = await open();
    view.writtenBy();
    const count = IDLE_FOLDS_KEPT * 4;
    for (let i = 0; i < count; i++) {
      settled(store, `a${i}`);
      view.live('Agent', `a${i}`);
    }
    const kept = [...view.conversations()].map((live) => live.instanceId);
    expect(kept.length).toBeGreaterThanOrEqual(IDLE_FOLDS_KEPT / 2);
    expect(kept.length).toBeLessThanOrEqual(IDLE_FOLDS_KEPT);
    expect(kept).toContain(`a${count - 1}`);
    expect(kept).not.toContain('a0');
    const again = view.live('Agent', 'a0');
    expect([again.conv.head, again.conv.uid, again.incarnation]).toEqual([0, 'inst_a0', 'inc_a0']);
    // Kept again, and caught up with what the writer reports from now on.
    view.appended(again.key, store.append(again.key, [signal('later')]));
    expect(view.live('Agent', 'a0')).toBe(again);
    expect(again.conv.head).toBe(1);
  });

  it('never drops a fold that someone holds: open work, a waiting reader, a follower, held records, a running queue', async () => {
    const { store } = await open();
    const running = settled(store, 'running');
    const view = new ConversationView(store, (key) => key === running);
    view.writtenBy();
    born(store, 'open', 'sub_open');
    for (const id of ['waited', 'followed', 'holding']) settled(store, id);
    const held = ['open', 'waited', 'followed', 'holding', 'running'].map((id) => view.live('Agent', id));
    held[1]!.listeners.add(() => {});
    held[2]!.follow();
    held[3]!.hold([signal('held')], () => {});
    for (let i = 0; i < IDLE_FOLDS_KEPT * 4; i++) {
      settled(store, `a${i}`);
      view.live('Agent', `a${i}`);
    }
    for (const live of held) expect(view.live('Agent', live.instanceId)).toBe(live);
    expect([...view.conversations()].length).toBeLessThanOrEqual(IDLE_FOLDS_KEPT + held.length);
  });
});
