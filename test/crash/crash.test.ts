/**
 * Crash tests on Node (durability.md §6–§7, §10): a child process runs agents on
 * `start({ db: sqlite(file) })` against a scripted model server this test process owns, is
 * SIGKILLed at a precise moment, and a NEW process on the same file recovers. The receipts the
 * first process printed are read in the second; the database is inspected read-only; tool and step
 * executions are counted through a side-channel file that survives the kill.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { DispatchReceipt } from '@flue/runtime';
import { type RecordedRequest, type ScriptedModelServer, startScriptedModelServer } from '@flue/runtime/testing';
import type { ChildConfig, ChildLine } from './fixtures/child.ts';
import {
  type Child,
  type DbView,
  type Scratch,
  committedDeltas,
  inspectDb,
  killAll,
  poll,
  scratch,
  settledRecords,
  sideEvents,
  spawnChild,
  streamOf,
  waitExit,
} from './harness.ts';

const INTERRUPTED_MARKER = '{"type":"interrupted","message":"Tool execution was interrupted before completion. The outcome is unknown."}';

let server: ScriptedModelServer;
let s: Scratch;

beforeAll(async () => {
  server = await startScriptedModelServer();
});
afterAll(async () => {
  await server?.close();
});
beforeEach(() => {
  server.reset();
  s = scratch();
});
afterEach(async () => {
  await killAll();
  s.cleanup();
});

function child(config: Omit<ChildConfig, 'db' | 'modelUrl'>, env: Record<string, string> = {}): Child {
  return spawnChild({ db: s.db, modelUrl: server.url, ...config }, { ...s.env, ...env });
}

/** Spawns, lets it run to its own end (`then: 'stop'`), and returns its output lines. */
async function runToEnd(config: Omit<ChildConfig, 'db' | 'modelUrl' | 'then'>, env: Record<string, string> = {}): Promise<ChildLine[]> {
  const c = child({ ...config, then: 'stop' }, env);
  const exit = await waitExit(c, 10_000);
  expect(exit, `child exit; stderr:\n${c.stderr()}`).toEqual({ code: 0, signal: null });
  expect(c.lines.filter((line) => line.type === 'fatal'), c.stderr()).toEqual([]);
  return c.lines;
}

async function dispatchVia(c: Child, message: string): Promise<DispatchReceipt> {
  c.send({ dispatch: message });
  return (await c.waitFor('receipt', (line) => line.message === message)).receipt;
}

function replyOf(lines: ChildLine[], submissionId: string): string {
  const line = lines.find((l) => (l.type === 'reply' || l.type === 'read-error') && l.submissionId === submissionId);
  if (line === undefined) throw new Error(`no reply line for ${submissionId}: ${JSON.stringify(lines)}`);
  if (line.type !== 'reply') throw new Error(`read(${submissionId}) rejected: ${JSON.stringify(line)}`);
  return line.reply.text;
}

/** Every given submission settled exactly once with `outcome`; nothing in the stream is left open. */
function expectSettledExactlyOnce(view: DbView, ids: string[], outcome = 'completed'): void {
  const settled = settledRecords(view);
  for (const id of ids) {
    const row = view.submissions.find((r) => r.id === id);
    expect(row, `submission row ${id}`).toMatchObject({ status: 'settled', outcome });
    expect(settled.get(id)?.length ?? 0, `submission_settled records for ${id}`).toBe(1);
    expect(settled.get(id)![0]!.record.outcome).toBe(outcome);
  }
  expect(view.submissions.filter((r) => r.status !== 'settled')).toEqual([]);
  // Admission order is settlement order.
  const positions = ids.map((id) => settled.get(id)![0]!.index);
  expect([...positions].sort((a, b) => a - b)).toEqual(positions);
}

/** The model-visible transcript of one request as `role: text` lines. */
function transcript(request: RecordedRequest): string[] {
  return request.messages.map((m) => `${m.role}: ${m.content}`);
}

function indexOf(request: RecordedRequest, predicate: (m: RecordedRequest['messages'][number]) => boolean, what: string): number {
  const index = request.messages.findIndex(predicate);
  if (index < 0) throw new Error(`model request lacks ${what}:\n${transcript(request).join('\n')}`);
  return index;
}

/** A restart with nothing left to do calls no model and settles nothing again. */
async function expectQuietRestart(agent: ChildConfig['agent'], id: string, before: DbView): Promise<void> {
  const requests = server.requests.length;
  await runToEnd({ agent, id });
  expect(server.requests.length).toBe(requests);
  const after = inspectDb(s.db);
  expect(after.records.length).toBe(before.records.length);
  expect(after.submissions).toEqual(before.submissions);
}

describe('crash recovery on Node (SIGKILL, new process, same sqlite file)', () => {
  it('mid model stream: the committed partial is converged, the reply completes, a queued dispatch is not lost', async () => {
    server.script(
      // Frames: message_start, content_block_start, then one delta every 100 ms; the stream holds
      // after "time " (frame 5) and never finishes. Deltas flush at most every 150 ms.
      { text: ['Once ', 'upon ', 'a ', 'time ', 'there ', 'was'], chunkDelayMs: 100, hangAfterChunks: 6 },
      { text: 'a fox who outlived a crash.' },
      { text: 'spare step (unexpected extra model call)' },
    );
    const stream = streamOf('StoryAgent', 'story');
    const c1 = child({ agent: 'StoryAgent', id: 'story', dispatch: ['Tell me a story.'], then: 'hold' });
    const first = (await c1.waitFor('receipt')).receipt;
    await server.waitForRequests(1, 8000);
    // At least two delta batches committed: the kill lands mid-stream with a non-empty partial.
    await poll('two committed assistant_delta batches', () => {
      const deltas = inspectDb(s.db, stream).records.filter((r) => r.record.type === 'assistant_delta');
      return new Set(deltas.map((r) => r.seq)).size >= 2;
    });
    const second = await dispatchVia(c1, 'And another one.');
    const beforeKill = inspectDb(s.db, stream);
    expect(beforeKill.submissions.map((r) => [r.id, r.status])).toEqual([
      [first.submissionId, 'running'],
      [second.submissionId, 'queued'],
    ]);
    await c1.kill();

    const crashed = inspectDb(s.db, stream);
    const [[stepId, partial]] = [...committedDeltas(crashed)] as [[string, string]];
    expect(partial.startsWith('Once upon')).toBe(true);
    expect(crashed.records.some((r) => r.record.type === 'assistant_completed')).toBe(false);

    const lines = await runToEnd({ agent: 'StoryAgent', id: 'story', read: [first, second] });

    // The recovered turn: the model sees the interrupted text as its own earlier output, the
    // interruption signals, and the queued delivery (joined at the turn boundary), in that order.
    expect(server.requests.length).toBe(2);
    const retry = server.requests[1]!;
    const user = indexOf(retry, (m) => m.role === 'user' && m.content === 'Tell me a story.', 'the first user message');
    const said = indexOf(retry, (m) => m.role === 'assistant' && m.content === partial, `the partial "${partial}" as an assistant message`);
    const interrupted = indexOf(retry, (m) => m.role === 'user' && m.content.includes('type="stream_interrupted"'), 'the stream_interrupted signal');
    const continued = indexOf(retry, (m) => m.role === 'user' && m.content.includes('type="stream_continued"'), 'the stream_continued signal');
    const queued = indexOf(retry, (m) => m.role === 'user' && m.content.includes('And another one.'), 'the queued second message');
    expect(user).toBeLessThan(said);
    expect(said).toBeLessThanOrEqual(interrupted);
    expect(interrupted).toBeLessThanOrEqual(continued);
    expect(continued).toBeLessThanOrEqual(queued);

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
    await expectQuietRestart('StoryAgent', 'story', view);
  });

  it('mid tool call: the ordinary tool is not re-run; the model sees the interrupted marker as an error result', async () => {
    server.script(
      { text: 'Let me look that up.', toolCalls: [{ id: 'call_lookup_1', name: 'lookup', arguments: { key: 'k1' } }] },
      { text: 'The lookup was interrupted, so I cannot say.' },
      { text: 'spare step (unexpected extra model call)' },
    );
    const stream = streamOf('LookupAgent', 'lookup');
    const c1 = child({ agent: 'LookupAgent', id: 'lookup', dispatch: ['What is k1?'], then: 'hold' }, { FLUE_CRASH_BLOCK: '1' });
    const first = (await c1.waitFor('receipt')).receipt;
    await poll('the lookup tool to start', () => sideEvents(s.side).some((e) => e.event === 'tool-start'));
    const second = await dispatchVia(c1, 'Also, what is k2?');
    const beforeKill = inspectDb(s.db, stream);
    expect(beforeKill.submissions.map((r) => r.status)).toEqual(['running', 'queued']);
    expect(beforeKill.records.some((r) => r.record.type === 'tool_results')).toBe(false);
    await c1.kill();

    const lines = await runToEnd({ agent: 'LookupAgent', id: 'lookup', read: [first, second] });

    const runs = sideEvents(s.side).filter((e) => e.tool === 'lookup');
    expect(runs.map((e) => [e.event, e.pid])).toEqual([['tool-start', c1.pid]]);

    expect(server.requests.length).toBe(2);
    const retry = server.requests[1]!;
    const result = indexOf(retry, (m) => m.role === 'tool' && m.toolCallId === 'call_lookup_1', 'the tool result for call_lookup_1');
    expect(retry.messages[result]).toMatchObject({ content: INTERRUPTED_MARKER, isError: true });
    const queued = indexOf(retry, (m) => m.role === 'user' && m.content.includes('Also, what is k2?'), 'the queued second message');
    expect(result).toBeLessThan(queued);

    expect(replyOf(lines, first.submissionId)).toContain('The lookup was interrupted');
    expect(replyOf(lines, second.submissionId)).toContain('The lookup was interrupted');

    const view = inspectDb(s.db, stream);
    expectSettledExactlyOnce(view, [first.submissionId, second.submissionId]);
    const batches = view.records.filter((r) => r.record.type === 'tool_results');
    expect(batches).toHaveLength(1);
    expect(batches[0]!.record.outcomes).toEqual([
      { toolCallId: 'call_lookup_1', toolName: 'lookup', isError: true, content: INTERRUPTED_MARKER },
    ]);
    await expectQuietRestart('LookupAgent', 'lookup', view);
  });

  it('between step.do fn and its record: finished steps replay, the interrupted step re-runs, the model sees the real result', async () => {
    server.script(
      { toolCalls: [{ id: 'call_provision_1', name: 'provision', arguments: { order: 'o1' } }] },
      { text: 'Order o1 is provisioned.' },
      { text: 'spare step (unexpected extra model call)' },
    );
    const stream = streamOf('ProvisionAgent', 'provision');
    const c1 = child({ agent: 'ProvisionAgent', id: 'provision', dispatch: ['Provision order o1.'], then: 'hold' }, { FLUE_CRASH_BLOCK: '1' });
    const first = (await c1.waitFor('receipt')).receipt;
    await poll('the ship step to start', () => sideEvents(s.side).some((e) => e.step === 'ship'));
    const second = await dispatchVia(c1, 'Then confirm.');
    const beforeKill = inspectDb(s.db, stream);
    // The process dies after ship's fn started and before its record: reserve and charge are recorded.
    expect(beforeKill.steps.map((st) => st.step).sort()).toEqual(['charge', 'reserve']);
    expect(beforeKill.submissions.map((r) => r.status)).toEqual(['running', 'queued']);
    await c1.kill();

    const lines = await runToEnd({ agent: 'ProvisionAgent', id: 'provision', read: [first, second] });
    const c2pid = lines.find((l): l is Extract<ChildLine, { type: 'ready' }> => l.type === 'ready')!.pid;

    const executions = sideEvents(s.side).filter((e) => e.event === 'step');
    const count = (step: string) => executions.filter((e) => e.step === step).map((e) => e.pid);
    expect(count('reserve')).toEqual([c1.pid]); // finished: never re-run
    expect(count('charge')).toEqual([c1.pid]); // finished: never re-run
    expect(count('ship')).toEqual([c1.pid, c2pid]); // interrupted: runs again (at-least-once)

    const expected = { reservation: `res-o1-${c1.pid}`, charge: `charge-o1-${c1.pid}`, shipment: `ship-o1-${c2pid}` };
    expect(server.requests.length).toBe(2);
    const retry = server.requests[1]!;
    const result = indexOf(retry, (m) => m.role === 'tool' && m.toolCallId === 'call_provision_1', 'the provision tool result');
    expect(retry.messages[result]!.isError).toBe(false);
    expect(JSON.parse(retry.messages[result]!.content)).toEqual(expected);
    indexOf(retry, (m) => m.role === 'user' && m.content.includes('Then confirm.'), 'the queued second message');

    expect(replyOf(lines, first.submissionId)).toBe('Order o1 is provisioned.');
    expect(replyOf(lines, second.submissionId)).toBe('Order o1 is provisioned.');

    const view = inspectDb(s.db, stream);
    expectSettledExactlyOnce(view, [first.submissionId, second.submissionId]);
    const batches = view.records.filter((r) => r.record.type === 'tool_results');
    expect(batches).toHaveLength(1);
    expect(batches[0]!.record.outcomes).toEqual([
      expect.objectContaining({ toolCallId: 'call_provision_1', isError: false, output: expected }),
    ]);
    expect(Object.fromEntries(view.steps.map((st) => [st.step, st.value]))).toEqual({
      reserve: expected.reservation,
      charge: expected.charge,
      ship: expected.shipment,
    });
    await expectQuietRestart('ProvisionAgent', 'provision', view);
  });
  it('a second crash exhausts the attempt budget: host and joined delivery fail exactly once, the conversation stays usable', async () => {
    const hang = (words: string[]) => ({ text: words, chunkDelayMs: 100, hangAfterChunks: 2 + words.length - 1 });
    server.script(
      hang(['First ', 'try ', 'at ', 'it ', 'now']),
      hang(['Second ', 'try ', 'at ', 'it ', 'now']),
      { text: 'Yes, I am here.' },
      { text: 'spare step (unexpected extra model call)' },
    );
    const stream = streamOf('FragileAgent', 'fragile');
    const deltaBatches = (from: number) => () => {
      const deltas = inspectDb(s.db, stream).records.filter((r) => r.record.type === 'assistant_delta' && r.seq > from);
      return new Set(deltas.map((r) => r.seq)).size >= 2;
    };

    // Attempt 1 dies mid-stream with a second delivery queued behind it.
    const c1 = child({ agent: 'FragileAgent', id: 'fragile', dispatch: ['Tell me a story.'], then: 'hold' });
    const first = (await c1.waitFor('receipt')).receipt;
    await poll('attempt 1 deltas', deltaBatches(-1));
    const second = await dispatchVia(c1, 'Make it short.');
    await c1.kill();

    // Attempt 2 (recovery) converges, joins the queued delivery, and dies mid-stream too.
    const mark = Math.max(...inspectDb(s.db, stream).records.map((r) => r.seq));
    const c2 = child({ agent: 'FragileAgent', id: 'fragile', then: 'hold' });
    await server.waitForRequests(2, 8000);
    await poll('attempt 2 deltas', deltaBatches(mark));
    const midway = inspectDb(s.db, stream);
    expect(midway.submissions.map((r) => [r.status, r.attemptCount, r.joinedInto])).toEqual([
      ['running', 2, null],
      ['joined', 0, first.submissionId],
    ]);
    await c2.kill();

    // Attempt budget (2) is spent: the third process settles both failed, then serves new work.
    const lines = await runToEnd({ agent: 'FragileAgent', id: 'fragile', read: [first, second], converse: ['Are you there?'] });
    for (const receipt of [first, second]) {
      const line = lines.find((l) => l.type === 'read-error' && l.submissionId === receipt.submissionId);
      expect(line, JSON.stringify(lines)).toMatchObject({ name: 'AgentRunError', outcome: 'failed' });
      expect((line as { message: string }).message).toContain('attempt budget (2)');
    }
    const third = (lines.find((l) => l.type === 'receipt') as Extract<ChildLine, { type: 'receipt' }>).receipt;
    expect(replyOf(lines, third.submissionId)).toBe('Yes, I am here.');

    const view = inspectDb(s.db, stream);
    expectSettledExactlyOnce(view, [first.submissionId, second.submissionId], 'failed');
    expectSettledExactlyOnce(view, [third.submissionId], 'completed');
    const settled = settledRecords(view);
    expect(settled.get(first.submissionId)![0]!.record.error).toMatchObject({ type: 'submission_retry_exhausted' });
    expect(settled.get(second.submissionId)![0]!.record).toMatchObject({ outcome: 'failed', answeredBySubmissionId: first.submissionId });
    // Rest state: both interrupted streams are closed, one failure advisory, and the next turn
    // sees a coherent transcript ending in the new message.
    const openSteps = new Set(view.records.filter((r) => r.record.type === 'assistant_started').map((r) => r.record.stepId));
    const closedSteps = new Set(view.records.filter((r) => r.record.type === 'assistant_completed').map((r) => r.record.stepId));
    expect([...openSteps].filter((id) => !closedSteps.has(id))).toEqual([]);
    expect(view.records.filter((r) => r.record.type === 'signal' && r.record.signalType === 'submission_interrupted')).toHaveLength(1);
    expect(server.requests.length).toBe(3);
    const next = server.requests[2]!;
    const advisory = indexOf(next, (m) => m.role === 'user' && m.content.includes('type="submission_interrupted"'), 'the failure advisory');
    const asked = indexOf(next, (m) => m.role === 'user' && m.content.includes('Are you there?'), 'the new message');
    expect(advisory).toBeLessThan(asked);
    indexOf(next, (m) => m.role === 'assistant' && m.content.startsWith('Second try'), 'the second partial');
  });
});

describe('across processes without a crash', () => {
  it('a conversation continues in a second process on the same sqlite file', async () => {
    server.script({ text: 'Hello Ada, nice to meet you.' }, { text: 'Your name is Ada.' });
    const one = await runToEnd({ agent: 'StoryAgent', id: 'ada', converse: ['My name is Ada.'] });
    const two = await runToEnd({ agent: 'StoryAgent', id: 'ada', converse: ['What is my name?'] });

    const receipt1 = (one.find((l) => l.type === 'receipt') as Extract<ChildLine, { type: 'receipt' }>).receipt;
    const receipt2 = (two.find((l) => l.type === 'receipt') as Extract<ChildLine, { type: 'receipt' }>).receipt;
    expect(replyOf(one, receipt1.submissionId)).toBe('Hello Ada, nice to meet you.');
    expect(replyOf(two, receipt2.submissionId)).toBe('Your name is Ada.');
    expect(receipt2.uid).toBe(receipt1.uid); // same instance incarnation

    expect(server.requests.length).toBe(2);
    expect(transcript(server.requests[1]!)).toEqual([
      'user: My name is Ada.',
      'assistant: Hello Ada, nice to meet you.',
      'user: What is my name?',
    ]);
    expectSettledExactlyOnce(inspectDb(s.db, streamOf('StoryAgent', 'ada')), [receipt1.submissionId, receipt2.submissionId]);
  });

  it('stop() drains: the run stops at the next turn boundary unsettled, and a restart finishes it', async () => {
    server.script(
      { text: 'Looking.', toolCalls: [{ id: 'call_lookup_9', name: 'lookup', arguments: { key: 'k9' } }] },
      { text: 'k9 is value-of-k9.' },
      { text: 'spare step (unexpected extra model call)' },
    );
    const stream = streamOf('LookupAgent', 'drain');
    const c1 = child({ agent: 'LookupAgent', id: 'drain', dispatch: ['What is k9?'], then: 'hold' }, { FLUE_CRASH_RELEASE: '1' });
    const first = (await c1.waitFor('receipt')).receipt;
    await poll('the lookup tool to start', () => sideEvents(s.side).some((e) => e.event === 'tool-start'));

    c1.send({ stop: true });
    // stop() awaits the work in flight: the tool is still running, so nothing is stopped yet.
    await new Promise((r) => setTimeout(r, 300));
    expect(c1.alive).toBe(true);
    expect(c1.lines.some((l) => l.type === 'stopped')).toBe(false);
    writeFileSync(join(s.side, 'release'), '');
    await c1.waitFor('stopped');
    expect(await waitExit(c1)).toEqual({ code: 0, signal: null }); // nothing left holding the process

    const drained = inspectDb(s.db, stream);
    // The tool batch committed with the real result, then the run stopped before the next model
    // call: unsettled (not aborted), no advisory, no settlement.
    expect(server.requests.length).toBe(1);
    expect(drained.submissions).toMatchObject([{ id: first.submissionId, status: 'running', outcome: null, attemptCount: 1 }]);
    expect(drained.records.filter((r) => r.record.type === 'submission_settled')).toEqual([]);
    expect(drained.records.filter((r) => r.record.type === 'signal' && String(r.record.signalType).startsWith('submission_'))).toEqual([]);
    const batch = drained.records.filter((r) => r.record.type === 'tool_results');
    expect(batch).toHaveLength(1);
    expect(batch[0]!.record.outcomes[0]).toMatchObject({ toolCallId: 'call_lookup_9', isError: false, output: { key: 'k9', value: 'value-of-k9' } });

    const lines = await runToEnd({ agent: 'LookupAgent', id: 'drain', read: [first] });
    expect(replyOf(lines, first.submissionId)).toBe('Looking.\n\nk9 is value-of-k9.');
    expect(sideEvents(s.side).filter((e) => e.event === 'tool-start')).toHaveLength(1);
    expect(server.requests.length).toBe(2);
    const retry = server.requests[1]!;
    const result = indexOf(retry, (m) => m.role === 'tool' && m.toolCallId === 'call_lookup_9', 'the lookup result');
    expect(retry.messages[result]).toMatchObject({ isError: false });
    expect(JSON.parse(retry.messages[result]!.content)).toEqual({ key: 'k9', value: 'value-of-k9' });
    const view = inspectDb(s.db, stream);
    expectSettledExactlyOnce(view, [first.submissionId]);
    expect(view.submissions[0]!.attemptCount).toBe(2);
  });
});
