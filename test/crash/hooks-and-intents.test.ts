/**
 * Crash tests on Node, part 2 (durability.md §6, §8, §9; delivery.md §3, §5): SIGKILL while a
 * lifecycle hook runs, with an abort intent recorded, and with a keyed dispatch retried after
 * the crash. See mid-work.test.ts for the set-up.
 */
import { describe, expect, it } from 'vitest';
import { inspectDb, poll, sideEvents, streamOf } from './harness.ts';
import {
  dispatchVia,
  expectSettledExactlyOnce,
  gate,
  indexOf,
  lineOf,
  pidOf,
  readErrorOf,
  replyOf,
  transcript,
  useCrashSuite,
} from './suite.ts';

const t = useCrashSuite();

const recordsOf = (view: ReturnType<typeof inspectDb>, type: string) => view.records.filter((r) => r.record.type === type);

describe('SIGKILL inside lifecycle hooks', () => {
  it('inside useAgentStart (input applied, hook marker not yet committed): the hook re-runs, its state write counts once', async () => {
    const { server, s } = t;
    server.script({ text: 'Started fine.' }, { text: 'spare step (unexpected extra model call)' });
    const stream = streamOf('HookedAgent', 'hooked-start');
    const c1 = t.child(
      // Followed, so the input is committed as the response starts (unfollowed, it would wait for the hook's batch).
      { agent: 'HookedAgent', id: 'hooked-start', dispatch: ['Hello there.'], follow: true, then: 'hold' },
      { FLUE_CRASH_BLOCK: 'agent-start' },
    );
    const first = (await c1.waitFor('receipt')).receipt;
    await poll('useAgentStart to run', () => sideEvents(s.side).some((e) => e.event === 'agent-start'));
    const second = await dispatchVia(c1, 'Are you still there?');
    const beforeKill = inspectDb(s.db, stream);
    expect(recordsOf(beforeKill, 'user_message').map((r) => r.record.submissionId)).toEqual([first.submissionId]);
    expect(recordsOf(beforeKill, 'agent_start_run')).toEqual([]);
    expect(beforeKill.state).toEqual({});
    await c1.kill();

    const lines = await t.runToEnd({ agent: 'HookedAgent', id: 'hooked-start', read: [first, second] });
    // The first delivery's hook ran in both processes; the joined delivery's once.
    expect(sideEvents(s.side).map((e) => [e.event, e.body, e.pid])).toEqual([
      ['agent-start', 'Hello there.', c1.pid],
      ['agent-start', 'Hello there.', pidOf(lines)],
      ['agent-start', 'Are you still there?', pidOf(lines)],
      ['agent-finish', undefined, pidOf(lines)],
    ]);
    expect(replyOf(lines, first.submissionId)).toBe('Started fine.');
    expect(replyOf(lines, second.submissionId)).toBe('Started fine.');

    const view = inspectDb(s.db, stream);
    expectSettledExactlyOnce(view, [first.submissionId, second.submissionId]);
    // Exactly-once recording: the interrupted hook's state write never happened.
    expect(view.state).toEqual({ starts: 2 });
    expect(recordsOf(view, 'agent_start_run').map((r) => r.record.submissionId)).toEqual([first.submissionId, second.submissionId]);
    // The input was applied once; the model saw each message once.
    expect(recordsOf(view, 'user_message').map((r) => r.record.submissionId)).toEqual([first.submissionId, second.submissionId]);
    expect(server.requests.length).toBe(1);
    expect(transcript(server.requests[0]!)).toEqual(['user: Hello there.', 'user: Are you still there?']);
  });

  it('inside useAgentFinish (reply committed, not yet settled): no model call repeats, the hook re-runs, settles completed', async () => {
    const { server, s } = t;
    server.script({ text: 'Final answer.' }, { text: 'spare step (unexpected extra model call)' });
    const stream = streamOf('HookedAgent', 'hooked-finish');
    const c1 = t.child(
      { agent: 'HookedAgent', id: 'hooked-finish', dispatch: ['Question?'], then: 'hold' },
      { FLUE_CRASH_BLOCK: 'agent-finish' },
    );
    const first = (await c1.waitFor('receipt')).receipt;
    await poll('useAgentFinish to run', () => sideEvents(s.side).some((e) => e.event === 'agent-finish'));
    const beforeKill = inspectDb(s.db, stream);
    expect(recordsOf(beforeKill, 'assistant_completed').map((r) => r.record.message.stopReason)).toEqual(['stop']);
    expect(recordsOf(beforeKill, 'submission_settled')).toEqual([]);
    await c1.kill();

    const lines = await t.runToEnd({ agent: 'HookedAgent', id: 'hooked-finish', read: [first] });
    expect(replyOf(lines, first.submissionId)).toBe('Final answer.');
    expect(server.requests.length).toBe(1);
    expect(sideEvents(s.side).map((e) => [e.event, e.pid])).toEqual([
      ['agent-start', c1.pid], // its marker committed: not re-run
      ['agent-finish', c1.pid],
      ['agent-finish', pidOf(lines)], // interrupted before any checkpoint: re-run
    ]);
    const view = inspectDb(s.db, stream);
    expectSettledExactlyOnce(view, [first.submissionId]);
    expect(view.submissions[0]!.attemptCount).toBe(2);
    expect(view.state).toEqual({ starts: 1 });
  });

  it('a joined delivery crashed inside its own useAgentStart: its hook re-runs, then the host answers both', async () => {
    const { server, s } = t;
    const secondQueued = gate();
    server.script(
      // The first turn answers only once the second delivery is queued, so it joins at the boundary.
      async () => {
        await secondQueued.promise;
        return { text: 'First answer given.' };
      },
      { text: 'Both answered.' },
      { text: 'spare step (unexpected extra model call)' },
    );
    const stream = streamOf('HookedAgent', 'joined-hook');
    const c1 = t.child(
      { agent: 'HookedAgent', id: 'joined-hook', dispatch: ['First question.'], then: 'hold' },
      { FLUE_CRASH_BLOCK: 'agent-start-marked' },
    );
    const first = (await c1.waitFor('receipt')).receipt;
    await server.waitForRequests(1, 30_000);
    const second = await dispatchVia(c1, 'Second question [hold].');
    secondQueued.open();
    await poll(
      'the joined delivery to reach its hook',
      () => sideEvents(s.side).some((e) => e.event === 'agent-start' && String(e.body).includes('[hold]')),
      30_000,
    );
    const beforeKill = inspectDb(s.db, stream);
    expect(beforeKill.submissions.map((r) => [r.id, r.status, r.joinedInto])).toEqual([
      [first.submissionId, 'running', null],
      [second.submissionId, 'joined', first.submissionId],
    ]);
    expect(recordsOf(beforeKill, 'agent_start_run').map((r) => r.record.submissionId)).toEqual([first.submissionId]);
    await c1.kill();

    const lines = await t.runToEnd({ agent: 'HookedAgent', id: 'joined-hook', read: [first, second] });
    expect(
      sideEvents(s.side)
        .filter((e) => e.event === 'agent-start')
        .map((e) => [e.body, e.pid]),
    ).toEqual([
      ['First question.', c1.pid],
      ['Second question [hold].', c1.pid],
      ['Second question [hold].', pidOf(lines)],
    ]);
    expect(server.requests.length).toBe(2);
    expect(transcript(server.requests[1]!)).toEqual([
      'user: First question.',
      'assistant: First answer given.',
      'user: Second question [hold].',
    ]);
    expect(replyOf(lines, first.submissionId)).toContain('Both answered.');
    expect(replyOf(lines, second.submissionId)).toContain('Both answered.');
    const view = inspectDb(s.db, stream);
    expectSettledExactlyOnce(view, [first.submissionId, second.submissionId]);
    expect(view.state).toEqual({ starts: 2 });
    expect(recordsOf(view, 'agent_start_run').map((r) => r.record.submissionId)).toEqual([first.submissionId, second.submissionId]);
  });
});

describe('durable intents across a crash', () => {
  it('an abort recorded before the crash: the restart settles the running and the queued submission aborted, then serves new work', async () => {
    const { server, s } = t;
    server.script({ text: 'Fresh reply.' }, { text: 'spare step (unexpected extra model call)' });
    const stream = streamOf('HookedAgent', 'aborted');
    // The hook ignores the abort signal, so the process holds the durable intent without unwinding.
    const c1 = t.child(
      // Followed, so the running submission's input is in the log when the process dies.
      { agent: 'HookedAgent', id: 'aborted', dispatch: ['Do something long.'], follow: true, then: 'hold' },
      { FLUE_CRASH_BLOCK: 'agent-start' },
    );
    const first = (await c1.waitFor('receipt')).receipt;
    await poll('useAgentStart to run', () => sideEvents(s.side).some((e) => e.event === 'agent-start'));
    const second = await dispatchVia(c1, 'And then this.');
    c1.send({ abort: true });
    await c1.waitFor('aborted');
    expect(inspectDb(s.db, stream).submissions.map((r) => [r.status, r.abortRequested])).toEqual([
      ['running', true],
      ['queued', true],
    ]);
    await c1.kill();

    const lines = await t.runToEnd({ agent: 'HookedAgent', id: 'aborted', read: [first, second], converse: ['Fresh start.'] });
    for (const receipt of [first, second])
      expect(readErrorOf(lines, receipt.submissionId)).toMatchObject({ name: 'AgentRunError', outcome: 'aborted' });
    const third = lineOf(lines, 'receipt').receipt; // the only dispatch of this process
    expect(replyOf(lines, third.submissionId)).toBe('Fresh reply.');

    const view = inspectDb(s.db, stream);
    expectSettledExactlyOnce(view, [first.submissionId, second.submissionId], 'aborted');
    expectSettledExactlyOnce(view, [third.submissionId], 'completed');
    expect(
      view.records
        .filter((r) => r.record.type === 'signal' && r.record.signalType === 'submission_aborted')
        .map((r) => r.record.submissionId),
    ).toEqual([first.submissionId]);
    // Nothing of the aborted work reached the model; the queued one was never applied.
    expect(server.requests.length).toBe(1);
    const next = server.requests[0]!;
    expect(next.messages.some((m) => m.content.includes('And then this.'))).toBe(false);
    expect(indexOf(next, (m) => m.role === 'user' && m.content.includes('type="submission_aborted"'), 'the abort advisory')).toBeLessThan(
      indexOf(next, (m) => m.role === 'user' && m.content === 'Fresh start.', 'the new message'),
    );
    expect(
      sideEvents(s.side)
        .filter((e) => e.event === 'agent-start')
        .map((e) => [e.body, e.pid === c1.pid]),
    ).toEqual([
      ['Do something long.', true],
      ['Fresh start.', false],
    ]);
  });

  it('a keyed dispatch retried after the crash converges on the original submission (no second response)', async () => {
    const { server, s } = t;
    server.script(
      { text: ['Once ', 'upon ', 'a ', 'time ', 'there'], chunkDelayMs: 100, hangAfterChunks: 6 },
      { text: 'Only one story.' },
      { text: 'spare step (unexpected extra model call)' },
    );
    const stream = streamOf('StoryAgent', 'keyed');
    const keyed = { message: 'Tell me a story.', idempotencyKey: 'story-request-1' };
    const c1 = t.child({ agent: 'StoryAgent', id: 'keyed', dispatch: [keyed], follow: true, then: 'hold' });
    const first = (await c1.waitFor('receipt')).receipt;
    await poll(
      'a committed assistant_delta batch',
      () => inspectDb(s.db, stream).records.some((r) => r.record.type === 'assistant_delta'),
      30_000,
    );
    await c1.kill();

    const lines = await t.runToEnd({ agent: 'StoryAgent', id: 'keyed', dispatch: [keyed], read: [first] });
    expect(lineOf(lines, 'receipt').receipt).toMatchObject({ submissionId: first.submissionId, uid: first.uid, deduplicated: true });
    expect(replyOf(lines, first.submissionId)).toContain('Only one story.');
    expect(server.requests.length).toBe(2);
    const view = inspectDb(s.db, stream);
    expect(view.submissions).toHaveLength(1);
    expectSettledExactlyOnce(view, [first.submissionId]);
    expect(recordsOf(view, 'user_message')).toHaveLength(1);
  });
});
