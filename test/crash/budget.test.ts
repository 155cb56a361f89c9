/**
 * Crash tests on Node, part 3 (durability.md §5, §6, §6.3): the attempt budget and the deadline
 * across crashes, including a process frozen right after claiming an attempt (before the input is
 * applied). Every failure path must leave the conversation usable. See mid-work.test.ts for the
 * set-up.
 */
import { describe, expect, it } from 'vitest';
import { type Child, inspectDb, poll, settledRecords, sideEvents, streamOf } from './harness.ts';
import {
  INTERRUPTED_MARKER,
  dispatchVia,
  expectSettledExactlyOnce,
  indexOf,
  lineOf,
  messageOf,
  readErrorOf,
  replyOf,
  transcript,
  useCrashSuite,
} from './suite.ts';

const t = useCrashSuite();

/** Freezes the child inside the `submission_running` observer: claimed, input not yet applied. */
const FREEZE_AT_CLAIM = { FLUE_CRASH_FREEZE: 'submission_running' };

/** A step that streams all but the last chunk of `words` (one every 100 ms), then hangs. */
const hangingStream = (words: string[]) => ({ text: words, chunkDelayMs: 100, hangAfterChunks: 2 + words.length - 1 });

describe('attempt budget and deadline across crashes', () => {
  it('after the claim, before the input is applied (frozen at submission_running): the next process applies it once', async () => {
    const { server, s } = t;
    server.script({ text: 'Told once.' }, { text: 'spare step (unexpected extra model call)' });
    const stream = streamOf('StoryAgent', 'frozen');
    const c1 = t.child({ agent: 'StoryAgent', id: 'frozen', dispatch: ['Tell me once.'], then: 'hold' }, FREEZE_AT_CLAIM);
    const first = (await c1.waitFor('receipt')).receipt;
    await poll('the first attempt to be claimed', () => sideEvents(s.side).some((e) => e.event === 'frozen'));
    const beforeKill = inspectDb(s.db, stream);
    expect(beforeKill.submissions).toMatchObject([{ id: first.submissionId, status: 'running', attemptCount: 1 }]);
    expect(beforeKill.records.map((r) => r.record.type)).toEqual(['conversation_created']);
    await c1.kill();

    const lines = await t.runToEnd({ agent: 'StoryAgent', id: 'frozen', read: [first] });
    expect(replyOf(lines, first.submissionId)).toBe('Told once.');
    expect(server.requests.length).toBe(1);
    expect(transcript(server.requests[0]!)).toEqual(['user: Tell me once.']);
    const view = inspectDb(s.db, stream);
    expectSettledExactlyOnce(view, [first.submissionId]);
    expect(view.records.filter((r) => r.record.type === 'user_message')).toHaveLength(1);
    expect(view.submissions[0]!.attemptCount).toBe(2);
  });

  it('every attempt dies before the input is applied: settles failed (SubmissionRetryExhaustedError, phase retry_exhausted_before_input), the lane stays usable', async () => {
    const { server, s } = t;
    server.script({ text: 'I am here now.' }, { text: 'spare step (unexpected extra model call)' });
    const stream = streamOf('FragileAgent', 'never-applied'); // maxAttempts: 2
    const c1 = t.child({ agent: 'FragileAgent', id: 'never-applied', dispatch: ['Hello?'], then: 'hold' }, FREEZE_AT_CLAIM);
    const first = (await c1.waitFor('receipt')).receipt;
    await poll('attempt 1 claimed', () => sideEvents(s.side).some((e) => e.event === 'frozen' && e.pid === c1.pid));
    await c1.kill();
    const c2 = t.child({ agent: 'FragileAgent', id: 'never-applied', then: 'hold' }, FREEZE_AT_CLAIM); // recovery claims attempt 2
    await poll('attempt 2 claimed', () => sideEvents(s.side).some((e) => e.event === 'frozen' && e.pid === c2.pid));
    expect(inspectDb(s.db, stream).submissions).toMatchObject([{ status: 'running', attemptCount: 2 }]);
    await c2.kill();

    const lines = await t.runToEnd({ agent: 'FragileAgent', id: 'never-applied', read: [first], converse: ['Second chance?'] });
    expect(readErrorOf(lines, first.submissionId)).toMatchObject({ name: 'AgentRunError', outcome: 'failed' });
    const third = lineOf(lines, 'receipt').receipt;
    expect(replyOf(lines, third.submissionId)).toBe('I am here now.');

    const view = inspectDb(s.db, stream);
    expectSettledExactlyOnce(view, [first.submissionId], 'failed');
    expectSettledExactlyOnce(view, [third.submissionId], 'completed');
    expect(settledRecords(view).get(first.submissionId)![0]!.record.error).toMatchObject({
      type: 'submission_retry_exhausted',
      message: 'Every attempt (2 of 2) was interrupted before the delivered input was applied.',
      meta: { phase: 'retry_exhausted_before_input', attemptCount: 2, maxAttempts: 2 },
    });
    // Never applied: no input record, no advisory, and the model never saw it.
    expect(view.records.filter((r) => r.record.type === 'user_message').map((r) => r.record.submissionId)).toEqual([third.submissionId]);
    expect(view.records.filter((r) => r.record.type === 'signal' && String(r.record.signalType).startsWith('submission_'))).toEqual([]);
    expect(server.requests.length).toBe(1);
    expect(transcript(server.requests[0]!)).toEqual(['user: Second chance?']);
  });

  it('a second mid-stream crash exhausts the budget: host and joined delivery fail exactly once, the transcript is at rest', async () => {
    const { server, s } = t;
    server.script(
      hangingStream(['First ', 'try ', 'at ', 'it ', 'now']),
      hangingStream(['Second ', 'try ', 'at ', 'it ', 'now']),
      { text: 'Yes, I am here.' },
      { text: 'spare step (unexpected extra model call)' },
    );
    const stream = streamOf('FragileAgent', 'fragile');
    /** Whether `c` committed streamed text after batch `seq`; a child that died fails the wait at once. */
    const deltaAfter = (c: Child, seq: number) => () => {
      if (!c.alive)
        throw new Error(
          `child ${c.pid} exited while the test waited for its deltas.\nstdout: ${JSON.stringify(c.lines)}\nstderr:\n${c.stderr()}`,
        );
      try {
        return inspectDb(s.db, stream).records.some((r) => r.record.type === 'assistant_delta' && r.seq > seq);
      } catch (error) {
        // A child opening the file after its predecessor was killed rebuilds the WAL index under
        // an exclusive lock; the harness's read-only connection does not wait for it. Ask again.
        if (error instanceof Error && error.message === 'database is locked') return false;
        throw error;
      }
    };

    // Attempt 1 dies mid-stream with a second delivery queued behind it.
    const c1 = t.child({ agent: 'FragileAgent', id: 'fragile', dispatch: ['Tell me a story.'], follow: true, then: 'hold' });
    const first = (await c1.waitFor('receipt')).receipt;
    await poll('attempt 1 deltas', deltaAfter(c1, -1), 30_000);
    const second = await dispatchVia(c1, 'Make it short.');
    await c1.kill();

    // Attempt 2 (recovery) converges, joins the queued delivery, and dies mid-stream too.
    const mark = Math.max(...inspectDb(s.db, stream).records.map((r) => r.seq));
    const c2 = t.child({ agent: 'FragileAgent', id: 'fragile', read: [first], follow: true, then: 'hold' });
    await poll('attempt 2 deltas', deltaAfter(c2, mark), 30_000);
    expect(inspectDb(s.db, stream).submissions.map((r) => [r.status, r.attemptCount, r.joinedInto])).toEqual([
      ['running', 2, null],
      ['joined', 0, first.submissionId],
    ]);
    await c2.kill();

    // The budget (2) is spent: the third process settles both failed, then serves new work.
    const lines = await t.runToEnd({ agent: 'FragileAgent', id: 'fragile', read: [first, second], converse: ['Are you there?'] });
    for (const receipt of [first, second]) {
      const failed = readErrorOf(lines, receipt.submissionId);
      expect(failed).toMatchObject({ name: 'AgentRunError', outcome: 'failed' });
      expect(failed.message).toContain('attempt budget (2)');
    }
    const third = lineOf(lines, 'receipt').receipt;
    expect(replyOf(lines, third.submissionId)).toBe('Yes, I am here.');

    const view = inspectDb(s.db, stream);
    expectSettledExactlyOnce(view, [first.submissionId, second.submissionId], 'failed');
    expectSettledExactlyOnce(view, [third.submissionId], 'completed');
    const settled = settledRecords(view);
    expect(settled.get(first.submissionId)![0]!.record.error).toMatchObject({ type: 'submission_retry_exhausted' });
    expect(settled.get(second.submissionId)![0]!.record).toMatchObject({ outcome: 'failed', answeredBySubmissionId: first.submissionId });
    // Rest state: both interrupted streams closed, one failure advisory, and the next turn sees a
    // coherent transcript ending in the new message.
    const started = new Set(view.records.filter((r) => r.record.type === 'assistant_started').map((r) => r.record.stepId));
    const closed = new Set(view.records.filter((r) => r.record.type === 'assistant_completed').map((r) => r.record.stepId));
    expect([...started].filter((id) => !closed.has(id))).toEqual([]);
    expect(view.records.filter((r) => r.record.type === 'signal' && r.record.signalType === 'submission_interrupted')).toHaveLength(1);
    expect(server.requests.length).toBe(3);
    const next = server.requests[2]!;
    const order = [
      indexOf(next, (m) => m.role === 'assistant' && m.content.startsWith('First '), 'the first partial'),
      indexOf(next, (m) => m.role === 'user' && m.content === 'Make it short.', 'the joined message'),
      indexOf(next, (m) => m.role === 'assistant' && m.content.startsWith('Second '), 'the second partial'),
      indexOf(next, (m) => m.role === 'user' && m.content.includes('type="submission_interrupted"'), 'the failure advisory'),
      indexOf(next, (m) => m.role === 'user' && m.content === 'Are you there?', 'the new message'),
    ];
    expect([...order].sort((a, b) => a - b)).toEqual(order);
  });

  it('a durable step interrupted in every attempt: retry exhaustion lists the call, marker-settles it, the lane stays usable', async () => {
    const { server, s } = t;
    server.script(
      { toolCalls: [{ id: 'call_provision_x', name: 'provision', arguments: { order: 'ox' } }] },
      { text: 'Hello again.' },
      { text: 'spare step (unexpected extra model call)' },
    );
    const stream = streamOf('FragileAgent', 'exhausted-tool');
    const block = { FLUE_CRASH_BLOCK: 'ship' };
    const c1 = t.child({ agent: 'FragileAgent', id: 'exhausted-tool', dispatch: ['Provision ox.'], then: 'hold' }, block);
    const first = (await c1.waitFor('receipt')).receipt;
    await poll('ship in attempt 1', () => sideEvents(s.side).some((e) => e.step === 'ship' && e.pid === c1.pid));
    await c1.kill();
    const c2 = t.child({ agent: 'FragileAgent', id: 'exhausted-tool', then: 'hold' }, block);
    await poll('ship in attempt 2', () => sideEvents(s.side).some((e) => e.step === 'ship' && e.pid === c2.pid));
    await c2.kill();

    const lines = await t.runToEnd({ agent: 'FragileAgent', id: 'exhausted-tool', read: [first], converse: ['Hello?'] });
    expect(readErrorOf(lines, first.submissionId)).toMatchObject({ outcome: 'failed' });
    // reserve and charge ran once (attempt 1), ship once per attempt; exhaustion runs nothing.
    expect(sideEvents(s.side).map((e) => [e.step, e.pid])).toEqual([
      ['reserve', c1.pid],
      ['charge', c1.pid],
      ['ship', c1.pid],
      ['ship', c2.pid],
    ]);
    const view = inspectDb(s.db, stream);
    const third = lineOf(lines, 'receipt').receipt;
    expectSettledExactlyOnce(view, [first.submissionId], 'failed');
    expectSettledExactlyOnce(view, [third.submissionId], 'completed');
    expect(settledRecords(view).get(first.submissionId)![0]!.record.error).toMatchObject({
      type: 'submission_retry_exhausted',
      meta: { attemptCount: 2, maxAttempts: 2, interruptedTools: [{ name: 'provision', id: 'call_provision_x' }] },
    });
    const advisory = view.records.find((r) => r.record.type === 'signal' && r.record.signalType === 'submission_interrupted')!.record;
    expect(advisory.attributes).toMatchObject({ reason: 'exhausted_retry_budget', interruptedTools: 'provision' });
    expect(view.records.filter((r) => r.record.type === 'tool_results').map((r) => r.record.outcomes)).toEqual([
      [{ toolCallId: 'call_provision_x', toolName: 'provision', isError: true, content: INTERRUPTED_MARKER }],
    ]);
    expect(server.requests.length).toBe(2);
    expect(messageOf(server.requests[1]!, (m) => m.role === 'tool', 'the marker result')).toMatchObject({
      content: INTERRUPTED_MARKER,
      isError: true,
    });
    expect(replyOf(lines, third.submissionId)).toBe('Hello again.');
  });

  it('a restart past the deadline (measured from the first attempt, never re-anchored) settles failed with SubmissionTimeoutError', async () => {
    const { server, s } = t;
    server.script(
      hangingStream(['Once ', 'upon ', 'a ', 'time ', 'there']),
      { text: 'Still here.' },
      { text: 'spare step (unexpected extra model call)' },
    );
    const stream = streamOf('DeadlineAgent', 'deadline'); // timeoutMs: 1500
    const c1 = t.child({ agent: 'DeadlineAgent', id: 'deadline', dispatch: ['Tell me a story.'], follow: true, then: 'hold' });
    const first = (await c1.waitFor('receipt')).receipt;
    await poll(
      'a committed assistant_delta batch',
      () => inspectDb(s.db, stream).records.some((r) => r.record.type === 'assistant_delta'),
      30_000,
    );
    await c1.kill();
    const startedAt = inspectDb(s.db, stream).submissions[0]!.startedAt!;
    const wait = startedAt + 1500 + 50 - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));

    const lines = await t.runToEnd({ agent: 'DeadlineAgent', id: 'deadline', read: [first], converse: ['Are you there?'] });
    expect(readErrorOf(lines, first.submissionId)).toMatchObject({ outcome: 'failed' });
    const view = inspectDb(s.db, stream);
    expectSettledExactlyOnce(view, [first.submissionId], 'failed');
    expect(settledRecords(view).get(first.submissionId)![0]!.record.error).toMatchObject({ type: 'submission_timeout' });
    expect(view.submissions[0]).toMatchObject({ startedAt, attemptCount: 1 }); // no new attempt started
    const advisories = view.records.filter((r) => r.record.type === 'signal' && r.record.signalType === 'submission_interrupted');
    expect(advisories.map((r) => r.record.attributes?.reason)).toEqual(['exceeded_timeout']);
    expect(view.records.find((r) => r.record.type === 'assistant_completed')!.record.message).toMatchObject({ stopReason: 'aborted' });
    // The timed-out work made no model call; the next message did, from a transcript at rest.
    expect(server.requests.length).toBe(2);
    const next = server.requests[1]!;
    expect(indexOf(next, (m) => m.content.includes('type="submission_interrupted"'), 'the timeout advisory')).toBeLessThan(
      indexOf(next, (m) => m.content === 'Are you there?', 'the new message'),
    );
    expect(replyOf(lines, lineOf(lines, 'receipt').receipt.submissionId)).toBe('Still here.');
  });
});
