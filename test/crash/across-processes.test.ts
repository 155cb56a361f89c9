/**
 * Node persistence across processes without a crash (durability.md §10): a conversation continues
 * in a second process on the same sqlite file, and `stop()` drains — the run in flight runs on to
 * its settlement before the process stops (test/stop-drain.test.ts covers the grace period's
 * cut-off and its recovery). See mid-work.test.ts for the set-up.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { inspectDb, poll, sideEvents, streamOf, waitExit } from './harness.ts';
import { expectSettledExactlyOnce, lineOf, replyOf, transcript, useCrashSuite } from './suite.ts';

const t = useCrashSuite();

describe('across processes on the same sqlite file', () => {
  it('a conversation continues in a second process: the model sees the earlier message and reply', async () => {
    const { server, s } = t;
    server.script({ text: 'Hello Ada, nice to meet you.' }, { text: 'Your name is Ada.' });
    const one = await t.runToEnd({ agent: 'StoryAgent', id: 'ada', converse: ['My name is Ada.'] });
    const two = await t.runToEnd({ agent: 'StoryAgent', id: 'ada', converse: ['What is my name?'] });

    const receipt1 = lineOf(one, 'receipt').receipt;
    const receipt2 = lineOf(two, 'receipt').receipt;
    expect(replyOf(one, receipt1.submissionId)).toBe('Hello Ada, nice to meet you.');
    expect(replyOf(two, receipt2.submissionId)).toBe('Your name is Ada.');
    expect(receipt2.uid).toBe(receipt1.uid); // the same instance incarnation

    expect(server.requests.length).toBe(2);
    expect(transcript(server.requests[1]!)).toEqual([
      'user: My name is Ada.',
      'assistant: Hello Ada, nice to meet you.',
      'user: What is my name?',
    ]);
    expectSettledExactlyOnce(inspectDb(s.db, streamOf('StoryAgent', 'ada')), [receipt1.submissionId, receipt2.submissionId]);
  });

  it('stop() drains: the run in flight runs on to its settlement before the process stops', async () => {
    const { server, s } = t;
    server.script(
      { text: 'Looking.', toolCalls: [{ id: 'call_lookup_9', name: 'lookup', arguments: { key: 'k9' } }] },
      { text: 'k9 is value-of-k9.' },
      { text: 'spare step (unexpected extra model call)' },
    );
    const stream = streamOf('LookupAgent', 'drain');
    // The tool waits for a release file, so the test decides when the turn's work finishes.
    const c1 = t.child({ agent: 'LookupAgent', id: 'drain', dispatch: ['What is k9?'], then: 'hold' }, { FLUE_CRASH_RELEASE: 'lookup' });
    const first = (await c1.waitFor('receipt')).receipt;
    await poll('the lookup tool to start', () => sideEvents(s.side).some((e) => e.event === 'tool-start'));

    c1.send({ stop: true });
    // stop() awaits the work in flight: while the tool runs, it has not settled when a stop that
    // waits for nothing would have, and the process has not stopped.
    expect(await c1.waitFor('stopping')).toMatchObject({ settled: false });
    expect(c1.alive).toBe(true);
    expect(c1.lines.some((l) => l.type === 'stopped')).toBe(false);
    writeFileSync(join(s.side, 'release'), '');
    await c1.waitFor('stopped');
    expect(await waitExit(c1)).toEqual({ code: 0, signal: null }); // nothing left holding the process

    // The drain let the response finish: the tool result, the next model call and the settlement,
    // all in the first process, in its one attempt.
    const drained = inspectDb(s.db, stream);
    expect(server.requests.length).toBe(2);
    expect(drained.submissions).toMatchObject([{ id: first.submissionId, status: 'settled', outcome: 'completed', attemptCount: 1 }]);
    expectSettledExactlyOnce(drained, [first.submissionId]);
    expect(drained.records.filter((r) => r.record.type === 'tool_results').map((r) => r.record.outcomes)).toEqual([
      [expect.objectContaining({ toolCallId: 'call_lookup_9', isError: false, output: { key: 'k9', value: 'value-of-k9' } })],
    ]);

    // A restart finds nothing to do and reads the reply the drained process settled.
    const lines = await t.runToEnd({ agent: 'LookupAgent', id: 'drain', read: [first] });
    expect(replyOf(lines, first.submissionId)).toBe('Looking.\n\nk9 is value-of-k9.');
    expect(sideEvents(s.side).filter((e) => e.event === 'tool-start')).toHaveLength(1);
    expect(server.requests.length).toBe(2);
    expectSettledExactlyOnce(inspectDb(s.db, stream), [first.submissionId]);
  });
});
