/**
 * Seed 000's src/ui/Approvals.tsx, its logic verbatim: the client derives pending approvals from
 * the conversation it follows. Shared by the tests that check a gate keeps that client working.
 */
import type { FlueConversationMessage } from '@flue/react';

export function pendingApprovals(messages: FlueConversationMessage[]) {
  const decided = new Set(messages.flatMap((message) => message.signal?.attributes?.approvalId ?? []));
  return messages.flatMap((message) =>
    message.parts.flatMap((part) =>
      part.type === 'dynamic-tool' &&
      part.state === 'output-available' &&
      (part.output as { status?: string } | null)?.status === 'pending_approval' &&
      !decided.has(part.toolCallId)
        ? [{ approvalId: part.toolCallId, toolName: part.toolName, input: part.input }]
        : [],
    ),
  );
}
