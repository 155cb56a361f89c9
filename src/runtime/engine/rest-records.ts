/**
 * Records that bring an interrupted response to rest, so the model sees a coherent transcript: an
 * open stream is closed as aborted (its text kept), and unresolved tool calls get the interrupted
 * marker (a `task` call's names its child conversation). Used by settlement after a failure or an
 * abort, and by the response loop when it recovers a stream a crash cut off.
 */
import type { Conversation } from './conversation.ts';
import type { ConversationView, LiveConversation } from './conversation-view.ts';
import { childConversationKey } from '../store/conversation-key.ts';
import { type ConversationRecord, interruptedToolText } from '../store/records.ts';
import { emptyUsage } from '../model/usage.ts';

export function restRecords(
  live: LiveConversation,
  ts: string,
  view: ConversationView,
): { records: ConversationRecord[]; tools: string[] } {
  const records: ConversationRecord[] = [];
  const tail = live.conv.tail;
  if (tail.openStep !== undefined) records.push(convergeOpenStep(tail.openStep, ts));
  const pending = tail.pendingToolCalls;
  const tools: string[] = [];
  if (pending !== undefined) {
    records.push({
      type: 'tool_results',
      stepId: pending.stepId,
      messageId: pending.messageId,
      submissionId: pending.submissionId,
      outcomes: pending.calls.map((call) => {
        tools.push(call.name);
        const child = call.name === 'task' ? view.childConversationId(childConversationKey(live.key, pending.stepId, call.id)) : undefined;
        return { toolCallId: call.id, toolName: call.name, isError: true, content: interruptedToolText(child) };
      }),
      ts,
    });
  }
  return { records, tools };
}

/** Closes a stream that never completed, keeping what it said. */
export function convergeOpenStep(open: NonNullable<Conversation['tail']['openStep']>, ts: string): ConversationRecord {
  return {
    type: 'assistant_completed',
    stepId: open.stepId,
    messageId: open.messageId,
    submissionId: open.submissionId,
    message: {
      role: 'assistant',
      content: open.blocks
        .filter((block) => block !== undefined)
        .map((block) => (block.kind === 'text' ? { type: 'text', text: block.text } : { type: 'thinking', thinking: block.text })),
      api: 'openai-completions',
      provider: 'flue',
      model: 'interrupted',
      usage: emptyUsage(),
      stopReason: 'aborted',
      errorMessage: 'Stream interrupted before completion.',
      timestamp: Date.parse(ts),
    },
    ts,
  };
}
