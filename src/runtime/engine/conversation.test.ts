import { describe, expect, it } from 'vitest';
import type { AssistantMessage } from '@earendil-works/pi-ai';
import { Conversation } from './conversation.ts';
import type { ConversationRecord } from '../store/records.ts';
import { assistant, delta, input, ts } from './log-records.fixtures.ts';

/** Folds batches of records into a fresh conversation, one batch per argument. */
function fold(...batches: ConversationRecord[][]): Conversation {
  const conv = new Conversation();
  batches.forEach((records, seq) => conv.apply({ seq, records }));
  return conv;
}

const created: ConversationRecord = {
  type: 'conversation_created',
  conversationId: 'conv_1',
  uid: 'inst_1',
  initialData: { plan: 'pro' },
  ts,
};
const started = (step: string, id = 'sub_1'): ConversationRecord => ({
  type: 'assistant_started',
  messageId: 'msg_a',
  stepId: step,
  submissionId: id,
  attemptId: 'attempt_1',
  ts,
});
const completed = (step: string, message: AssistantMessage, id = 'sub_1'): ConversationRecord => ({
  type: 'assistant_completed',
  messageId: 'msg_a',
  stepId: step,
  submissionId: id,
  message,
  ts,
});

describe('Conversation', () => {
  it('is created by its birth record and follows the head of the batches it folds', () => {
    const conv = new Conversation();
    expect(conv.created).toBe(false);
    expect(conv.head).toBe(-1);
    conv.apply({ seq: 0, records: [created] });
    expect(conv).toMatchObject({ created: true, conversationId: 'conv_1', uid: 'inst_1', initialData: { plan: 'pro' }, head: 0 });
  });

  it('marks delivered input as applied and unread until a step answers it', () => {
    const conv = fold([created], [input('sub_1', 'hello')]);
    expect(conv.applied.has('sub_1')).toBe(true);
    expect(conv.tail.unread).toBe(true);
    expect(conv.lastDelivery).toMatchObject({ kind: 'user', body: 'hello' });
    conv.apply({ seq: 2, records: [started('s1'), completed('s1', assistant([{ type: 'text', text: 'Hi.' }]))] });
    expect(conv.tail.unread).toBe(false);
    expect(conv.finalAssistantText()).toBe('Hi.');
    expect(conv.modelContext().map((m) => m.role)).toEqual(['user', 'assistant']);
  });

  it('gives a step written whole, with no deltas, its text and reasoning from the completed message, as if they had streamed', () => {
    const message = assistant([
      { type: 'thinking', thinking: 'Think.' },
      { type: 'text', text: 'Said once.' },
    ]);
    const whole = fold([created], [input('sub_1', 'hello')], [started('s1'), completed('s1', message)]);
    const streamed = fold(
      [created],
      [input('sub_1', 'hello')],
      [started('s1'), delta(0, 'reasoning', 'Think.'), delta(1, 'text', 'Said once.'), completed('s1', message)],
    );
    expect(whole.snapshot().messages.at(-1)!.parts).toEqual([
      { type: 'reasoning', text: 'Think.', state: 'done' },
      { type: 'text', text: 'Said once.', state: 'done' },
    ]);
    expect(whole.snapshot().messages).toEqual(streamed.snapshot().messages);
    expect(whole.finalAssistantText()).toBe('Said once.');
  });

  it('does not repeat text that deltas of an earlier batch carried', () => {
    const conv = fold(
      [created],
      [input('sub_1', 'hello')],
      [started('s1'), delta(0, 'text', 'Said ')],
      [delta(0, 'text', 'once.'), completed('s1', assistant([{ type: 'text', text: 'Said once.' }]))],
    );
    expect(conv.snapshot().messages.at(-1)!.parts).toEqual([{ type: 'text', text: 'Said once.', state: 'done' }]);
  });

  it("adds nothing to a step that had deltas, though its completed message's blocks sit at other indexes (an interrupted step converged)", () => {
    const conv = fold(
      [created],
      [input('sub_1', 'hello')],
      // Block 0 was a tool call (no delta); the text streamed as block 1, and the converged message holds only it.
      [started('s1'), delta(1, 'text', 'Half')],
      [completed('s1', assistant([{ type: 'text', text: 'Half' }], 'aborted'))],
    );
    expect(conv.snapshot().messages.at(-1)!.parts).toEqual([{ type: 'text', text: 'Half', state: 'done' }]);
  });

  it('knows a step that started and never completed, with what it streamed', () => {
    const conv = fold([created], [input('sub_1', 'hello')], [started('s1'), delta(0, 'text', 'Hal'), delta(0, 'text', 'f')]);
    expect(conv.tail.openStep).toMatchObject({ stepId: 's1', blocks: [{ kind: 'text', text: 'Half' }] });
    expect(conv.tail.unread).toBe(true);
  });

  it("holds a completed step's tool calls pending until their results commit", () => {
    const call = { type: 'toolCall' as const, id: 'call_1', name: 'lookup', arguments: { q: 'x' } };
    const conv = fold([created], [input('sub_1', 'hello')], [started('s1'), completed('s1', assistant([call], 'toolUse'))]);
    expect(conv.tail.pendingToolCalls).toMatchObject({ stepId: 's1', calls: [{ id: 'call_1', name: 'lookup' }] });
    conv.apply({
      seq: 3,
      records: [
        {
          type: 'tool_results',
          stepId: 's1',
          messageId: 'msg_a',
          submissionId: 'sub_1',
          outcomes: [{ toolCallId: 'call_1', toolName: 'lookup', isError: false, content: '"found"' }],
          ts,
        },
      ],
    });
    expect(conv.tail.pendingToolCalls).toBeUndefined();
    expect(conv.response('sub_1').toolCalls).toEqual([{ tool: 'lookup', isError: false }]);
    expect(conv.modelContext().map((m) => m.role)).toEqual(['user', 'assistant', 'toolResult']);
  });

  it("counts a running call's progress lines for its response, and changes nothing else: no part, no model context, call still pending", () => {
    const call = { type: 'toolCall' as const, id: 'call_1', name: 'lookup', arguments: { q: 'x' } };
    const conv = fold([created], [input('sub_1', 'hello')], [started('s1'), completed('s1', assistant([call], 'toolUse'))]);
    const before = { messages: conv.snapshot().messages, context: conv.modelContext() };
    const lines = [
      { level: 'info' as const, message: 'page 1', timestamp: ts },
      { level: 'warn' as const, message: 'slow', attributes: { ms: 900 }, timestamp: ts },
    ];
    const progress = (seq: number, batch: typeof lines): void =>
      conv.apply({
        seq,
        records: [
          {
            type: 'tool_progress',
            stepId: 's1',
            messageId: 'msg_a',
            submissionId: 'sub_1',
            toolCallId: 'call_1',
            toolName: 'lookup',
            lines: batch,
          },
        ],
      });
    progress(3, lines.slice(0, 1));
    progress(4, lines.slice(1));
    expect(conv.response('sub_1').progress).toEqual({ lines: 2, chars: lines.reduce((sum, line) => sum + JSON.stringify(line).length, 0) });
    expect(conv.snapshot().messages).toEqual(before.messages);
    expect(conv.modelContext()).toEqual(before.context);
    expect(conv.tail.pendingToolCalls).toMatchObject({ stepId: 's1' });
  });

  it("answers a joined delivery with its leader's message, data included", () => {
    const conv = fold(
      [created],
      [input('sub_1', 'one')],
      [
        {
          type: 'user_message',
          messageId: 'msg_in_sub_2',
          submissionId: 'sub_2',
          joinedInto: 'sub_1',
          deliveryOrigin: 'app',
          body: 'two',
          ts,
        },
      ],
      [started('s1'), delta(0, 'text', 'Both.'), completed('s1', assistant([{ type: 'text', text: 'Both.' }]))],
      [{ type: 'data_write', submissionId: 'sub_1', messageId: 'msg_a', name: 'score', data: 3 }],
      [
        { type: 'submission_settled', submissionId: 'sub_1', outcome: 'completed', answeredBySubmissionId: 'sub_1', ts },
        { type: 'submission_settled', submissionId: 'sub_2', outcome: 'completed', answeredBySubmissionId: 'sub_1', ts },
      ],
    );
    expect(conv.reply('sub_2')).toEqual({ text: 'Both.', data: { score: [3] } });
    expect([...conv.settlements.keys()]).toEqual(['sub_1', 'sub_2']);
  });

  it('rebuilds the model context from a compaction summary and the kept messages', () => {
    const conv = fold(
      [created],
      [input('sub_1', 'old question')],
      [started('s1'), completed('s1', assistant([{ type: 'text', text: 'old answer' }]))],
      [input('sub_2', 'new question')],
      [{ type: 'compaction', summary: 'They talked.', firstKept: 2, tokensBefore: 100, ts }],
    );
    const context = conv.modelContext();
    expect(context).toHaveLength(2);
    expect(JSON.stringify(context[0])).toContain('They talked.');
    expect(context[1]).toMatchObject({ role: 'user' });
    expect(conv.previousSummary).toBe('They talked.');
  });

  it('shows the client a snapshot it cannot mutate the fold through', () => {
    const conv = fold([created], [input('sub_1', 'hello')]);
    const snapshot = conv.snapshot('inc_1');
    expect(snapshot).toMatchObject({ v: 1, conversationId: 'conv_1', incarnation: 'inc_1' });
    snapshot.messages.length = 0;
    expect(conv.messages.length).toBeGreaterThan(0);
  });

  it('drops the model messages before a compaction cut and keeps their indices', () => {
    const batches: ConversationRecord[][] = [
      [created],
      [input('sub_1', 'old question')],
      [started('s1'), completed('s1', assistant([{ type: 'text', text: 'old answer' }]))],
      [input('sub_2', 'new question')],
      [{ type: 'compaction', summary: 'They talked.', firstKept: 2, tokensBefore: 100, ts }],
    ];
    const conv = fold(...batches);
    expect(conv.modelLength).toBe(3);
    expect(conv.compactableEntries().map((entry) => entry.index)).toEqual([2]);
    // The cut is past the last assistant step; a delegated task still returns its text.
    expect(conv.finalAssistantText()).toBe('old answer');
    conv.apply({ seq: 5, records: [input('sub_3', 'later')] });
    expect(conv.compactableEntries().map((entry) => entry.index)).toEqual([2, 3]);
    expect(conv.modelContext()).toHaveLength(3);
  });
});

describe('a live fold', () => {
  const answered = (id: string, text: string, seqStart: number): { seq: number; records: ConversationRecord[] }[] => [
    { seq: seqStart, records: [input(id, `question ${id}`)] },
    {
      seq: seqStart + 1,
      records: [
        { ...started(`s_${id}`, id), messageId: `msg_a_${id}` } as ConversationRecord,
        { type: 'assistant_delta', messageId: `msg_a_${id}`, stepId: `s_${id}`, kind: 'text', block: 0, delta: text },
        { ...completed(`s_${id}`, assistant([{ type: 'text', text }]), id), messageId: `msg_a_${id}` } as ConversationRecord,
      ],
    },
    { seq: seqStart + 2, records: [{ type: 'data_write', submissionId: id, messageId: `msg_a_${id}`, name: 'n', data: id }] },
    { seq: seqStart + 3, records: [{ type: 'submission_settled', submissionId: id, outcome: 'completed', ts }] },
  ];

  it('holds no messages of settled responses, and knows which batches hold each reply', () => {
    const live = new Conversation('live');
    const transcript = new Conversation();
    const batches = [{ seq: 0, records: [created] }, ...answered('sub_1', 'One.', 1), ...answered('sub_2', 'Two.', 5)];
    // What the rows keep of each settlement is computed before its batch is applied.
    const stored = new Map<string, unknown>();
    const apply = (batch: (typeof batches)[number]) => {
      for (const [id, settlement] of live.settlementsToStore(batch.records, batch.seq)) stored.set(id, settlement.reply);
      live.apply(batch);
      transcript.apply(batch);
    };
    batches.slice(0, 7).forEach(apply);
    // sub_2's answer is streaming: its assistant message is held, no user message is.
    expect(live.messages.map((m) => m.id)).toEqual(['msg_a_sub_2']);
    batches.slice(7).forEach(apply);
    expect(live.messages).toEqual([]);
    expect(live.responseIfAny('sub_1')).toBeUndefined();
    expect(live.modelContext()).toEqual(transcript.modelContext());
    expect(() => live.snapshot()).toThrow(/transcript/);
    // The latest replies are at hand; where each lives is kept either way.
    expect(live.replySource('sub_2')).toBeUndefined();
    expect(live.reply('sub_2')).toEqual({ text: 'Two.', data: { n: ['sub_2'] } });
    // The rows keep where each reply lives: the response's batches after `after`, through the settlement's.
    expect(stored).toEqual(
      new Map([
        ['sub_1', { of: 'sub_1', after: 1 }],
        ['sub_2', { of: 'sub_2', after: 5 }],
      ]),
    );
    // Those batches alone answer the reply.
    const range = new Conversation();
    for (const batch of batches.filter((b) => b.seq > 1 && b.seq <= 4)) range.apply(batch);
    expect(range.reply('sub_1')).toEqual(transcript.reply('sub_1'));
  });

  it("keeps the latest responses' replies at hand, one per response however many deliveries joined it", () => {
    const live = new Conversation('live');
    const joined = (id: string): ConversationRecord => ({ ...input(id, 'me too'), joinedInto: 'sub_1' }) as ConversationRecord;
    const batches = [{ seq: 0, records: [created] }, ...answered('sub_1', 'One.', 1)];
    batches.splice(2, 0, { seq: 1.5, records: [joined('sub_j1'), joined('sub_j2')] });
    const settle = (id: string): ConversationRecord => ({
      type: 'submission_settled',
      submissionId: id,
      outcome: 'completed',
      answeredBySubmissionId: 'sub_1',
      ts,
    });
    batches.at(-1)!.records.push(settle('sub_j1'), settle('sub_j2'));
    batches.forEach((batch, seq) => live.apply({ ...batch, seq }));
    for (const id of ['sub_1', 'sub_j1', 'sub_j2']) {
      expect(live.replySource(id)).toBeUndefined();
      expect(live.reply(id)).toEqual({ text: 'One.', data: { n: ['sub_1'] } });
    }
    // Nine later responses push it out: its deliveries then read it from the log.
    let seq = batches.length;
    for (let n = 2; n <= 10; n++) {
      for (const batch of answered(`sub_${n}`, `${n}.`, seq)) live.apply(batch);
      seq += 4;
    }
    expect(live.replySource('sub_j2')).toEqual({ of: 'sub_1', after: 2, through: 5 });
    expect(live.reply('sub_10')).toEqual({ text: '10.', data: { n: ['sub_10'] } });
  });

  it('gives every reader of a shared reply its own copy, and a later record in the batch its own reply', () => {
    const live = new Conversation('live');
    const plain = answered('sub_1', 'Plain.', 1).filter((batch) => batch.records[0]!.type !== 'data_write');
    const settled = plain.at(-1)!.records[0]!;
    // Within one batch, a settlement after another record notes its reply again.
    plain.at(-1)!.records.push({ type: 'data_write', submissionId: 'sub_1', messageId: 'msg_a_sub_1', name: 'n', data: 'late' }, {
      ...settled,
      submissionId: 'sub_j',
      answeredBySubmissionId: 'sub_1',
    } as ConversationRecord);
    for (const batch of [{ seq: 0, records: [created] }, ...plain]) live.apply(batch);
    expect(live.reply('sub_j')).toEqual({ text: 'Plain.', data: { n: ['late'] } });
    // A plain reply, copied without a clone: still each reader's own.
    for (const batch of answered('sub_2', 'Two.', 4).filter((batch) => batch.records[0]!.type !== 'data_write')) live.apply(batch);
    const first = live.reply('sub_2');
    expect(first).toEqual({ text: 'Two.', data: {} });
    first.text = 'changed';
    first.data.x = [1];
    expect(live.reply('sub_2')).toEqual({ text: 'Two.', data: {} });
    const copy = live.reply('sub_j');
    copy.data.n!.push('mutated');
    expect(live.reply('sub_j')).toEqual({ text: 'Plain.', data: { n: ['late'] } });
  });

  it('is rebuilt from its state exactly, origin of the last delivery included', () => {
    const live = new Conversation('live');
    const batches = [{ seq: 0, records: [created] }, ...answered('sub_1', 'One.', 1), { seq: 5, records: [input('sub_2', 'open')] }];
    for (const batch of batches) live.apply(batch);
    const restored = Conversation.restore(JSON.parse(JSON.stringify(live.state())));
    expect(restored.state()).toEqual(live.state());
    expect((restored.lastDelivery as { origin?: string }).origin).toBe('app');
    const next = { seq: 6, records: [started('s2', 'sub_2'), completed('s2', assistant([{ type: 'text', text: 'Open.' }]), 'sub_2')] };
    live.apply(next);
    restored.apply(next);
    expect(restored.state()).toEqual(live.state());
  });
});
