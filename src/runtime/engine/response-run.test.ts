import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import * as v from 'valibot';
import { sqlite } from '../../node/sqlite.ts';
import { scriptedProvider } from '../../testing/scripted-provider.ts';
import { type ScriptedModelServer, startScriptedModelServer } from '../../testing/scripted-model-server.ts';
import { useAgentFinish, useModel, usePersistentState, useTool } from '../index.ts';
import { ConversationWriter } from './conversation-writer.ts';
import { ConversationView, type LiveConversation } from './conversation-view.ts';
import { defineTool } from '../authoring/define-tool.ts';
import { INTERRUPTED_TOOL_TEXT, type ConversationRecord } from '../store/records.ts';
import { ResponseRun, type RunEngine } from './response-run.ts';
import { SqlStore, type SubmissionRow } from '../store/sql-store.ts';
import type { Agent } from '../authoring/identity.ts';
import { emptyUsage } from '../model/usage.ts';
import { settledUsage } from './usage-ledger.ts';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModelServer();
  const { registerProviders } = await import('../model/providers.ts');
  registerProviders([scriptedProvider({ baseUrl: server.url, id: 'run-unit', models: ['model'] })]);
});
afterAll(async () => server.close());

let plainRuns = 0;
let durableRuns = 0;
const durable = defineTool({
  name: 'charge',
  description: 'Charge once.',
  input: v.object({}),
  durable: true,
  run: async ({ step }) => {
    durableRuns++;
    return step.do('charge', () => 'charged');
  },
});

function Worker() {
  useModel('run-unit/model');
  const [count, setCount] = usePersistentState('count', 0);
  useTool({
    name: 'plain',
    description: 'Counts.',
    input: v.object({}),
    run: () => {
      plainRuns++;
      setCount(count + 1);
      return 'ok';
    },
  });
  useTool(durable);
  return 'Use the tools.';
}

let finishRuns = 0;
function Finisher() {
  useModel('run-unit/model');
  useTool({ name: 'plain', description: 'Counts.', input: v.object({}), run: () => 'ok' });
  useAgentFinish(() => {
    finishRuns++;
  });
  return 'Finish up.';
}

let store: SqlStore;
let view: ConversationView;
let writer: ConversationWriter;
let dispatched: unknown[];
const engine: RunEngine = {
  env: {},
  isStopping: false,
  get probed() {
    return { stop: async () => {} };
  },
  dispatchFromAgent: async (_live, message) => {
    dispatched.push(message);
    return { submissionId: 'sub_dispatched', acceptedAt: '', uid: '' };
  },
  emitFor: () => {},
  completedSettlement: (live, row) => ({
    records: [
      {
        type: 'submission_settled',
        submissionId: row.id,
        outcome: 'completed',
        answeredBySubmissionId: row.id,
        usage: settledUsage(live.conv, row.id, row.attemptCount, (key) => view.fold(key)),
        ts,
      },
    ],
    settled: [row.id],
    outcome: 'completed',
    error: null,
  }),
};

beforeEach(async () => {
  const adapter = sqlite();
  await adapter.migrate();
  store = new SqlStore(await adapter.connect());
  view = new ConversationView(store);
  writer = new ConversationWriter(store, view);
  dispatched = [];
  plainRuns = 0;
  durableRuns = 0;
  finishRuns = 0;
});

const ts = '2026-01-01T00:00:00.000Z';

/** A conversation with one claimed submission, as the engine hands it to a run. */
function claimed(body = 'go'): { live: LiveConversation; row: SubmissionRow } {
  const live = view.live('Worker', 'w1');
  writer.admit(
    live,
    { type: 'conversation_created', conversationId: 'conv_w', uid: 'inst_w', ts },
    { id: 'sub_1', kind: 'dispatch', payload: { message: { kind: 'user', body } }, acceptedAt: ts },
    [],
  );
  view.keep(live);
  const row = writer.claimAttempt(
    { id: 'sub_1', conversation: live.key },
    { attemptId: 'attempt_1', now: Date.now(), maxAttempts: 3, timeoutMs: 60_000 },
  );
  return { live, row };
}

const run = (live: LiveConversation, row: SubmissionRow) => new ResponseRun({ engine, view, writer, live, row, agent: Worker as Agent });

function records(live: LiveConversation): ConversationRecord[] {
  return store.readBatches(live.key, -1).flatMap((batch) => batch.records);
}

describe('ResponseRun', () => {
  it('applies the input once, then loops turn, tool batch, turn until the response would stop', async () => {
    server.script({ toolCalls: [{ name: 'plain', arguments: {} }] }, { text: 'All done.' });
    const { live, row } = claimed();
    await run(live, row).execute();
    const types = records(live).map((record) => record.type);
    expect(types.filter((type) => type === 'user_message')).toHaveLength(1);
    expect(types.filter((type) => type === 'tool_results')).toHaveLength(1);
    expect(types.filter((type) => type === 'assistant_completed')).toHaveLength(2);
    expect(live.conv.finalAssistantText()).toBe('All done.');
    // The state write made by the tool committed with its tool batch.
    expect(view.stateOf(live).get('count')).toBe(1);
    expect(plainRuns).toBe(1);
  });

  it('commits a short streamed step as one batch, which carries the settlement when nothing follows the step', async () => {
    server.script({ text: ['Short ', 'reply.'] });
    const { live, row } = claimed();
    const response = run(live, row);
    await response.execute();
    const step = store.readBatches(live.key, -1).find((batch) => batch.records.some((record) => record.type === 'assistant_started'))!;
    // Written whole, the step keeps its text once: in the completed message, not in deltas too. The
    // input and the turn's snapshot, held while nobody follows, open the same batch.
    expect(step.records.map((record) => record.type)).toEqual([
      'user_message',
      'resource_snapshot',
      'assistant_started',
      'assistant_completed',
      'submission_settled',
    ]);
    expect(response.settled?.settled).toEqual(['sub_1']);
    // The ledger entry was made with the step applied; the row is settled in the same transaction.
    expect(step.records[4]).toMatchObject({ outcome: 'completed', usage: { modelCalls: 1 } });
    expect(store.getSubmission('sub_1')).toMatchObject({ status: 'settled', outcome: 'completed' });
    expect(view.settled(live, 'sub_1')?.reply().text).toBe('Short reply.');
  });

  it('keeps the deltas of a step written whole in a store of format 2, which versions before 3 read too', async () => {
    const adapter = sqlite();
    await adapter.migrate();
    const driver = await adapter.connect();
    driver.run(`UPDATE flue_meta SET value = '2' WHERE key = 'format_version'`);
    store = new SqlStore(driver);
    view = new ConversationView(store);
    writer = new ConversationWriter(store, view);
    server.script({ text: ['Short ', 'reply.'] });
    const { live, row } = claimed();
    await run(live, row).execute();
    const step = store.readBatches(live.key, -1).find((batch) => batch.records.some((record) => record.type === 'assistant_started'))!;
    expect(step.records.map((record) => record.type)).toEqual([
      'user_message',
      'resource_snapshot',
      'assistant_started',
      'assistant_delta',
      'assistant_completed',
      'submission_settled',
    ]);
    expect(step.records[3]).toMatchObject({ delta: 'Short reply.' });
    expect(view.settled(live, 'sub_1')?.reply().text).toBe('Short reply.');
  });

  it('leaves the settlement to the engine when a finish hook, a tool call or a waiting delivery follows the last step', async () => {
    const { live, row } = claimed();
    server.script({ toolCalls: [{ name: 'plain', arguments: {} }] }, { text: 'Done.' });
    writer.admit(
      live,
      undefined,
      { id: 'sub_2', kind: 'dispatch', payload: { message: { kind: 'user', body: 'more' } }, acceptedAt: ts },
      [],
    );
    const response = new ResponseRun({ engine, view, writer, live, row, agent: Finisher as Agent });
    await response.execute();
    expect(response.settled).toBeUndefined();
    expect(records(live).some((record) => record.type === 'submission_settled')).toBe(false);
    expect(finishRuns).toBe(1);
  });

  it('a closing batch the store refuses leaves the fold as the store has it', async () => {
    server.script({ text: 'Refused.' });
    const { live, row } = claimed();
    const head = live.conv.head;
    const append = store.appendSized.bind(store);
    store.appendSized = (key, batch, at) => {
      if (batch.some((record) => record.type === 'submission_settled')) throw new Error('disk full');
      return append(key, batch, at);
    };
    const response = run(live, row);
    await expect(response.execute()).rejects.toThrow('disk full');
    expect(response.settled).toBeUndefined();
    // The fold took the step to make the settlement, then was rebuilt from the log, which has no step
    // (nor the input and the turn's snapshot, which rode on that batch).
    const stored = store.readBatches(live.key, -1);
    expect(stored.flatMap((batch) => batch.records.map((record) => record.type))).not.toContain('assistant_started');
    expect(live.conv.head).toBe(stored.at(-1)!.seq);
    expect(live.conv.head).toBe(head);
    expect(live.conv.finalAssistantText()).toBe('');
    expect(store.getSubmission('sub_1')).toMatchObject({ status: 'running', outcome: null });
    // The next write lands at the store's head.
    writer.commit(live, [{ type: 'signal', messageId: 'm', origin: 'framework', signalType: 'note', body: 'next', ts }]);
    expect(store.readBatches(live.key, -1).map((batch) => batch.seq)).toEqual([...stored.map((batch) => batch.seq), live.conv.head]);
  });

  it('a closing batch the store refuses keeps the input it carried: the next batch writes it', async () => {
    server.script({ text: 'First.' }, { text: 'Refused.' });
    const first = claimed();
    await run(first.live, first.row).execute();
    const { live } = first;
    writer.admit(
      live,
      undefined,
      { id: 'sub_2', kind: 'dispatch', payload: { message: { kind: 'user', body: 'again' } }, acceptedAt: ts },
      [],
    );
    const row = writer.claimAttempt(
      { id: 'sub_2', conversation: live.key },
      { attemptId: 'attempt_2', now: Date.now(), maxAttempts: 3, timeoutMs: 60_000 },
    );
    const before = records(live).length;
    const append = store.appendSized.bind(store);
    store.appendSized = (key, batch, at) => {
      if (batch.some((record) => record.type === 'submission_settled')) throw new Error('disk full');
      return append(key, batch, at);
    };
    await expect(run(live, row).execute()).rejects.toThrow('disk full');
    // Nobody followed: the input was held for the closing batch, which the store refused.
    expect(records(live)).toHaveLength(before);
    expect(live.conv.applied.has('sub_2')).toBe(true);
    writer.commit(live, [{ type: 'signal', messageId: 'm', origin: 'framework', signalType: 'note', body: 'next', ts }]);
    expect(
      records(live)
        .slice(before)
        .map((record) => record.type),
    ).toEqual(['user_message', 'signal']);
  });

  it('recovers a stream a crash left open: closes it, says it was interrupted, and continues', async () => {
    const { live, row } = claimed();
    writer.commit(live, [
      { type: 'user_message', messageId: 'msg_in_sub_1', submissionId: 'sub_1', deliveryOrigin: 'app', body: 'go', ts },
    ]);
    writer.commit(live, [
      { type: 'assistant_started', messageId: 'msg_r', stepId: 'step_open', submissionId: 'sub_1', attemptId: 'attempt_0', ts },
      { type: 'assistant_delta', messageId: 'msg_r', stepId: 'step_open', kind: 'text', block: 0, delta: 'Half a' },
    ]);
    server.script({ text: 'Whole answer.' });
    await run(live, row).execute();
    const signals = records(live).flatMap((record) => (record.type === 'signal' ? [record.signalType] : []));
    expect(signals).toEqual(['stream_interrupted', 'stream_continued']);
    expect(live.conv.finalAssistantText()).toBe('Whole answer.');
  });

  it('recovers an unfinished tool batch: an ordinary call gets the interrupted marker, a durable one re-runs', async () => {
    const { live, row } = claimed();
    writer.commit(live, [
      { type: 'user_message', messageId: 'msg_in_sub_1', submissionId: 'sub_1', deliveryOrigin: 'app', body: 'go', ts },
    ]);
    writer.commit(live, [
      { type: 'assistant_started', messageId: 'msg_r', stepId: 'step_1', submissionId: 'sub_1', attemptId: 'attempt_0', ts },
      {
        type: 'assistant_completed',
        messageId: 'msg_r',
        stepId: 'step_1',
        submissionId: 'sub_1',
        message: {
          role: 'assistant',
          content: [
            { type: 'toolCall', id: 'call_plain', name: 'plain', arguments: {} },
            { type: 'toolCall', id: 'call_charge', name: 'charge', arguments: {} },
          ],
          api: 'openai-completions',
          provider: 'run-unit',
          model: 'model',
          usage: emptyUsage(),
          stopReason: 'toolUse',
          timestamp: 0,
        },
        ts,
      },
    ]);
    // The durable tool's step finished before the crash: its memo replays.
    writer.stepMemo(live, 'step_1:call_charge').record('charge', 'charged');
    server.script({ text: 'Recovered.' });
    await run(live, row).execute();
    const results = records(live).find((record) => record.type === 'tool_results');
    expect(results?.type === 'tool_results' && results.outcomes.map((o) => [o.toolName, o.isError, o.content])).toEqual([
      ['plain', true, INTERRUPTED_TOOL_TEXT],
      ['charge', false, '"charged"'],
    ]);
    expect(plainRuns).toBe(0);
    expect(durableRuns).toBe(1);
  });

  it('joins a delivery queued behind it before its first turn', async () => {
    const { live, row } = claimed();
    writer.admit(
      live,
      undefined,
      { id: 'sub_2', kind: 'dispatch', payload: { message: { kind: 'user', body: 'also' } }, acceptedAt: ts },
      [],
    );
    server.script({ text: 'Answered both.' });
    await run(live, row).execute();
    expect(store.getSubmission('sub_2')).toMatchObject({ status: 'joined', joinedInto: 'sub_1' });
    expect(live.conv.applied.has('sub_2')).toBe(true);
  });

  it('stops with the abort reason when aborted', async () => {
    const { live, row } = claimed();
    const response = run(live, row);
    const reason = new Error('stop now');
    response.abort(reason);
    await expect(response.execute()).rejects.toBe(reason);
    expect(response.abortReason).toBe(reason);
  });
});
