/**
 * The payloads of the session events a response emits (events.md §5) that are built from what a
 * part decided: a tool outcome as its tool-result message and terminal `tool` event, and the turn
 * boundary. Pure functions: the parts emit them through their site, only when someone observes.
 */
import type { AssistantMessage } from '@earendil-works/pi-ai';
import { omitImageData } from '../common/events.ts';
import type { ToolOutcome } from '../store/records.ts';

/** The tool-result message of one outcome, as `message_start`/`message_end` and `turn_messages` carry it. */
export function toolResultMessage(outcome: ToolOutcome): Record<string, unknown> {
  return {
    role: 'toolResult',
    toolCallId: outcome.toolCallId,
    toolName: outcome.toolName,
    content: [{ type: 'text', text: outcome.content }],
    isError: outcome.isError,
  };
}

/** The terminal `tool` event of one outcome, published when its batch commits. */
export function toolEvent(outcome: ToolOutcome): Record<string, unknown> {
  return {
    toolName: outcome.toolName,
    toolCallId: outcome.toolCallId,
    isError: outcome.isError,
    result: { content: [{ type: 'text', text: outcome.content }], details: outcome.output ?? null },
    durationMs: outcome.durationMs ?? 0,
    origin: 'model',
    ...(outcome.isError ? {} : { effectiveResult: outcome.output ?? outcome.content }),
  };
}

/** The turn boundary: the step's assistant message and the tool results its calls produced. */
export function turnMessages(stepId: string, message: AssistantMessage, outcomes: readonly ToolOutcome[]): Record<string, unknown> {
  return {
    turnId: stepId,
    purpose: 'agent',
    message: omitImageData(message),
    toolResults: outcomes.map(toolResultMessage),
  };
}
