/**
 * pi-ai transcripts in the shape Workers AI text-generation models take as `env.AI.run()` inputs:
 * `messages` with roles system/user/assistant/tool and `tools` as OpenAI-style function
 * declarations (Cloudflare's documented text-generation input).
 */
import { getCurrentSystemPrompt, getCurrentTools } from '@earendil-works/pi-ai';
import type { Message, TranscriptContext } from '@earendil-works/pi-ai';
import { skipUnknown } from '../shared/exhaustive.ts';

export interface WorkersAIToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export type WorkersAIMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string; tool_calls?: WorkersAIToolCall[] }
  | { role: 'tool'; content: string; tool_call_id: string; name: string };

export interface WorkersAITool {
  type: 'function';
  function: { name: string; description: string; parameters: object };
}

export interface WorkersAIInputs {
  messages: WorkersAIMessage[];
  tools?: WorkersAITool[];
  stream: boolean;
  max_tokens?: number;
  temperature?: number;
}

export function workersAIInputs(
  context: TranscriptContext,
  options: { stream: boolean; maxTokens?: number; temperature?: number },
): WorkersAIInputs {
  const messages: WorkersAIMessage[] = [];
  // The binding takes one leading system message, so later prompt changes are folded into it.
  const system = getCurrentSystemPrompt(context.messages);
  if (system !== '') messages.push({ role: 'system', content: system });
  for (const message of context.messages) {
    const mapped = mapMessage(message);
    if (mapped !== undefined) messages.push(mapped);
  }
  const tools = getCurrentTools(context.messages).map(
    (tool): WorkersAITool => ({
      type: 'function',
      function: { name: tool.name, description: tool.description, parameters: tool.parameters },
    }),
  );
  return {
    messages,
    ...(tools.length > 0 ? { tools } : {}),
    stream: options.stream,
    ...(options.maxTokens !== undefined && options.maxTokens > 0 ? { max_tokens: options.maxTokens } : {}),
    ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
  };
}

function mapMessage(message: Message): WorkersAIMessage | undefined {
  switch (message.role) {
    case 'system':
      return undefined;
    case 'user':
      // Text-generation inputs carry text only; images need a vision model's own input shape.
      return { role: 'user', content: typeof message.content === 'string' ? message.content : textOf(message.content) };
    case 'assistant': {
      const toolCalls = message.content.flatMap((part) =>
        part.type === 'toolCall'
          ? [{ id: part.id, type: 'function' as const, function: { name: part.name, arguments: JSON.stringify(part.arguments) } }]
          : [],
      );
      const text = textOf(message.content);
      if (text === '' && toolCalls.length === 0) return undefined;
      return { role: 'assistant', content: text, ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) };
    }
    case 'toolResult':
      return { role: 'tool', content: textOf(message.content), tool_call_id: message.toolCallId, name: message.toolName };
    default:
      skipUnknown(message);
      return undefined;
  }
}

function textOf(parts: readonly { type: string; text?: string }[]): string {
  return parts
    .filter((part) => part.type === 'text')
    .map((part) => part.text ?? '')
    .join('');
}
