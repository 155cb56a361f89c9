/**
 * Crash tests for delegated tasks (durability.md §6.2–§6.3): a `task` call's child session is
 * recorded as its own stream; a process SIGKILLed while the child streams is recovered by a NEW
 * process that resumes the child from its log (not a fresh start) and commits the child's real
 * final text as the parent's tool result. A delegate no longer declared settles as an error.
 */
import { describe, expect, it } from 'vitest';
import { committedDeltas, inspectDb, poll, streamOf } from './harness.ts';
import { expectSettledExactlyOnce, indexOf, replyOf, useCrashSuite } from './suite.ts';

const t = useCrashSuite();

/** The child stream a parent's `task` call opened, once its retained record is committed. */
function childStreams(db: string, stream: string): { stream: string; conversationId: string; parentToolCallId: string }[] {
  return inspectDb(db, stream)
    .records.filter((r) => r.record.type === 'child_session_retained')
    .map((r) => r.record.child);
}

const hasDeltaBatch = (db: string, stream: string) => () => inspectDb(db, stream).records.some((r) => r.record.type === 'assistant_delta');

describe('SIGKILL while a delegated task streams, recovery in a new process', () => {
  it('the child conversation resumes from its log and the parent gets its real final text', async () => {
    const { server, s } = t;
    server.script(
      { toolCalls: [{ id: 'call_task_1', name: 'task', arguments: { agent: 'researcher', prompt: 'Research foxes.' } }] },
      // The child's stream: one delta every 100 ms, holding after "quick " forever.
      { text: ['Foxes ', 'are ', 'clever ', 'and ', 'quick ', 'and'], chunkDelayMs: 100, hangAfterChunks: 6 },
      { text: 'and they outlive crashes.' },
      { text: 'The researcher says foxes outlive crashes.' },
      { text: 'spare step (unexpected extra model call)' },
    );
    const stream = streamOf('DelegatingAgent', 'foxes');
    const c1 = t.child({ agent: 'DelegatingAgent', id: 'foxes', dispatch: ['Tell me about foxes.'], follow: true, then: 'hold' });
    const first = (await c1.waitFor('receipt')).receipt;
    const [child] = await poll('the child session to be retained', () => {
      const found = childStreams(s.db, stream);
      return found.length > 0 ? found : undefined;
    });
    expect(child).toMatchObject({ parentToolCallId: 'call_task_1', conversationId: expect.stringMatching(/^conv_/) });
    expect(child!.stream).toMatch(/^tasks\/agents\/DelegatingAgent\/foxes\/msg_[0-9A-Z]+\/call_task_1$/);
    await poll('a committed assistant_delta batch in the child', hasDeltaBatch(s.db, child!.stream), 30_000);
    await c1.kill();

    const crashedChild = inspectDb(s.db, child!.stream);
    const [[stepId, partial]] = [...committedDeltas(crashedChild)] as [[string, string]];
    expect(partial.startsWith('Foxes ')).toBe(true);
    expect(crashedChild.records.some((r) => r.record.type === 'assistant_completed')).toBe(false);
    expect(inspectDb(s.db, stream).records.some((r) => r.record.type === 'tool_results')).toBe(false);

    const lines = await t.runToEnd({ agent: 'DelegatingAgent', id: 'foxes', read: [first] });

    // Parent step, child's first (cut) step, the child's continuation, the parent's answer.
    expect(server.requests.length).toBe(4);
    const resumed = server.requests[2]!;
    expect(resumed.system).toContain('You research questions.');
    const order = [
      indexOf(resumed, (m) => m.role === 'user' && m.content === 'Research foxes.', 'the task prompt'),
      indexOf(resumed, (m) => m.role === 'assistant' && m.content === partial, `the child's partial "${partial}"`),
      indexOf(resumed, (m) => m.role === 'user' && m.content.includes('type="stream_interrupted"'), 'the stream_interrupted signal'),
      indexOf(resumed, (m) => m.role === 'user' && m.content.includes('type="stream_continued"'), 'the stream_continued signal'),
    ];
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(resumed.messages.some((m) => m.content.includes('Tell me about foxes.'))).toBe(false);

    const parent = server.requests[3]!;
    const result = parent.messages[indexOf(parent, (m) => m.role === 'tool' && m.toolCallId === 'call_task_1', 'the task result')]!;
    expect(result).toMatchObject({ content: 'and they outlive crashes.', isError: false });
    expect(replyOf(lines, first.submissionId)).toBe('The researcher says foxes outlive crashes.');

    const view = inspectDb(s.db, stream);
    expectSettledExactlyOnce(view, [first.submissionId]);
    expect(view.submissions[0]!.attemptCount).toBe(2);
    expect(childStreams(s.db, stream)).toEqual([child]); // retained once, never re-created
    expect(view.records.filter((r) => r.record.type === 'tool_results').map((r) => r.record.outcomes[0])).toMatchObject([
      { toolCallId: 'call_task_1', toolName: 'task', isError: false, content: 'and they outlive crashes.' },
    ]);
    // The child's log continues where it stopped: one birth, the converged cut step, the new step.
    const childView = inspectDb(s.db, child!.stream);
    expect(childView.records.filter((r) => r.record.type === 'conversation_created')).toHaveLength(1);
    const completed = childView.records.filter((r) => r.record.type === 'assistant_completed').map((r) => r.record);
    expect(completed).toHaveLength(2);
    expect(completed[0]).toMatchObject({
      stepId,
      message: { stopReason: 'aborted', errorMessage: 'Stream interrupted before completion.' },
    });
    expect(completed[1]!.message.stopReason).toBe('stop');
    // Child records run under the parent's submission, in the recovering attempt.
    expect(completed[1]!.submissionId).toBe(first.submissionId);
    await t.expectQuietRestart('DelegatingAgent', 'foxes', stream, view);
  });

  it('a nested delegation resumes recursively', async () => {
    const { server, s } = t;
    server.script(
      { toolCalls: [{ id: 'call_outer', name: 'task', arguments: { agent: 'researcher', prompt: 'Research owls.' } }] },
      { toolCalls: [{ id: 'call_inner', name: 'task', arguments: { agent: 'fact-checker', prompt: 'Check: owls are birds.' } }] },
      { text: ['Owls ', 'are ', 'birds', '...'], chunkDelayMs: 100, hangAfterChunks: 4 },
      { text: 'Confirmed.' },
      { text: 'Owls are birds (checked).' },
      { text: 'Owls are birds.' },
      { text: 'spare step (unexpected extra model call)' },
    );
    const stream = streamOf('DelegatingAgent', 'owls');
    const c1 = t.child({ agent: 'DelegatingAgent', id: 'owls', dispatch: ['Tell me about owls.'], follow: true, then: 'hold' });
    const first = (await c1.waitFor('receipt')).receipt;
    const outer = await poll('the outer child', () => childStreams(s.db, stream)[0]);
    const inner = await poll('the inner child', () => childStreams(s.db, outer.stream)[0]);
    await poll('a committed delta in the inner child', hasDeltaBatch(s.db, inner.stream), 30_000);
    await c1.kill();

    const lines = await t.runToEnd({ agent: 'DelegatingAgent', id: 'owls', read: [first] });
    expect(replyOf(lines, first.submissionId)).toBe('Owls are birds.');
    expect(server.requests.length).toBe(6);
    // The inner child continued (its partial in context), the outer child got the inner's real text.
    expect(server.requests[3]!.messages.some((m) => m.role === 'assistant' && m.content.startsWith('Owls '))).toBe(true);
    const outerResult = server.requests[4]!.messages.find((m) => m.role === 'tool' && m.toolCallId === 'call_inner');
    expect(outerResult).toMatchObject({ content: 'Confirmed.', isError: false });
    const parentResult = server.requests[5]!.messages.find((m) => m.role === 'tool' && m.toolCallId === 'call_outer');
    expect(parentResult).toMatchObject({ content: 'Owls are birds (checked).', isError: false });
    expectSettledExactlyOnce(inspectDb(s.db, stream), [first.submissionId]);
  });

  it('a delegate no longer declared at recovery settles the call as an error naming its child conversation', async () => {
    const { server, s } = t;
    server.script(
      { toolCalls: [{ id: 'call_task_2', name: 'task', arguments: { agent: 'researcher', prompt: 'Research badgers.' } }] },
      { text: ['Badgers ', 'dig', '...'], chunkDelayMs: 100, hangAfterChunks: 3 },
      { text: 'The researcher is gone, so I cannot say.' },
      { text: 'spare step (unexpected extra model call)' },
    );
    const stream = streamOf('DelegatingAgent', 'badgers');
    const c1 = t.child({ agent: 'DelegatingAgent', id: 'badgers', dispatch: ['Tell me about badgers.'], follow: true, then: 'hold' });
    const first = (await c1.waitFor('receipt')).receipt;
    const child = await poll('the child session', () => childStreams(s.db, stream)[0]);
    await poll('a committed delta in the child', hasDeltaBatch(s.db, child.stream), 30_000);
    await c1.kill();

    const lines = await t.runToEnd({ agent: 'DelegatingAgent', id: 'badgers', read: [first] }, { FLUE_CRASH_UNDECLARE: 'researcher' });
    expect(server.requests.length).toBe(3);
    const marker = JSON.stringify({
      type: 'interrupted',
      message: 'Tool execution was interrupted before completion. The outcome is unknown.',
      childConversationId: child.conversationId,
    });
    const parent = server.requests[2]!;
    expect(parent.messages.find((m) => m.role === 'tool' && m.toolCallId === 'call_task_2')).toMatchObject({
      content: marker,
      isError: true,
    });
    expect(replyOf(lines, first.submissionId)).toBe('The researcher is gone, so I cannot say.');
    expectSettledExactlyOnce(inspectDb(s.db, stream), [first.submissionId]);
  });
});
