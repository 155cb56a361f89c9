/**
 * The payloads of the session events a response emits that are built from what a
 * part decided: a tool outcome as its tool-result message and terminal `tool` event, the turn
 * boundary, and a model call's request and response summaries (agent and compaction turns). Pure functions: the parts emit them through their site, only when someone observes.
 */
import type { Api, AssistantMessage, Model } from '@earendil-works/pi-ai';
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

/** The `ModelRequestInfo` of an event: which provider and model a turn asked. */
export function requestInfo(model: Model<Api>): Record<string, unknown> {
  const info: Record<string, unknown> = {
    providerId: model.provider,
    providerName: model.provider,
    requestedModel: model.id,
    api: model.api,
  };
  try {
    const url = new URL(model.baseUrl);
    info.serverAddress = url.hostname;
    if (url.port !== '') info.serverPort = Number(url.port);
  } catch {
    // A provider without a parseable endpoint simply has no server fields.
  }
  if (model.maxTokens !== undefined) info.maxTokens = model.maxTokens;
  return info;
}

/** The `ModelResponse` of a `turn` event, from the step's final message. */
export function modelResponse(message: AssistantMessage): Record<string, unknown> {
  return {
    ...(message.responseId === undefined ? {} : { responseId: message.responseId }),
    responseModel: message.model,
    output: omitImageData(message),
    usage: message.usage,
    finishReason: message.stopReason,
    ...(message.errorMessage === undefined ? {} : { error: { type: '_OTHER', message: message.errorMessage } }),
  };
}
