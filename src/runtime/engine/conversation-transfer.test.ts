import { describe, expect, it } from 'vitest';
import { sqlite } from '../../node/sqlite.ts';
import { ConversationWriter } from './conversation-writer.ts';
import { ConversationView } from './conversation-view.ts';
import type { ConversationRecord } from '../store/records.ts';
import { SqlStore } from '../store/sql-store.ts';
import { exportConversation, importConversation } from './conversation-transfer.ts';
import { ForkPointError, InvalidRequestError, PayloadTooLargeError } from '../common/errors.ts';
import type { ConversationExport } from './conversation-export.ts';

const ts = '2026-01-01T00:00:00.000Z';
const birth: ConversationRecord = {
  type: 'conversation_created',
  conversationId: 'conv_1',
  uid: 'inst_1',
  initialData: { plan: 'pro' },
  ts,
};
const user = (id: string): ConversationRecord => ({ type: 'user_message', messageId: `in_${id}`, submissionId: id, body: id, ts });
const settled = (id: string): ConversationRecord => ({ type: 'submission_settled', submissionId: id, outcome: 'completed', ts });

/** A conversation of two settled submissions, each writing `count` with its settlement: batches 0 (birth) … 4. */
async function recorded() {
  const adapter = sqlite();
  await adapter.migrate();
  const store = new SqlStore(await adapter.connect());
  const view = new ConversationView(store);
  const writer = new ConversationWriter(store, view);
  const live = view.live('Agent', 'orig');
  writer.admit(live, birth, { id: 'a', kind: 'dispatch', payload: { message: { kind: 'user', body: 'a' } }, acceptedAt: ts }, []);
  view.keep(live);
  writer.commit(live, [user('a')]);
  writer.commitWithState(live, [settled('a')], [['count', 1]]);
  writer.commit(live, [user('b')]);
  writer.commitWithState(live, [settled('b')], [['count', 2]]);
  return { store, view, writer, live };
}

describe('exportConversation and importConversation', () => {
  it('cut at a settlement: the prefix, the state as of there and its history; the import takes new ids and can be cut earlier again', async () => {
    const { view, writer, live } = await recorded();
    const exported = exportConversation(view, live, { at: 2 });
    expect(exported).toMatchObject({ at: 2, head: 4, agent: 'Agent', instanceId: 'orig' });
    expect(exported.conversations[0]).toMatchObject({ state: { count: 1 }, history: [{ seq: 2, name: 'count', value: 1 }] });
    expect(exported.conversations[0]!.batches.map((b) => b.seq)).toEqual([0, 1, 2]);

    const copy = view.live('Agent', 'copy');
    const { id, uid } = importConversation(view, writer, copy, exported);
    expect(id).toBe('copy');
    expect(copy.conv.uid).toBe(uid);
    expect(copy.conv.initialData).toEqual({ plan: 'pro' });
    expect(view.stateOf(copy)).toEqual(new Map([['count', 1]]));
    // The copy's history explains its state, so it too can be cut at its birth.
    expect(exportConversation(view, copy, { at: 0 }).conversations[0]!.state).toEqual({});
    // Nothing of the original changed.
    expect(view.stateOf(live)).toEqual(new Map([['count', 2]]));
    expect(live.conv.head).toBe(4);
  });

  it('by default cuts at the latest settled offset, leaving a running submission out', async () => {
    const { view, writer, live } = await recorded();
    writer.commit(live, [user('c')]);
    expect(exportConversation(view, live).at).toBe(4);
    expect(() => exportConversation(view, live, { at: 5 })).toThrow(ForkPointError);
  });

  it('without a history that explains the state (a store from before it), only the head can be cut', async () => {
    const { store, view, live } = await recorded();
    store.driver.run('DELETE FROM flue_state_history');
    const error = (() => {
      try {
        exportConversation(view, live, { at: 2 });
      } catch (caught) {
        return caught;
      }
    })() as ForkPointError;
    expect(error).toBeInstanceOf(ForkPointError);
    expect(error).toMatchObject({ type: 'fork_point_state_unknown', meta: { at: 2, after: 4, head: 4 } });
    const atHead = exportConversation(view, live, { at: 4 });
    expect(atHead.conversations[0]).toMatchObject({ state: { count: 2 } });
    expect(atHead.conversations[0]!.history).toBeUndefined();
  });

  it('sandbox files go along at the head; an earlier cut of a conversation holding files is refused', async () => {
    const { view, writer, live } = await recorded();
    const files = view.sandboxFiles(live);
    files.putDir('/', 1);
    files.putFile('/notes.txt', new TextEncoder().encode('hello'), 2);
    expect(() => exportConversation(view, live, { at: 2 })).toThrow(expect.objectContaining({ type: 'fork_point_state_unknown' }));
    const copy = view.live('Agent', 'with-files');
    importConversation(view, writer, copy, exportConversation(view, live));
    expect(new TextDecoder().decode(view.sandboxFiles(copy).read('/notes.txt'))).toBe('hello');
  });

  it('reads no more of a long log than the export bound: past it, refused with the latest cut within it; a cut within it exports', async () => {
    const { view, live } = await recorded();
    // A bound the birth batch alone passes: the read stops there.
    const refused = (() => {
      try {
        exportConversation(view, live, { maxLogBytes: 1 });
      } catch (error) {
        return error;
      }
    })();
    expect(refused).toBeInstanceOf(PayloadTooLargeError);
    expect(refused).toMatchObject({ type: 'payload_too_large', meta: { field: 'the exported log', limit: 1 } });
    expect((refused as PayloadTooLargeError).details).toContain('offset 0 is the latest settled one within the limit');
    expect(exportConversation(view, live, { maxLogBytes: 1, at: 0 }).conversations[0]!.batches.map((batch) => batch.seq)).toEqual([0]);
  });

  it('refuses a malformed export by the field, before writing anything', async () => {
    const { view, writer, live } = await recorded();
    const good = exportConversation(view, live);
    const cases: [string, ConversationExport, RegExp][] = [
      ['version', { ...good, version: 2 as 1 }, /^version: this runtime reads version 1/],
      ['format', { ...good, format: 'other' as 'flue.conversation' }, /^format: expected "flue.conversation"/],
      [
        'a gap in the batches',
        { ...good, conversations: [{ ...good.conversations[0]!, batches: good.conversations[0]!.batches.filter((b) => b.seq !== 1) }] },
        /^conversations\[0\]\.batches\[1\]: expected \{ seq: 1/,
      ],
    ];
    for (const [, exported, details] of cases) {
      const target = view.live('Agent', 'bad');
      const error = (() => {
        try {
          importConversation(view, writer, target, exported);
        } catch (caught) {
          return caught;
        }
      })() as InvalidRequestError;
      expect(error).toBeInstanceOf(InvalidRequestError);
      expect(error.details).toMatch(details);
      expect(view.conversationInfo(target.key)).toBeUndefined();
    }
  });
});
