import { describe, expect, it } from 'vitest';
import type { ConversationRecord } from '../store/records.ts';
import type { Batch } from '../store/sql-store.ts';
import { historyExplains, nearestCuts, rebaseBatches, rekeyUnder, settledCuts, stateAt } from './conversation-export.ts';

const ts = '2026-01-01T00:00:00.000Z';
const birth: ConversationRecord = { type: 'conversation_created', conversationId: 'conv_1', uid: 'inst_1', ts };
const user = (submissionId: string): ConversationRecord => ({
  type: 'user_message',
  messageId: `msg_in_${submissionId}`,
  submissionId,
  body: 'hi',
  ts,
});
const started = (submissionId: string): ConversationRecord => ({
  type: 'assistant_started',
  messageId: `m_${submissionId}`,
  stepId: `s_${submissionId}`,
  submissionId,
  attemptId: 'a',
  ts,
});
const settled = (submissionId: string): ConversationRecord => ({ type: 'submission_settled', submissionId, outcome: 'completed', ts });
const snapshot: ConversationRecord = {
  type: 'resource_snapshot',
  baseline: true,
  snapshot: { tools: {}, skills: {}, subagents: {}, instructions: '', sandbox: false } as never,
};
const compaction: ConversationRecord = { type: 'compaction', summary: 'so far', firstKept: 1, tokensBefore: 10, submissionId: 'b', ts };

function batches(...records: ConversationRecord[][]): Batch[] {
  return records.map((batch, seq) => ({ seq, records: batch }));
}

describe('settledCuts: where a log may be cut', () => {
  it('after the birth and after each settlement, never inside a submission', () => {
    const log = batches([birth], [user('a')], [snapshot, started('a')], [settled('a')], [user('b')], [compaction], [settled('b')]);
    expect(settledCuts(log)).toEqual([0, 3, 6]);
  });

  it('a delivery that joined a running response keeps the cut closed until it settles too', () => {
    const joined: ConversationRecord = { ...user('j'), joinedInto: 'a' } as ConversationRecord;
    const log = batches([birth], [user('a')], [joined], [settled('a')], [settled('j')]);
    expect(settledCuts(log)).toEqual([0, 4]);
  });

  it('a framework signal without a submission does not open one', () => {
    const signal: ConversationRecord = { type: 'signal', messageId: 'x', origin: 'framework', signalType: 'note', body: '', ts };
    expect(settledCuts(batches([birth], [signal], [user('a')], [settled('a')]))).toEqual([0, 1, 3]);
  });

  it('names the nearest allowed cuts on either side of a refused one', () => {
    expect(nearestCuts([0, 3, 6], 4)).toEqual({ before: 3, after: 6 });
    expect(nearestCuts([0, 3], 5)).toEqual({ before: 3 });
  });
});

describe('stateAt: persistent state as of a cut', () => {
  const current = new Map<string, unknown>([
    ['count', 2],
    ['name', 'b'],
  ]);
  const history = [
    { seq: 3, name: 'count', value: 1 },
    { seq: 6, name: 'count', value: 2 },
    { seq: 6, name: 'name', value: 'b' },
  ];

  it('takes each name’s last write at or before the cut; a name first written later is absent', () => {
    expect(stateAt(current, history, 0, 6)).toEqual(new Map());
    expect(stateAt(current, history, 3, 6)).toEqual(new Map([['count', 1]]));
    expect(stateAt(current, history, 5, 6)).toEqual(new Map([['count', 1]]));
  });

  it('knows a write kept without its value (too large for the history) only while it is the name’s last', () => {
    const big = [
      { seq: 3, name: 'doc', unkept: true as const },
      { seq: 6, name: 'doc', unkept: true as const },
    ];
    const now = new Map<string, unknown>([['doc', 'v2']]);
    expect(historyExplains(now, big)).toBe(true);
    expect(stateAt(now, big, 0, 8)).toEqual(new Map());
    expect(stateAt(now, big, 6, 8)).toEqual(now);
    expect(stateAt(now, big, 3, 8)).toBeUndefined();
  });

  it('answers the current values at the head, with or without history', () => {
    expect(stateAt(current, [], 6, 6)).toEqual(current);
  });

  it('cannot say for an earlier cut when the history does not explain the current values', () => {
    // A store written before the history was kept, or a value written without it.
    expect(historyExplains(current, [])).toBe(false);
    expect(stateAt(current, [], 3, 6)).toBeUndefined();
    expect(stateAt(current, [{ seq: 3, name: 'count', value: 1 }, ...history.slice(2)], 3, 6)).toBeUndefined();
  });
});

describe('rebasing an exported log under a new root', () => {
  const rekey = rekeyUnder('agents/A/from', 'agents/A/copy');

  it('moves the root and every child key below it, nested ones included', () => {
    expect(rekey('agents/A/from')).toBe('agents/A/copy');
    expect(rekey('tasks/agents/A/from/s1/c1')).toBe('tasks/agents/A/copy/s1/c1');
    expect(rekey('tasks/tasks/agents/A/from/s1/c1/s2/c2')).toBe('tasks/tasks/agents/A/copy/s1/c1/s2/c2');
    // A sibling whose id starts with the same text is not under it.
    expect(rekey('agents/A/fromage')).toBe('agents/A/fromage');
  });

  it('gives the birth record the new ids and its origin, and child links their new keys', () => {
    const retained: ConversationRecord = {
      type: 'child_session_retained',
      child: {
        type: 'task',
        conversationId: 'conv_c',
        stream: 'tasks/agents/A/from/s1/c1' as never,
        agent: 'A',
        taskId: 't',
        harness: 'default',
        parentToolCallId: 'c1',
      },
      ts,
    };
    const [first, second] = rebaseBatches(batches([birth], [retained]), rekey, {
      conversationId: 'conv_2',
      uid: 'inst_2',
      forkedFrom: { instanceId: 'from', conversationId: 'conv_1', at: 1 },
    });
    expect(first!.records[0]).toEqual({
      ...birth,
      conversationId: 'conv_2',
      uid: 'inst_2',
      forkedFrom: { instanceId: 'from', conversationId: 'conv_1', at: 1 },
    });
    expect(second!.records[0]).toMatchObject({ child: { stream: 'tasks/agents/A/copy/s1/c1', conversationId: 'conv_c' } });
  });
});
