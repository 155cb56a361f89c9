import { describe, expect, it } from 'vitest';
import { projectBatch } from './projection.ts';
import type { ConversationRecord } from '../store/records.ts';
import { assistant, delta, ts } from './log-records.fixtures.ts';

const started: ConversationRecord = {
  type: 'assistant_started',
  messageId: 'msg_a',
  stepId: 's1',
  submissionId: 'sub_1',
  attemptId: 'attempt_1',
  ts,
};
const completed: ConversationRecord = {
  type: 'assistant_completed',
  messageId: 'msg_a',
  stepId: 's1',
  submissionId: 'sub_1',
  message: assistant([
    { type: 'thinking', thinking: 'Think.' },
    { type: 'text', text: 'Said once.' },
    { type: 'toolCall', id: 'call_1', name: 'lookup', arguments: { key: 'a' } },
  ]),
  ts,
};

/** The chunks of batch `seq`. */
function chunks(seq: number, records: ConversationRecord[]) {
  return projectBatch({ seq, records }, 'conv_1', () => {
    throw new Error('no snapshot in these batches');
  });
}

describe('projectBatch', () => {
  it("gives a step written whole, with no deltas, its text and reasoning as deltas from the completed message: a live follower's chunks", () => {
    const whole = chunks(3, [started, completed]);
    expect(whole).toEqual(chunks(3, [started, delta(0, 'reasoning', 'Think.'), delta(1, 'text', 'Said once.'), completed]));
    expect(whole.map((chunk) => chunk.type)).toEqual([
      'message-started',
      'message-delta',
      'message-delta',
      'tool-input',
      'message-completed',
    ]);
  });

  it('adds no delta for text that deltas carried, in this batch or an earlier one', () => {
    expect(
      chunks(3, [started, delta(0, 'reasoning', 'Think.'), delta(1, 'text', 'Said once.'), completed]).filter(
        (c) => c.type === 'message-delta',
      ),
    ).toHaveLength(2);
    // Started in an earlier batch: its deltas were there, whatever this batch holds.
    expect(chunks(4, [completed]).map((chunk) => chunk.type)).toEqual(['tool-input', 'message-completed']);
    // A step with a delta had them all, whichever of its blocks they carried.
    expect(chunks(3, [started, delta(1, 'text', 'Said once.'), completed]).filter((c) => c.type === 'message-delta')).toHaveLength(1);
  });
});
