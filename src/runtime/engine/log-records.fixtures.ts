/** Log records the fold tests build their logs from. */
import type { AssistantMessage } from '@earendil-works/pi-ai';
import type { ConversationRecord } from '../store/records.ts';
import { emptyUsage } from '../model/usage.ts';

export const ts = '2026-01-01T00:00:00.000Z';

/** A provider's assistant message with zero usage. */
export function assistant(content: AssistantMessage['content'], stopReason: AssistantMessage['stopReason'] = 'stop'): AssistantMessage {
  return {
    role: 'assistant',
    content,
    api: 'openai-completions',
    provider: 'p',
    model: 'm',
    usage: emptyUsage() as never,
    stopReason,
    timestamp: 0,
  };
}

/** A user message delivered by the app for submission `id`. */
export function input(id: string, body: string): ConversationRecord {
  return { type: 'user_message', messageId: `msg_in_${id}`, submissionId: id, deliveryOrigin: 'app', body, ts };
}

/** A streamed piece of block `block` of step `stepId` (message `msg_a`). */
export function delta(block: number, kind: 'text' | 'reasoning', text: string, stepId = 's1'): ConversationRecord {
  return { type: 'assistant_delta', messageId: 'msg_a', stepId, kind, block, delta: text };
}
