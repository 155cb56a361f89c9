/**
 * Crash tests on Node (durability.md §6–§7, §10): a child process runs agents on
 * `start({ db: sqlite(file) })` against a scripted model server this test process owns, is
 * SIGKILLed in the middle of work, and a NEW process on the same file recovers. Receipts printed
 * by the first process are read in the second; the database is inspected read-only; tool and step
 * executions are counted through a side-channel file that survives the kill.
 *
 * This file: kills mid model stream, mid tool call and between a step's fn and its record.
 */
import { describe, expect, it } from 'vitest';
import type { RecordedRequest } from '@flue/runtime/testing';
import { committedDeltas, inspectDb, poll, sideEvents, streamOf } from './harness.ts';
import { INTERRUPTED_MARKER, dispatchVia, expectSettledExactlyOnce, indexOf, messageOf, pidOf, replyOf, useCrashSuite } from './suite.ts';

const t = useCrashSuite();

/** True once the stream has at least one committed assistant_delta batch. */
const hasDeltaBatch = (db: string, stream: string) => () => inspectDb(db, stream).records.some((r) => r.record.type === 'assistant_delta');

describe('SIGKILL mid-work, recovery in a new process on the same sqlite file', () => {
  it('mid model stream: the committed partial is converged, the reply completes, a queued dispatch is not lost', async () => {
    const { server, s } = t;
    server.script(
      // Frames: message_start, content_block_start, then one text delta every 100 ms; the stream
      // holds after "time " and never finishes. Deltas are committed at most every 250 ms, and
      // the first delta (>= 200 ms after the request) always commits a batch.
      { text: ['Once ', 'upon ', 'a ', 'time ', 'there ', 'was'], chunkDelayMs: 100, hangAfterChunks: 6 },
      { text: 'a fox who outlived a crash.' },
      { text: 'spare step (unexpected extra model call)' },
    );
    const stream = streamOf('StoryAgent', 'story');
    const c1 = t.child({ agent: 'StoryAgent', id: 'story', dispatch: ['Tell me a story.'], follow: true, then: 'hold' });
    const first = (await c1.waitFor('receipt')).receipt;
    await poll('a committed assistant_delta batch', hasDeltaBatch(s.db, stream), 30_000);
    const second = await dispatchVia(c1, 'And another one.');
    expect(inspectDb(s.db, stream).submissions.map((r) => [r.id, r.status])).toEqual([
      [first.submissionId, 'running'],
      [second.submissionId, 'queued'],
    ]);
    await c1.kill();

    const crashed = inspectDb(s.db, stream);
    const [[stepId, partial]] = [...committedDeltas(crashed)] as [[string, string]];
    expect(partial.startsWith('Once ')).toBe(true);
    expect(crashed.records.some((r) => r.record.type === 'assistant_completed')).toBe(false);

    const lines = await t.runToEnd({ agent: 'StoryAgent', id: 'story', read: [first, second] });

    // The recovered turn: the model sees the committed text as its own earlier output, the
    // interruption signals, then the queued delivery (joined at the turn boundary), in order.
    expect(server.requests.length).toBe(2);
    const retry = server.requests[1]!;
    const order = [
      indexOf(retry, (m) => m.role === 'user' && m.content === 'Tell me a story.', 'the first user message'),
      indexOf(retry, (m) => m.role === 'assistant' && m.content === partial, `the partial "${partial}" as an assistant message`),
      indexOf(retry, (m) => m.role === 'user' && m.content.includes('type="stream_interrupted"'), 'the stream_interrupted signal'),
      indexOf(retry, (m) => m.role === 'user' && m.content.includes('type="stream_continued"'), 'the stream_continued signal'),
      indexOf(retry, (m) => m.role === 'user' && m.content.includes('And another one.'), 'the queued second message'),
    ];
    expect([...order].sort((a, b) => a - b)).toEqual(order);

    expect(replyOf(lines, first.submissionId)).toContain('a fox who outlived a crash.');
    expect(replyOf(lines, second.submissionId)).toContain('a fox who outlived a crash.');

    const view = inspectDb(s.db, stream);
    expectSettledExactlyOnce(view, [first.submissionId, second.submissionId]);
    expect(view.submissions[0]!.attemptCount).toBe(2);
    const converged = view.records.filter((r) => r.record.type === 'assistant_completed' && r.record.stepId === stepId);
    expect(converged).toHaveLength(1);
    expect(converged[0]!.record.message).toMatchObject({ stopReason: 'aborted', errorMessage: 'Stream interrupted before completion.' });
    for (const signalType of ['stream_interrupted', 'stream_continued']) {
      expect(view.records.filter((r) => r.record.type === 'signal' && r.record.signalType === signalType)).toHaveLength(1);
    }
    await t.expectQuietRestart('StoryAgent', 'story', stream, view);
  });

  it('mid tool call: the ordinary tool is not re-run; the model sees the interrupted marker as an error result', async () => {
    const { server, s } = t;
    server.script(
      { text: 'Let me look that up.', toolCalls: [{ id: 'call_lookup_1', name: 'lookup', arguments: { key: 'k1' } }] },
      { text: 'The lookup was interrupted, so I cannot say.' },
      { text: 'spare step (unexpected extra model call)' },
    );
    const stream = streamOf('LookupAgent', 'lookup');
    const c1 = t.child({ agent: 'LookupAgent', id: 'lookup', dispatch: ['What is k1?'], then: 'hold' }, { FLUE_CRASH_BLOCK: 'lookup' });
    const first = (await c1.waitFor('receipt')).receipt;
    await poll('the lookup tool to start', () => sideEvents(s.side).some((e) => e.event === 'tool-start'));
    const second = await dispatchVia(c1, 'Also, what is k2?');
    const beforeKill = inspectDb(s.db, stream);
    expect(beforeKill.submissions.map((r) => r.status)).toEqual(['running', 'queued']);
    expect(beforeKill.records.some((r) => r.record.type === 'tool_results')).toBe(false);
    await c1.kill();

    const lines = await t.runToEnd({ agent: 'LookupAgent', id: 'lookup', read: [first, second] });

    expect(sideEvents(s.side).map((e) => [e.event, e.pid])).toEqual([['tool-start', c1.pid]]);
    expect(server.requests.length).toBe(2);
    const retry = server.requests[1]!;
    const result = indexOf(retry, (m) => m.role === 'tool' && m.toolCallId === 'call_lookup_1', 'the tool result for call_lookup_1');
    expect(retry.messages[result]).toMatchObject({ content: INTERRUPTED_MARKER, isError: true });
    expect(result).toBeLessThan(
      indexOf(retry, (m) => m.role === 'user' && m.content.includes('Also, what is k2?'), 'the queued second message'),
    );

    expect(replyOf(lines, first.submissionId)).toContain('The lookup was interrupted');
    expect(replyOf(lines, second.submissionId)).toContain('The lookup was interrupted');

    const view = inspectDb(s.db, stream);
    expectSettledExactlyOnce(view, [first.submissionId, second.submissionId]);
    expect(view.records.filter((r) => r.record.type === 'tool_results').map((r) => r.record.outcomes)).toEqual([
      [{ toolCallId: 'call_lookup_1', toolName: 'lookup', isError: true, content: INTERRUPTED_MARKER }],
    ]);
    await t.expectQuietRestart('LookupAgent', 'lookup', stream, view);
  });

  it('between step.do fn and its record: finished steps replay, the interrupted step re-runs, the model sees the real result', async () => {
    const { server, s } = t;
    server.script(
      { toolCalls: [{ id: 'call_provision_1', name: 'provision', arguments: { order: 'o1' } }] },
      { text: 'Order o1 is provisioned.' },
      { text: 'spare step (unexpected extra model call)' },
    );
    const stream = streamOf('ProvisionAgent', 'provision');
    const c1 = t.child(
      { agent: 'ProvisionAgent', id: 'provision', dispatch: ['Provision order o1.'], then: 'hold' },
      { FLUE_CRASH_BLOCK: 'ship' },
    );
    const first = (await c1.waitFor('receipt')).receipt;
    await poll('the ship step to start', () => sideEvents(s.side).some((e) => e.step === 'ship'));
    const second = await dispatchVia(c1, 'Then confirm.');
    const beforeKill = inspectDb(s.db, stream);
    // The process dies after ship's fn started and before its record: reserve and charge are recorded.
    expect(beforeKill.steps.map((st) => st.step).sort()).toEqual(['charge', 'reserve']);
    expect(beforeKill.submissions.map((r) => r.status)).toEqual(['running', 'queued']);
    await c1.kill();

    const lines = await t.runToEnd({ agent: 'ProvisionAgent', id: 'provision', read: [first, second] });
    const c2pid = pidOf(lines);

    const ran = (step: string) =>
      sideEvents(s.side)
        .filter((e) => e.step === step)
        .map((e) => e.pid);
    expect(ran('reserve')).toEqual([c1.pid]); // recorded: replayed, never re-run
    expect(ran('charge')).toEqual([c1.pid]); // recorded: replayed, never re-run
    expect(ran('ship')).toEqual([c1.pid, c2pid]); // interrupted before its record: runs again

    // Replayed steps return the first process's values; the re-run step the second's.
    const expected = { reservation: `res-o1-${c1.pid}`, charge: `charge-o1-${c1.pid}`, shipment: `ship-o1-${c2pid}` };
    expect(server.requests.length).toBe(2);
    const retry = server.requests[1]!;
    const result = messageOf(retry, (m) => m.role === 'tool' && m.toolCallId === 'call_provision_1', 'the provision tool result');
    expect(result.isError).toBe(false);
    expect(JSON.parse(result.content)).toEqual(expected);
    indexOf(retry, (m) => m.role === 'user' && m.content.includes('Then confirm.'), 'the queued second message');

    expect(replyOf(lines, first.submissionId)).toBe('Order o1 is provisioned.');
    expect(replyOf(lines, second.submissionId)).toBe('Order o1 is provisioned.');

    const view = inspectDb(s.db, stream);
    expectSettledExactlyOnce(view, [first.submissionId, second.submissionId]);
    expect(view.records.filter((r) => r.record.type === 'tool_results').map((r) => r.record.outcomes)).toEqual([
      [expect.objectContaining({ toolCallId: 'call_provision_1', isError: false, output: expected })],
    ]);
    expect(Object.fromEntries(view.steps.map((st) => [st.step, st.value]))).toEqual({
      reserve: expected.reservation,
      charge: expected.charge,
      ship: expected.shipment,
    });
    await t.expectQuietRestart('ProvisionAgent', 'provision', stream, view);
  });

  it('a durable call whose tool is no longer declared after the restart gets the marker and is not re-run', async () => {
    const { server, s } = t;
    server.script(
      { toolCalls: [{ id: 'call_provision_2', name: 'provision', arguments: { order: 'o2' } }] },
      { text: 'I could not confirm o2.' },
      { text: 'spare step (unexpected extra model call)' },
    );
    const stream = streamOf('ProvisionAgent', 'undeclared');
    const c1 = t.child(
      { agent: 'ProvisionAgent', id: 'undeclared', dispatch: ['Provision order o2.'], then: 'hold' },
      { FLUE_CRASH_BLOCK: 'ship' },
    );
    const first = (await c1.waitFor('receipt')).receipt;
    await poll('the ship step to start', () => sideEvents(s.side).some((e) => e.step === 'ship'));
    await c1.kill();

    // The restarted process renders the agent without the tool (a deploy dropped it).
    const lines = await t.runToEnd({ agent: 'ProvisionAgent', id: 'undeclared', read: [first] }, { FLUE_CRASH_UNDECLARE: 'provision' });
    expect(replyOf(lines, first.submissionId)).toBe('I could not confirm o2.');
    expect(sideEvents(s.side).map((e) => [e.step, e.pid])).toEqual([
      ['reserve', c1.pid],
      ['charge', c1.pid],
      ['ship', c1.pid],
    ]);
    const retry = server.requests[1]!;
    expect(messageOf(retry, (m) => m.role === 'tool' && m.toolCallId === 'call_provision_2', 'the provision result')).toMatchObject({
      content: INTERRUPTED_MARKER,
      isError: true,
    });
    expect(retry.tools.map((tool) => tool.name)).toEqual(['task']);
    expectSettledExactlyOnce(inspectDb(s.db, stream), [first.submissionId]);
  });

  it('one batch with an ordinary and a durable call: marker for one, step replay for the other, committed together', async () => {
    const { server, s } = t;
    server.script(
      {
        toolCalls: [
          { id: 'call_lookup_3', name: 'lookup', arguments: { key: 'k3' } },
          { id: 'call_provision_3', name: 'provision', arguments: { order: 'o3' } },
        ],
      },
      { text: 'Provisioned o3; the lookup outcome is unknown.' },
      { text: 'spare step (unexpected extra model call)' },
    );
    const stream = streamOf('MixedAgent', 'mixed');
    const c1 = t.child(
      { agent: 'MixedAgent', id: 'mixed', dispatch: ['Look up k3 and provision o3.'], then: 'hold' },
      { FLUE_CRASH_BLOCK: 'lookup,ship' },
    );
    const first = (await c1.waitFor('receipt')).receipt;
    await poll('both tools in flight', () => {
      const events = sideEvents(s.side);
      return events.some((e) => e.event === 'tool-start') && events.some((e) => e.step === 'ship');
    });
    await c1.kill();

    const lines = await t.runToEnd({ agent: 'MixedAgent', id: 'mixed', read: [first] });
    const c2pid = pidOf(lines);
    const events = sideEvents(s.side);
    expect(events.filter((e) => e.event === 'tool-start').map((e) => e.pid)).toEqual([c1.pid]);
    expect(events.filter((e) => e.event === 'step').map((e) => [e.step, e.pid])).toEqual([
      ['reserve', c1.pid],
      ['charge', c1.pid],
      ['ship', c1.pid],
      ['ship', c2pid],
    ]);
    const expected = { reservation: `res-o3-${c1.pid}`, charge: `charge-o3-${c1.pid}`, shipment: `ship-o3-${c2pid}` };

    const view = inspectDb(s.db, stream);
    expectSettledExactlyOnce(view, [first.submissionId]);
    expect(view.records.filter((r) => r.record.type === 'tool_results').map((r) => r.record.outcomes)).toEqual([
      [
        { toolCallId: 'call_lookup_3', toolName: 'lookup', isError: true, content: INTERRUPTED_MARKER },
        expect.objectContaining({ toolCallId: 'call_provision_3', toolName: 'provision', isError: false, output: expected }),
      ],
    ]);
    expect(server.requests.length).toBe(2);
    const retry = server.requests[1]!;
    expect(messageOf(retry, (m) => m.role === 'tool' && m.toolCallId === 'call_lookup_3', 'the lookup result')).toMatchObject({
      content: INTERRUPTED_MARKER,
      isError: true,
    });
    const provision = messageOf(retry, (m) => m.role === 'tool' && m.toolCallId === 'call_provision_3', 'the provision result');
    expect(provision.isError).toBe(false);
    expect(JSON.parse(provision.content)).toEqual(expected);
    expect(replyOf(lines, first.submissionId)).toBe('Provisioned o3; the lookup outcome is unknown.');
  });

  it('two conversations crashed at once are both recovered by one restart', async () => {
    const { server, s } = t;
    // Both lanes call the model concurrently, so each step answers by looking at the request.
    const route = (request: RecordedRequest) => {
      const lookup = request.system?.includes('look things up') === true;
      const recovered = request.messages.length > 1;
      if (lookup)
        return recovered ? { text: 'beta recovered.' } : { toolCalls: [{ id: 'call_beta', name: 'lookup', arguments: { key: 'kb' } }] };
      return recovered
        ? { text: 'alpha recovered.' }
        : { text: ['Alpha ', 'was ', 'saying ', 'something'], chunkDelayMs: 100, hangAfterChunks: 5 };
    };
    server.script(route, route, route, route);
    const alpha = streamOf('StoryAgent', 'alpha');
    const beta = streamOf('LookupAgent', 'beta');
    const c1 = t.child(
      {
        agent: 'StoryAgent',
        id: 'alpha',
        dispatchTo: [
          { agent: 'StoryAgent', id: 'alpha', message: 'Alpha, speak.' },
          { agent: 'LookupAgent', id: 'beta', message: 'Beta, look up kb.' },
        ],
        follow: true,
        then: 'hold',
      },
      { FLUE_CRASH_BLOCK: 'lookup' },
    );
    const a = (await c1.waitFor('receipt', (l) => l.id === 'alpha')).receipt;
    const b = (await c1.waitFor('receipt', (l) => l.id === 'beta')).receipt;
    await poll(
      'alpha mid-stream and beta mid-tool',
      () => hasDeltaBatch(s.db, alpha)() && sideEvents(s.side).some((e) => e.event === 'tool-start'),
      30_000,
    );
    await c1.kill();

    const lines = await t.runToEnd({
      agent: 'StoryAgent',
      id: 'alpha',
      readFrom: [
        { agent: 'StoryAgent', id: 'alpha', receipt: a },
        { agent: 'LookupAgent', id: 'beta', receipt: b },
      ],
    });
    expect(replyOf(lines, a.submissionId)).toContain('alpha recovered.');
    expect(replyOf(lines, b.submissionId)).toBe('beta recovered.');
    expectSettledExactlyOnce(inspectDb(s.db, alpha), [a.submissionId]);
    expectSettledExactlyOnce(inspectDb(s.db, beta), [b.submissionId]);
    expect(sideEvents(s.side).filter((e) => e.event === 'tool-start')).toHaveLength(1);
    expect(server.requests.length).toBe(4);
  });
});
