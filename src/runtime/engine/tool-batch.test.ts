import { beforeEach, describe, expect, it } from 'vitest';
import * as v from 'valibot';
import type { ToolCall } from '@earendil-works/pi-ai';
import { sqlite } from '../../node/sqlite.ts';
import { AgentSandbox } from './agent-sandbox.ts';
import { AttemptAbort } from './attempt-abort.ts';
import { ConversationWriter } from './conversation-writer.ts';
import { ConversationView, type LiveConversation } from './conversation-view.ts';
import { PendingState } from './pending-state.ts';
import { PendingTimers } from './pending-timers.ts';
import { ResponseSite } from './response-site.ts';
import { ResponseWriter } from './response-writer.ts';
import { type ToolBatchInput, runToolBatch } from './tool-batch.ts';
import { type ToolDefinition, defineTool } from '../authoring/define-tool.ts';
import { INTERRUPTED_TOOL_TEXT } from '../store/records.ts';
import { SqlStore } from '../store/sql-store.ts';

let plainRuns: number;
let durableRuns: number;
const plain = defineTool({
  name: 'plain',
  description: 'Counts.',
  input: v.object({}),
  run: () => {
    plainRuns++;
    return 'ok';
  },
});
const charge = defineTool({
  name: 'charge',
  description: 'Charge once.',
  input: v.object({}),
  durable: true,
  run: async ({ step }) => {
    durableRuns++;
    return step.do('charge', () => 'charged');
  },
});

let store: SqlStore;
let writer: ConversationWriter;
let live: LiveConversation;
let out: ResponseWriter;

beforeEach(async () => {
  const adapter = sqlite();
  await adapter.migrate();
  store = new SqlStore(await adapter.connect());
  const view = new ConversationView(store);
  writer = new ConversationWriter(store, view);
  live = view.live('Worker', 'w1');
  writer.admit(
    live,
    { type: 'conversation_created', conversationId: 'conv_w', uid: 'inst_w', ts: '2026-01-01T00:00:00.000Z' },
    { id: 'sub_1', kind: 'dispatch', payload: { message: { kind: 'user', body: 'go' } }, acceptedAt: '2026-01-01T00:00:00.000Z' },
    [],
  );
  view.keep(live);
  out = new ResponseWriter({
    writer,
    live,
    state: new PendingState(() => view.stateOf(live)),
    timers: new PendingTimers(() => view.timers(live)),
  });
  plainRuns = 0;
  durableRuns = 0;
});

const call = (name: string): ToolCall => ({ type: 'toolCall', id: `call_${name}`, name, arguments: {} });

/** A batch of one step's calls, resolved against `tools`. */
function input(fresh: boolean, tools: ToolDefinition[] = [plain, charge]): ToolBatchInput {
  return {
    batch: { stepId: 'step_1', messageId: 'msg_1', submissionId: 'sub_1', calls: [call('plain'), call('charge')] },
    fresh,
    tools: new Map(tools.map((tool) => [tool.name, tool])),
    subagents: [],
    attempt: new AttemptAbort(),
    site: new ResponseSite({ live, submissionId: 'sub_1', env: {}, probed: { stop: async () => {} } }),
    environment: new AgentSandbox('w1'),
    depth: 0,
    harness: () => {
      throw new Error('no harness in this test');
    },
    task: async () => ({ isError: true, content: 'no tasks in this test' }),
  };
}

const outcomesOf = (record: Awaited<ReturnType<typeof runToolBatch>>) =>
  record.type === 'tool_results' ? record.outcomes.map((outcome) => [outcome.toolName, outcome.isError, outcome.content]) : [];

describe('runToolBatch', () => {
  it("runs every call of a fresh batch and returns the step's tool_results, writing nothing of its own but step memos", async () => {
    const record = await runToolBatch(input(true), out);
    expect(record).toMatchObject({ type: 'tool_results', stepId: 'step_1', messageId: 'msg_1', submissionId: 'sub_1' });
    expect(outcomesOf(record)).toEqual([
      ['plain', false, '"ok"'],
      ['charge', false, '"charged"'],
    ]);
    expect([plainRuns, durableRuns]).toEqual([1, 1]);
    expect(
      store
        .readBatches(live.key, -1)
        .flatMap((batch) => batch.records)
        .map((r) => r.type),
    ).toEqual(['conversation_created']);
    expect(writer.stepMemo(live, 'step_1:call_charge').lookup('charge')).toEqual({ found: true, value: 'charged' });
  });

  it('recovers a batch it is told is not fresh: an ordinary call gets the interrupted marker, a durable one re-runs from its memos', async () => {
    writer.stepMemo(live, 'step_1:call_charge').record('charge', 'charged before the crash');
    const record = await runToolBatch(input(false), out);
    expect(outcomesOf(record)).toEqual([
      ['plain', true, INTERRUPTED_TOOL_TEXT],
      ['charge', false, '"charged before the crash"'],
    ]);
    expect([plainRuns, durableRuns]).toEqual([0, 1]);
  });

  it('resolves calls against the tool set it is handed', async () => {
    const record = await runToolBatch(input(true, [charge]), out);
    expect(outcomesOf(record)).toEqual([
      ['plain', true, 'Tool "plain" is not available.'],
      ['charge', false, '"charged"'],
    ]);
  });

  it("rethrows the attempt's abort reason instead of returning results", async () => {
    const batch = input(true);
    const reason = new Error('stopped');
    batch.attempt.abort(reason);
    await expect(runToolBatch(batch, out)).rejects.toBe(reason);
  });
});
