/**
 * What the recovery tables (recovery.test.ts) are written with: the agents, the given logs, and the
 * expected records, each built from docs/design/durability.md rather than from a run.
 */
import { expect } from 'vitest';
import * as v from 'valibot';
import type { ToolCall } from '@earendil-works/pi-ai';
import { useAgentStart, useModel, usePersistentState, useResponseStart, useSubagent, useTool } from '../index.ts';
import { type ToolDefinition, type ToolInputSchema, defineTool } from '../authoring/define-tool.ts';
import { emptyUsage } from '../model/usage.ts';
import { INTERRUPTED_TOOL_TEXT, type ConversationRecord } from '../store/records.ts';
import { BIRTH, type Given, NEXT_MODEL, TABLE_MODEL } from './recovery-journal.fixtures.ts';
import { childConversationKey, conversationKey } from '../store/conversation-key.ts';

// ── Agents ──────────────────────────────────────────────────────────────────────────────────

/** How often tool bodies, step fns and hooks ran; the test resets it before each case. */
export const runs = { plain: 0, reserve: 0, capture: 0, agentStart: 0, responseStart: 0 };

const charge = defineTool({
  name: 'charge',
  description: 'Charges in two durable steps.',
  input: v.object({}),
  durable: true,
  run: async ({ step }) => {
    const reserved = await step.do('reserve', () => (runs.reserve++, 'r-new'));
    const captured = await step.do('capture', () => (runs.capture++, 'c1'));
    return `${reserved}+${captured}`;
  },
});

export function Shop() {
  useModel(TABLE_MODEL);
  const [count, setCount] = usePersistentState('count', 0);
  useTool({
    name: 'plain',
    description: 'Counts in persistent state.',
    input: v.object({}),
    run: () => {
      runs.plain++;
      setCount(count + 1);
      return 'ok';
    },
  });
  useTool(charge);
  return 'Use the tools.';
}

/** Shop's durable `charge`, telling its progress through `log` before each step. */
const reportingCharge = defineTool({
  name: 'charge',
  description: 'Charges in two durable steps.',
  input: v.object({}),
  durable: true,
  run: async ({ step, log }) => {
    log.info('reserving');
    const reserved = await step.do('reserve', () => (runs.reserve++, 'r-new'));
    log.info('capturing');
    const captured = await step.do('capture', () => (runs.capture++, 'c1'));
    return `${reserved}+${captured}`;
  },
});

export function Reporting() {
  useModel(TABLE_MODEL);
  useTool(reportingCharge);
  return 'Use the tools.';
}

/** Progress lines of the `charge` call (step_1/call_1), written at `timestamp` (`'ts'`: by this attempt). */
export const progressed = (messages: string[], timestamp = GIVEN_TS): ConversationRecord => ({
  type: 'tool_progress',
  stepId: 'step_1',
  messageId: 'msg_r',
  submissionId: 'sub_a',
  toolCallId: 'call_1',
  toolName: 'charge',
  lines: messages.map((message) => ({ level: 'info', message, timestamp })),
});

/** Declares `plain` but no longer the durable `charge`. */
export function Forgetful() {
  useModel(TABLE_MODEL);
  useTool({ name: 'plain', description: 'Counts.', input: v.object({}), run: () => (runs.plain++, 'ok') });
  return 'Use the tools.';
}

export function Tagged() {
  useModel(TABLE_MODEL);
  useResponseStart(() => {
    runs.responseStart++;
    return { tag: 'first' };
  });
  return 'Answer.';
}

/** Shop with an attempt budget of two. */
export function Budgeted() {
  return Shop();
}
Budgeted.durability = { maxAttempts: 2 };

/** Shop whose model streams are abandoned after 20 ms of silence. */
export function Impatient() {
  return Shop();
}
Impatient.durability = { modelIdleTimeoutMs: 20 };

export function Greeter() {
  useModel(TABLE_MODEL);
  useAgentStart(({ append }) => {
    runs.agentStart++;
    append({ kind: 'signal', type: 'note', body: 'remember' });
  });
  return 'Greet.';
}

/** Held to the smallest window: a few long messages do not fit one request. */
export function Cramped() {
  useModel(TABLE_MODEL, { compaction: { contextWindow: 2048 } });
  return 'Answer.';
}

export function Boss() {
  useModel(TABLE_MODEL);
  useSubagent({ name: 'helper', description: 'Finds things.', agent: () => 'Find what you are asked for.' });
  return 'Delegate.';
}

// ── Agents after a deploy: the code changed between the crash and the recovery ──────────────

/** A durable `charge` taking `input`, whose steps are `names` in order, each answering `<name>-new`. */
function chargeWith(names: string[], input: ToolInputSchema = v.object({})) {
  return defineTool({
    name: 'charge',
    description: 'Charges in durable steps.',
    input,
    durable: true,
    run: async ({ step }) => {
      const values: unknown[] = [];
      for (const name of names) values.push(await step.do(name, () => `${name}-new`));
      return values.join('+');
    },
  });
}

/** Shop as a deploy changed it: the same identity, declaring only `tool`. */
function declaring(tool: ToolDefinition, model = TABLE_MODEL) {
  return function Shop() {
    useModel(model);
    useTool(tool);
    return 'Use the tools.';
  };
}

/** `plain` renamed to `tally` and `charge` to `bill`. */
export function Renamed() {
  useModel(TABLE_MODEL);
  useTool({ name: 'tally', description: 'Counts.', input: v.object({}), run: () => (runs.plain++, 'ok') });
  useTool({ ...charge, name: 'bill' });
  return 'Use the tools.';
}

/** `charge` now requires an amount: arguments recorded before the deploy no longer validate. */
export const Stricter = declaring(chargeWith(['reserve', 'capture'], v.object({ amount: v.number() })));
/** `charge` no longer asks for its `reserve` step. */
export const Trimmed = declaring(chargeWith(['capture']));
/** `charge` asks for a new `verify` step between its two. */
export const Extended = declaring(chargeWith(['reserve', 'verify', 'capture']));
/** `charge`'s `reserve` step renamed to `hold`. */
export const Relabelled = declaring(chargeWith(['hold', 'capture']));

/** `charge` declared as an ordinary tool. */
export const Demoted = declaring(
  defineTool({ name: 'charge', description: 'Charges.', input: v.object({}), run: () => (runs.capture++, 'c1') }),
);

const durablePlain = defineTool({
  name: 'plain',
  description: 'Counts.',
  input: v.object({}),
  durable: true,
  run: ({ step }) => step.do('count', () => (runs.plain++, 'ok')),
});
/** `plain` declared durable, its work in one step. */
export const Promoted = declaring(durablePlain);

/** Shop rendering another model. */
export function Switched() {
  useModel(NEXT_MODEL);
  useTool(charge);
  return 'Use the tools.';
}

/** Boss renamed, its identity kept, and its `helper` subagent removed. */
export function Manager() {
  useModel(TABLE_MODEL);
  return 'Delegate.';
}
Manager.agentName = 'Boss';

// ── Records, written from the design ────────────────────────────────────────────────────────

export const ts = 'ts';
export const GIVEN_TS = '2026-01-01T00:00:00.000Z';

/** The input record of a delivery (§1 "input applied"): its message id derives from the submission. */
export const input = (submissionId: string, body: string, joinedInto?: string) => ({
  type: 'user_message',
  messageId: `msg_in_${submissionId}`,
  submissionId,
  ...(joinedInto === undefined ? {} : { joinedInto }),
  deliveryOrigin: 'app',
  body,
  ts,
});

export const snapshot = { type: 'resource_snapshot', baseline: true };

/** What the scripted model answers, as the completed step keeps it. */
export const modelMessage = (content: unknown[], stopReason: string, errorMessage?: string, model = 'model') => ({
  role: 'assistant',
  content,
  api: 'scripted',
  provider: 'table',
  model,
  usage: emptyUsage(),
  stopReason,
  ...(errorMessage === undefined ? {} : { errorMessage }),
  timestamp: ts,
});

export const text = (said: string) => ({ type: 'text', text: said });
export const toolCall = (id: string, name: string, args: Record<string, unknown> = {}) => ({ type: 'toolCall', id, name, arguments: args });

/**
 * One streamed model step of this attempt, committed as one batch (`ids.model`: the scripted
 * model's id, default `model`): its text is kept once, in the completed message, not in deltas.
 */
export function step(
  ids: { message: string; step: string; sub?: string; model?: string },
  said: string | undefined,
  calls: unknown[] = [],
) {
  const submissionId = ids.sub ?? 'sub_a';
  const base = { stepId: ids.step, messageId: ids.message };
  return [
    { type: 'assistant_started', messageId: ids.message, stepId: ids.step, submissionId, attemptId: 'attempt_1', ts },
    {
      type: 'assistant_completed',
      ...base,
      submissionId,
      message: modelMessage(
        [...(said === undefined ? [] : [text(said)]), ...calls],
        calls.length > 0 ? 'toolUse' : 'stop',
        undefined,
        ids.model,
      ),
      ts,
    },
  ];
}

/**
 * `batches` with `first` at the head of the first: the input a response holds until its first batch
 * when no reader follows the conversation (ConversationWriter.hold).
 */
export const opening = (first: unknown, batches: unknown[][]): unknown[][] => [[first, ...batches[0]!], ...batches.slice(1)];

/**
 * The rest of a response that answers in one turn: one batch, the first turn's baseline snapshot
 * (held until the step's batch, like an input: ConversationWriter.hold), the step and the
 * settlement it ends in.
 */
export const answers = (ids: { message: string; step: string; model?: string }, said: string) => [
  [snapshot, ...step(ids, said), settled('sub_a', 'completed')],
];

/**
 * A settlement. Its ledger entry (`usage`) is stated exactly by the ledger and budget tables;
 * the others leave it to them.
 */
export const settled = (
  submissionId: string,
  outcome: string,
  error?: unknown,
  answeredBy = 'sub_a',
  usage: unknown = expect.any(Object),
) => ({
  type: 'submission_settled',
  submissionId,
  outcome,
  ...(error === undefined ? {} : { error }),
  answeredBySubmissionId: answeredBy,
  usage,
  ts,
});

/** Usage of `tokens` input tokens, at no cost (the table model is free). */
export const tokensUsage = (tokens: number) => ({ ...emptyUsage(), input: tokens, totalTokens: tokens });

/** Shop with a per-submission budget of 100 tokens. */
export function Capped() {
  return Shop();
}
Capped.budget = { perSubmission: { maxTokens: 100 } };

/** An open step closed as aborted, keeping what it said (§6.1 step 2, §6.3). */
export const closed = (stepId: string, said: string[], kind: 'text' | 'reasoning' = 'text') => ({
  type: 'assistant_completed',
  stepId,
  messageId: 'msg_r',
  submissionId: 'sub_a',
  message: {
    role: 'assistant',
    content: said.map((part): Record<string, string> => (kind === 'text' ? text(part) : { type: 'thinking', thinking: part })),
    api: 'openai-completions',
    provider: 'flue',
    model: 'interrupted',
    usage: emptyUsage(),
    stopReason: 'aborted',
    errorMessage: 'Stream interrupted before completion.',
    timestamp: ts,
  },
  ts,
});

export const streamSignal = (signalType: 'stream_interrupted' | 'stream_continued', stepId: string) => ({
  type: 'signal',
  messageId: `msg_${signalType}_${stepId}`,
  submissionId: 'sub_a',
  origin: 'framework',
  signalType,
  body:
    signalType === 'stream_interrupted'
      ? 'Your previous response was interrupted before it completed.'
      : 'Continue from where the interrupted response stopped.',
  ts,
});

/** The advisory signal of a failed or aborted settlement (§4). */
export const advisory = (kind: 'aborted' | 'interrupted', body: string, attributes: Record<string, string>) => ({
  type: 'signal',
  messageId: `msg_${kind}_sub_a`,
  submissionId: 'sub_a',
  origin: 'framework',
  signalType: `submission_${kind}`,
  body,
  attributes: { submissionId: 'sub_a', kind: 'dispatch', ...attributes },
  ts,
});

export const interrupted = (toolCallId: string, toolName: string) => ({
  toolCallId,
  toolName,
  isError: true,
  content: INTERRUPTED_TOOL_TEXT,
});

export const toolResults = (stepId: string, outcomes: unknown[], messageId = 'msg_r') => ({
  type: 'tool_results',
  stepId,
  messageId,
  submissionId: 'sub_a',
  outcomes,
  ts,
});

// ── Given logs ──────────────────────────────────────────────────────────────────────────────

export const applied: ConversationRecord[] = [
  { type: 'user_message', messageId: 'msg_in_sub_a', submissionId: 'sub_a', deliveryOrigin: 'app', body: 'go', ts: GIVEN_TS },
];

export const opened = (deltas: string[], kind: 'text' | 'reasoning' = 'text'): ConversationRecord[] => [
  { type: 'assistant_started', messageId: 'msg_r', stepId: 'step_open', submissionId: 'sub_a', attemptId: 'attempt_given_0', ts: GIVEN_TS },
  ...deltas.map(
    (delta): ConversationRecord => ({ type: 'assistant_delta', messageId: 'msg_r', stepId: 'step_open', kind, block: 0, delta }),
  ),
];

/** A completed step of an earlier attempt that issued tool calls, whose results never committed. */
export const issued = (...calls: { id: string; name: string; arguments?: ToolCall['arguments'] }[]): ConversationRecord[] => [
  { type: 'assistant_started', messageId: 'msg_r', stepId: 'step_1', submissionId: 'sub_a', attemptId: 'attempt_given_0', ts: GIVEN_TS },
  {
    type: 'assistant_completed',
    messageId: 'msg_r',
    stepId: 'step_1',
    submissionId: 'sub_a',
    message: {
      role: 'assistant',
      content: calls.map((call) => ({ type: 'toolCall', id: call.id, name: call.name, arguments: call.arguments ?? {} })),
      api: 'scripted',
      provider: 'table',
      model: 'model',
      usage: emptyUsage(),
      stopReason: 'toolUse',
      timestamp: 0,
    },
    ts: GIVEN_TS,
  },
];

export const first: Given['submissions'] = [{ id: 'sub_a', body: 'go' }];
/** sub_a after one attempt that died. */
export const retried: Given['submissions'] = [{ id: 'sub_a', body: 'go', attempts: 1 }];

export const CHILD = childConversationKey(conversationKey('Boss', 't1'), 'step_1', 'call_1');

/** Boss's step that delegated to `helper`, whose result never committed. */
export const delegating = issued({ id: 'call_1', name: 'task', arguments: { agent: 'helper', prompt: 'Find it.' } });

/** A crash while `helper` worked: the call is unresolved, its child conversation born with the task prompt. */
export const delegated: Given = {
  log: [
    applied,
    delegating,
    [
      {
        type: 'child_session_retained',
        child: {
          type: 'task',
          conversationId: 'conv_child',
          stream: CHILD,
          agent: 'helper',
          taskId: 'call_1',
          harness: 'default',
          session: 'task:step_1/call_1',
          parentToolCallId: 'call_1',
          parentAssistantEntryId: 'step_1',
        },
        ts: GIVEN_TS,
      },
    ],
  ],
  streams: {
    [CHILD]: [
      [
        {
          type: 'conversation_created',
          conversationId: 'conv_child',
          uid: BIRTH.uid,
          kind: 'task',
          parentConversationId: BIRTH.conversationId,
          taskId: 'call_1',
          agent: 'helper',
          ts: GIVEN_TS,
        },
        { type: 'user_message', messageId: 'msg_task', submissionId: 'sub_a', deliveryOrigin: 'agent', body: 'Find it.', ts: GIVEN_TS },
      ],
    ],
  },
  submissions: retried,
};
