import { beforeEach, describe, expect, it } from 'vitest';
import type { ToolCall } from '@earendil-works/pi-ai';
import { sqlite } from '../../node/sqlite.ts';
import { AgentSandbox } from './agent-sandbox.ts';
import { ConversationWriter } from './conversation-writer.ts';
import { ConversationView, type LiveConversation } from './conversation-view.ts';
import { childConversationKey } from '../store/conversation-key.ts';
import { interruptedToolText } from '../store/records.ts';
import { RunStopped } from './run-signals.ts';
import { SqlStore, type SubmissionRow } from '../store/sql-store.ts';
import type { SubagentDefinition } from '../authoring/subagents.ts';
import { type DelegateRun, type DelegatingResponse, type Delegation, runTaskCall } from './task-run.ts';
import { PendingState } from './pending-state.ts';
import { PendingTimers } from './pending-timers.ts';
import { ResponseWriter } from './response-writer.ts';
import { assistant } from './log-records.fixtures.ts';

const ts = '2026-01-01T00:00:00.000Z';
const helper: SubagentDefinition = { name: 'helper', description: 'Helps.', agent: () => 'Help.' };

let store: SqlStore;
let view: ConversationView;
let writer: ConversationWriter;
let parent: LiveConversation;
let row: SubmissionRow;
let events: { type: string; payload: Record<string, unknown> }[];
let delegated: Delegation[];
/** What the delegate's loop does with its child conversation; by default it answers with text. */
let behave: (child: LiveConversation) => void;

beforeEach(async () => {
  const adapter = sqlite();
  await adapter.migrate();
  store = new SqlStore(await adapter.connect());
  view = new ConversationView(store);
  writer = new ConversationWriter(store, view);
  parent = view.live('Boss', 'b1');
  writer.admit(
    parent,
    { type: 'conversation_created', conversationId: 'conv_root', uid: 'inst_b', ts },
    { id: 'sub_1', kind: 'dispatch', payload: { message: { kind: 'user', body: 'go' } }, acceptedAt: ts },
    [],
  );
  view.keep(parent);
  row = writer.claimAttempt(
    { id: 'sub_1', conversation: parent.key },
    { attemptId: 'attempt_1', now: Date.now(), maxAttempts: 3, timeoutMs: 60_000 },
  );
  events = [];
  delegated = [];
  behave = (child) => answer(child, 'child says hi');
});

function answer(child: LiveConversation, text: string): void {
  writer.commit(child, [
    { type: 'assistant_started', messageId: 'msg_c', stepId: 'step_c', submissionId: 'sub_1', attemptId: 'attempt_1', ts },
    {
      type: 'assistant_completed',
      messageId: 'msg_c',
      stepId: 'step_c',
      submissionId: 'sub_1',
      message: assistant([{ type: 'text', text }]),
      ts,
    },
  ]);
}

/** The delegating response, as a task run sees it. */
function delegating(): DelegatingResponse {
  return {
    live: parent,
    submissionId: row.id,
    environment: new AgentSandbox('b1'),
    model: { spec: 'p/m', thinkingLevel: undefined, compaction: undefined },
    session: 'default',
    attachmentKey: parent.key,
    childConversationId: (stream) => view.childConversationId(stream),
    emit: (type, payload) => events.push({ type, payload }),
    delegateTo(child: LiveConversation, delegation: Delegation): DelegateRun {
      delegated.push(delegation);
      return {
        execute: async () => behave(child),
        abort: () => {},
        dispose: async () => {},
      };
    },
    writer: new ResponseWriter({
      writer,
      live: parent,
      state: new PendingState(() => view.stateOf(parent)),
      timers: new PendingTimers(() => view.timers(parent)),
    }),
  };
}

const call = (args: ToolCall['arguments']): ToolCall => ({ type: 'toolCall', id: 'call_1', name: 'task', arguments: args });
const site = (extra: { recovering?: boolean; subagents?: SubagentDefinition[] } = {}) => ({
  stepId: 'step_1',
  subagents: extra.subagents ?? [helper],
  depth: 0,
  signal: new AbortController().signal,
  ...(extra.recovering ? { recovering: true } : {}),
});

describe('runTaskCall', () => {
  it('answers an undeclared subagent as a fact, with no child conversation', async () => {
    const outcome = await runTaskCall(delegating(), call({ prompt: 'x', agent: 'nobody' }), site());
    expect(outcome).toEqual({ isError: false, content: 'Subagent "nobody" is not declared. Available subagents: helper.' });
    expect(parent.conv.children).toHaveLength(0);
  });

  it('bears the child conversation with the task prompt, retained on the parent, and returns its final text', async () => {
    const outcome = await runTaskCall(delegating(), call({ prompt: 'Do it.', agent: 'helper' }), site());
    expect(outcome).toEqual({ isError: false, content: 'child says hi' });
    const stream = childConversationKey(parent.key, 'step_1', 'call_1');
    expect(parent.conv.children).toMatchObject([
      { stream, agent: 'helper', taskId: 'call_1', session: 'task:step_1/call_1', parentAssistantEntryId: 'step_1' },
    ]);
    const [birth] = store.readBatches(stream, -1);
    expect(birth!.records).toMatchObject([
      { type: 'conversation_created', kind: 'task', parentConversationId: 'conv_root', agent: 'helper' },
      { type: 'user_message', submissionId: 'sub_1', deliveryOrigin: 'agent', body: 'Do it.' },
    ]);
    expect(delegated).toMatchObject([
      { depth: 1, session: 'task:step_1/call_1', parentSession: 'default', taskId: 'call_1', model: { spec: 'p/m' } },
    ]);
    expect(events.map((event) => event.type)).toEqual(['task_start', 'task']);
  });

  it('continues an existing child conversation when recovering, without a second birth', async () => {
    await runTaskCall(delegating(), call({ prompt: 'Do it.', agent: 'helper' }), site());
    behave = (child) => answer(child, 'resumed');
    const outcome = await runTaskCall(delegating(), call({ prompt: 'Do it.', agent: 'helper' }), site({ recovering: true }));
    expect(outcome).toEqual({ isError: false, content: 'resumed' });
    expect(parent.conv.children).toHaveLength(1);
  });

  it('settles a recovered call whose delegate is no longer declared with the marker naming its child', async () => {
    await runTaskCall(delegating(), call({ prompt: 'Do it.', agent: 'helper' }), site());
    const childId = parent.conv.children[0]!.conversationId;
    const outcome = await runTaskCall(delegating(), call({ prompt: 'Do it.', agent: 'helper' }), site({ recovering: true, subagents: [] }));
    expect(outcome).toEqual({ isError: true, content: interruptedToolText(childId) });
  });

  it("turns a failing delegate into the tool's error result, but lets a stop propagate", async () => {
    behave = () => {
      throw new Error('delegate broke');
    };
    expect(await runTaskCall(delegating(), call({ prompt: 'x', agent: 'helper' }), site())).toEqual({
      isError: true,
      content: 'delegate broke',
    });
    behave = () => {
      throw new RunStopped();
    };
    await expect(runTaskCall(delegating(), call({ prompt: 'x', agent: 'helper' }), { ...site(), stepId: 'step_2' })).rejects.toBeInstanceOf(
      RunStopped,
    );
  });

  it('refuses a cwd without a sandbox before any child is born', async () => {
    const outcome = await runTaskCall(delegating(), call({ prompt: 'x', agent: 'helper', cwd: 'sub' }), site());
    expect(outcome).toEqual({ isError: true, content: 'The task cwd "sub" cannot be used: this agent has no sandbox.' });
    expect(parent.conv.children).toHaveLength(0);
  });
});
