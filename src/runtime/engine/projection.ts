/**
 * Record → chunk projection: the client-visible conversation stream is
 * derived batch by batch from the log. Only the 12 chunk types the official clients accept exist.
 */
import {
  Conversation,
  type FlueConversationMessage,
  type FlueConversationSnapshot,
  signalMessageOf,
  stepText,
  userMessageOf,
} from './conversation.ts';
import type { SettlementError } from '../common/errors.ts';
import type { Batch } from '../store/sql-store.ts';
import type { ToolLogLine } from '../store/tool-log.ts';
import { skipUnknown } from '../../shared/exhaustive.ts';

interface Positioned {
  conversationId: string;
  position: { batch: number; index: number };
}

export type ConversationStreamChunk =
  | ({ type: 'conversation-reset'; snapshot: Omit<FlueConversationSnapshot, 'incarnation'> } & Positioned)
  | ({ type: 'message-appended'; message: FlueConversationMessage } & Positioned)
  | ({
      type: 'message-started';
      messageId: string;
      submissionId?: string;
      turnId?: string;
      metadata?: Record<string, unknown>;
      timestamp?: string;
    } & Positioned)
  | ({ type: 'message-metadata'; messageId: string; metadata: Record<string, unknown> } & Positioned)
  | ({ type: 'data-part'; messageId: string; name: string; data: unknown } & Positioned)
  | ({ type: 'message-delta'; messageId: string; kind: 'text' | 'reasoning'; delta: string } & Positioned)
  | ({
      type: 'tool-input';
      messageId: string;
      toolCallId: string;
      toolName: string;
      input: unknown;
      /** Absent: this chunk is the call itself (see the progress variant below). */
      progress?: never;
      timestamp?: string;
    } & Positioned)
  | ({
      /**
       * A running call's progress: `log` lines it wrote since the last such chunk. The official
       * clients accept no chunk type of their own for it; a repeated `tool-input` for a call they
       * already hold leaves their state unchanged, and `progress` (present) marks it as progress,
       * not a new call.
       */
      type: 'tool-input';
      messageId: string;
      toolCallId: string;
      toolName: string;
      progress: ToolLogLine[];
      input?: never;
    } & Positioned)
  | ({ type: 'tool-output'; toolCallId: string; output: unknown; durationMs?: number; timestamp?: string } & Positioned)
  | ({ type: 'tool-output-error'; toolCallId: string; errorText: string; durationMs?: number; timestamp?: string } & Positioned)
  | ({ type: 'message-completed'; messageId: string; timestamp?: string } & Positioned)
  | ({
      type: 'submission-settled';
      submissionId: string;
      outcome: 'completed' | 'failed' | 'aborted';
      error?: SettlementError;
      answeredBySubmissionId?: string;
      timestamp?: string;
    } & Positioned)
  | { type: 'stream-checkpoint'; incarnation: string };

/**
 * Projects one batch into chunks. Every record projects on its own except a batch that creates or
 * compacts the conversation, which becomes one `conversation-reset` carrying the snapshot after
 * it — so reading from any offset costs work proportional to the batches read.
 */
export function projectBatch(
  batch: Batch,
  conversationId: string,
  snapshotAfter: (seq: number) => Omit<FlueConversationSnapshot, 'incarnation'>,
): ConversationStreamChunk[] {
  let index = 0;
  const at = () => ({ conversationId, position: { batch: batch.seq, index: index++ } });
  if (batch.records.some((r) => r.type === 'conversation_created' || r.type === 'compaction')) {
    return [{ type: 'conversation-reset', snapshot: snapshotAfter(batch.seq), ...at() }];
  }
  const chunks: ConversationStreamChunk[] = [];
  // A step started and completed in this batch with no delta was written whole: its text is in
  // its completed message alone (turn-stream.ts), and is given as deltas from there (stepText),
  // so readers of the log see what a live follower saw.
  const startedHere = new Set<string>();
  const streamedHere = new Set<string>();
  for (const record of batch.records) {
    switch (record.type) {
      case 'user_message':
        chunks.push({ type: 'message-appended', message: userMessageOf(record), ...at() });
        break;
      case 'signal':
        chunks.push({ type: 'message-appended', message: signalMessageOf(record), ...at() });
        break;
      case 'assistant_started':
        startedHere.add(record.stepId);
        chunks.push({
          type: 'message-started',
          messageId: record.messageId,
          submissionId: record.submissionId,
          ...(record.metadata === undefined ? {} : { metadata: record.metadata }),
          timestamp: record.ts,
          ...at(),
        });
        break;
      case 'assistant_delta':
        streamedHere.add(record.stepId);
        chunks.push({ type: 'message-delta', messageId: record.messageId, kind: record.kind, delta: record.delta, ...at() });
        break;
      case 'assistant_completed':
        if (startedHere.has(record.stepId) && !streamedHere.has(record.stepId)) {
          for (const { kind, text } of stepText(record.message)) {
            chunks.push({ type: 'message-delta', messageId: record.messageId, kind, delta: text, ...at() });
          }
        }
        for (const block of record.message.content) {
          if (block.type !== 'toolCall') continue;
          chunks.push({
            type: 'tool-input',
            messageId: record.messageId,
            toolCallId: block.id,
            toolName: block.name,
            input: block.arguments,
            timestamp: record.ts,
            ...at(),
          });
        }
        chunks.push({ type: 'message-completed', messageId: record.messageId, timestamp: record.ts, ...at() });
        break;
      case 'tool_progress':
        chunks.push({
          type: 'tool-input',
          messageId: record.messageId,
          toolCallId: record.toolCallId,
          toolName: record.toolName,
          progress: record.lines,
          ...at(),
        });
        break;
      case 'tool_results':
        for (const outcome of record.outcomes) {
          // Records written before lines were committed while the call ran kept them on the
          // outcome: they replay as the call's progress, just before its result.
          if (outcome.logs !== undefined && outcome.logs.length > 0) {
            chunks.push({
              type: 'tool-input',
              messageId: record.messageId,
              toolCallId: outcome.toolCallId,
              toolName: outcome.toolName,
              progress: outcome.logs,
              ...at(),
            });
          }
          const duration = outcome.durationMs === undefined ? {} : { durationMs: outcome.durationMs };
          chunks.push(
            outcome.isError
              ? {
                  type: 'tool-output-error',
                  toolCallId: outcome.toolCallId,
                  errorText: outcome.content,
                  ...duration,
                  timestamp: record.ts,
                  ...at(),
                }
              : {
                  type: 'tool-output',
                  toolCallId: outcome.toolCallId,
                  output: outcome.output ?? null,
                  ...duration,
                  timestamp: record.ts,
                  ...at(),
                },
          );
        }
        break;
      case 'data_write':
        chunks.push({ type: 'data-part', messageId: record.messageId, name: record.name, data: record.data, ...at() });
        break;
      case 'response_metadata':
        chunks.push({ type: 'message-metadata', messageId: record.messageId, metadata: record.metadata, ...at() });
        break;
      case 'submission_settled':
        chunks.push({
          type: 'submission-settled',
          submissionId: record.submissionId,
          outcome: record.outcome,
          ...(record.error === undefined ? {} : { error: record.error }),
          ...(record.answeredBySubmissionId === undefined ? {} : { answeredBySubmissionId: record.answeredBySubmissionId }),
          timestamp: record.ts,
          ...at(),
        });
        break;
      // Not part of the client stream: creation and compaction became a reset above; the rest is
      // bookkeeping the loop reads back (runs, cycles, narration, child links).
      case 'conversation_created':
      case 'compaction':
      case 'agent_start_run':
      case 'agent_finish_cycle':
      case 'model_spend':
      case 'resource_snapshot':
      case 'child_session_retained':
        break;
      default:
        skipUnknown(record);
    }
  }
  return chunks;
}

/** Projects a stream from its start, folding its own copy of the conversation for resets. */
export class Projector {
  readonly conversation = new Conversation();

  project(batch: Batch): ConversationStreamChunk[] {
    this.conversation.apply(batch);
    return projectBatch(batch, this.conversation.conversationId, () => {
      const { incarnation: _omit, ...snapshot } = this.conversation.snapshot();
      return snapshot;
    });
  }
}
