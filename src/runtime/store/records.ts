/**
 * Canonical conversation records: the append-only log every other view is derived from. A batch
 * of records is appended atomically under one offset.
 *
 * Records stay small: streamed text is stored as coalesced deltas, and the completed assistant
 * step carries the provider message the model context is rebuilt from.
 */
import type { ConversationKey } from './conversation-key.ts';
import type { ToolLogLine } from './tool-log.ts';
import type { AssistantMessage } from '../model/model-types.ts';
import type { SettlementError } from '../common/errors.ts';
import type { DeliveryOrigin, PromptUsage, SubmissionUsage } from '../common/types.ts';
import type { ResourceSnapshot } from '../authoring/narration.ts';

export interface AttachmentRecordRef {
  id: string;
  type: 'image' | 'document';
  mimeType: string;
  size: number;
  filename?: string;
  /** Lowercase hex SHA-256 of the bytes, which live in the attachment store. */
  digest: string;
}

export type SubmissionOutcome = 'completed' | 'failed' | 'aborted';

/**
 * On the input record of a submission admitted in the log (format 4, a Durable Object's store,
 * when nothing else of the conversation is open): the record is the admission, and holds what its ledger row
 * would besides the message, so the row can be made from it when something needs one. A copy of
 * the log (a fork, an import) is written without it: the copy holds no admitted work.
 */
export interface LogAdmission {
  acceptedAt: string;
  /** Its first attempt, claimed at admission. */
  attemptId: string;
  startedAt: number;
  maxAttempts: number;
  timeoutMs: number;
}

/** An input record that is its submission's admission (`LogAdmission`). */
export type AdmissionRecord = Extract<ConversationRecord, { type: 'user_message' | 'signal' }> & {
  submissionId: string;
  admission: LogAdmission;
};

export function isAdmissionRecord(record: ConversationRecord): record is AdmissionRecord {
  return (
    (record.type === 'user_message' || record.type === 'signal') && record.admission !== undefined && record.submissionId !== undefined
  );
}

/** How a signal entered the log: delivered by a caller, appended by a hook, or written by us. */
export type SignalOrigin = 'delivery' | 'append' | 'framework';

export type ConversationRecord =
  | {
      type: 'conversation_created';
      conversationId: string;
      uid: string;
      initialData?: unknown;
      /** Set on a delegated task's child conversation (its own stream); absent on the root. */
      kind?: 'task';
      parentConversationId?: string;
      /** The delegating `task` tool call. */
      taskId?: string;
      agent?: string;
      /** Set on a conversation made by `fork()`: the conversation and the offset it was cut from. */
      forkedFrom?: { instanceId: string; conversationId: string; at: number };
      ts: string;
    }
  | {
      type: 'user_message';
      messageId: string;
      submissionId: string;
      /** Set when this delivery joined the live response of another submission. */
      joinedInto?: string;
      /** Who delivered it (`useDelivery().origin`); absent on records written before it was kept. */
      deliveryOrigin?: DeliveryOrigin;
      body: string;
      attachments?: AttachmentRecordRef[];
      admission?: LogAdmission;
      ts: string;
    }
  | {
      type: 'signal';
      messageId: string;
      submissionId?: string;
      joinedInto?: string;
      origin: SignalOrigin;
      /** Who delivered it, for `origin: 'delivery'` (see the user_message record). */
      deliveryOrigin?: DeliveryOrigin;
      signalType: string;
      body: string;
      attributes?: Record<string, string>;
      tagName?: string;
      admission?: LogAdmission;
      ts: string;
    }
  | {
      type: 'assistant_started';
      /** The response message id: the first step's id, shared by every step of the response. */
      messageId: string;
      stepId: string;
      submissionId: string;
      attemptId: string;
      metadata?: Record<string, unknown>;
      ts: string;
    }
  | {
      type: 'assistant_delta';
      stepId: string;
      /** The response message the delta extends (so a read from any offset can project it alone). */
      messageId: string;
      kind: 'text' | 'reasoning';
      block: number;
      delta: string;
    }
  | {
      type: 'assistant_completed';
      stepId: string;
      messageId: string;
      submissionId: string;
      message: AssistantMessage;
      ts: string;
    }
  | {
      type: 'tool_results';
      stepId: string;
      messageId: string;
      submissionId: string;
      outcomes: ToolOutcome[];
      ts: string;
    }
  | {
      /**
       * `log` lines a running tool call wrote, committed while it runs (coalesced: one record per
       * flush, engine/tool-progress.ts). Stream content only: never model context, never reply data.
       */
      type: 'tool_progress';
      stepId: string;
      messageId: string;
      /** The response's submission (as on its `tool_results`): the per-response bound counts by it. */
      submissionId: string;
      toolCallId: string;
      toolName: string;
      lines: ToolLogLine[];
    }
  | {
      /**
       * Model calls no other record carries, committed with the next batch of their response:
       * `harness.prompt()` and `harness.compact()` calls in tools and hooks, and summarizations
       * that failed. What the ledger and budgets count; never a message, never context.
       */
      type: 'model_spend';
      submissionId: string;
      source: 'harness' | 'compaction';
      usage: PromptUsage;
      modelCalls: number;
    }
  | { type: 'agent_start_run'; submissionId: string }
  | { type: 'agent_finish_cycle'; submissionId: string }
  | { type: 'data_write'; submissionId: string; messageId: string; name: string; data: unknown }
  | { type: 'response_metadata'; submissionId: string; messageId: string; metadata: Record<string, unknown> }
  | {
      /**
       * The resources (tools, skills, subagents, instruction digest, sandbox presence) last
       * narrated to the model. `baseline: true` marks the snapshot the system prompt's skill
       * catalog and agent roster are rendered from: first contact and each compaction.
       */
      type: 'resource_snapshot';
      baseline: boolean;
      snapshot: ResourceSnapshot;
      /**
       * The snapshot's tools the runtime added rather than the agent: its own (`task`, …) and the
       * sandbox's built-ins. What a replay compares by name only, so a runtime upgrade that rewords
       * them is no change of the agent. Absent on records from before it was kept, and on a
       * compaction's rebaseline (the snapshot before it still applies).
       */
      builtinTools?: string[];
    }
  | {
      type: 'compaction';
      summary: string;
      /** Index (in model-visible message order) of the first message kept after the summary. */
      firstKept: number;
      tokensBefore: number;
      usage?: PromptUsage;
      /** The submission whose response compacted (absent on records from before it was kept). */
      submissionId?: string;
      /** Summarization calls the usage sums (one or two; absent means one). */
      modelCalls?: number;
      ts: string;
    }
  | {
      /**
       * Written on the delegating conversation when a `task` call opens its child conversation, in the
       * same transaction as the child's first batch: where the child's own records are.
       */
      type: 'child_session_retained';
      child: ChildConversationRef;
      ts: string;
    }
  | {
      type: 'submission_settled';
      submissionId: string;
      outcome: SubmissionOutcome;
      error?: SettlementError;
      answeredBySubmissionId?: string;
      /** What the submission spent, summed at settlement (absent on records from before the ledger). */
      usage?: SettledUsage;
      ts: string;
    };

/** A settlement's ledger entry: `SubmissionUsage` without the id the record already carries. */
export type SettledUsage = Omit<SubmissionUsage, 'submissionId'>;

/**
 * One tool call's outcome: what running it answers, and what the log keeps of it (`aborted` and
 * `error` are for the caller and observers only; `dispatchToolCall` answers without them).
 */
export interface ToolOutcome {
  toolCallId: string;
  toolName: string;
  isError: boolean;
  /** Model-facing text: `JSON.stringify(output)` (`null` for no output), or the error message. */
  content: string;
  /** The tool's returned output value (JSON), when it succeeded; absent for void results. */
  output?: unknown;
  /** Only on success with `terminate: true`. */
  terminate?: true;
  durationMs?: number;
  /**
   * The call's `log` lines, on records written before lines were committed while the call runs
   * (`tool_progress`); never written now. Stream content only, never model context.
   */
  logs?: ToolLogLine[];
  /** The call ended because the host signal aborted: the engine should stop the turn. Never stored. */
  aborted?: true;
  /** The thrown or classified error, for observers. Never stored. */
  error?: unknown;
}

/** A child conversation retained on its parent (`child_session_retained`). */
export interface ChildConversationRef {
  type: 'task';
  conversationId: string;
  /** The child's key in the same store (conversation-key.ts); stored under the name `stream`. */
  stream: ConversationKey;
  agent: string;
  taskId: string;
  /** The delegating harness's name (`'default'` for the agent's own; the main conversation too). */
  harness: string;
  /**
   * The child's session name (`task:<step id>/<tool call id>`): what `session` / `parentSession`
   * say on its events. Absent on links written before the field existed.
   */
  session?: string;
  parentToolCallId: string;
  /** The parent's assistant step that issued the call (main conversation only). */
  parentAssistantEntryId?: string;
}

export type RecordOf<T extends ConversationRecord['type']> = Extract<ConversationRecord, { type: T }>;

/** Error text the model sees for an ordinary tool call that a crash interrupted. */
export const INTERRUPTED_TOOL_TEXT = JSON.stringify({
  type: 'interrupted',
  message: 'Tool execution was interrupted before completion. The outcome is unknown.',
});

/** The interrupted marker; for a `task` call it names the child conversation. */
export function interruptedToolText(childConversationId?: string): string {
  if (childConversationId === undefined) return INTERRUPTED_TOOL_TEXT;
  return JSON.stringify({ ...(JSON.parse(INTERRUPTED_TOOL_TEXT) as object), childConversationId });
}
