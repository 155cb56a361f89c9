/**
 * Model requests in either wire format (OpenAI chat-completions, Anthropic messages) normalized to
 * the one `RecordedRequest` shape tests assert on.
 */
import type { IncomingMessage } from 'node:http';
import type { RecordedMessage, RecordedRequest, RecordedTool, RecordedToolCall, ScriptedWireApi } from './scripted-model-types.ts';

export function normalizeRequest(
  api: ScriptedWireApi,
  path: string,
  body: unknown,
  req: IncomingMessage,
  receivedAt: number,
): RecordedRequest {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  const raw = isRecord(body) ? body : {};
  const normalized = api === 'openai-completions' ? normalizeOpenAI(raw) : normalizeAnthropic(raw);
  return { api, path, receivedAt, body, headers, ...normalized };
}

type Normalized = Pick<RecordedRequest, 'system' | 'tools' | 'messages'>;

function normalizeOpenAI(body: Record<string, unknown>): Normalized {
  const systemParts: string[] = [];
  const messages: RecordedMessage[] = [];
  for (const message of asArray(body.messages)) {
    if (!isRecord(message)) continue;
    const role = message.role;
    if (role === 'system' || role === 'developer') {
      // Only the leading instructions are "the system prompt"; later ones stay in place.
      if (messages.length === 0) systemParts.push(flattenOpenAIContent(message.content));
      else messages.push({ role: 'system', content: flattenOpenAIContent(message.content) });
    } else if (role === 'user') {
      messages.push({ role: 'user', content: flattenOpenAIContent(message.content) });
    } else if (role === 'assistant') {
      const out: RecordedMessage = { role: 'assistant', content: flattenOpenAIContent(message.content) };
      for (const field of ['reasoning_content', 'reasoning', 'reasoning_text']) {
        const value = message[field];
        if (typeof value === 'string' && value.length > 0) {
          out.reasoning = value;
          break;
        }
      }
      const toolCalls = asArray(message.tool_calls).filter(isRecord);
      if (toolCalls.length > 0) {
        out.toolCalls = toolCalls.map((call) => {
          const fn = isRecord(call.function) ? call.function : {};
          return {
            id: String(call.id ?? ''),
            name: String(fn.name ?? ''),
            arguments: parseMaybeJson(fn.arguments),
          };
        });
      }
      messages.push(out);
    } else if (role === 'tool') {
      messages.push({
        role: 'tool',
        content: flattenOpenAIContent(message.content),
        toolCallId: String(message.tool_call_id ?? ''),
      });
    }
  }
  const tools: RecordedTool[] = [];
  for (const tool of asArray(body.tools)) {
    if (!isRecord(tool) || !isRecord(tool.function)) continue;
    tools.push({
      name: String(tool.function.name ?? ''),
      description: String(tool.function.description ?? ''),
      parameters: tool.function.parameters,
    });
  }
  return { system: systemParts.length > 0 ? systemParts.join('\n\n') : undefined, tools, messages };
}

function flattenOpenAIContent(content: unknown): string {
  if (typeof content === 'string') return content;
  return asArray(content)
    .map((part) => {
      if (!isRecord(part)) return '';
      if (part.type === 'text') return String(part.text ?? '');
      if (part.type === 'image_url') return '[image]';
      return '';
    })
    .filter((text) => text.length > 0)
    .join('\n');
}

function normalizeAnthropic(body: Record<string, unknown>): Normalized {
  const system =
    typeof body.system === 'string' ? body.system : Array.isArray(body.system) ? flattenAnthropicText(body.system, '\n\n') : undefined;
  const messages: RecordedMessage[] = [];
  for (const message of asArray(body.messages)) {
    if (!isRecord(message)) continue;
    if (message.role === 'assistant') {
      messages.push(normalizeAnthropicAssistant(message.content));
    } else if (message.role === 'user') {
      messages.push(...normalizeAnthropicUser(message.content));
    } else if (message.role === 'system') {
      // Mid-conversation system messages (only sent when compat allows them).
      messages.push({ role: 'system', content: flattenAnthropicText(message.content, '\n') });
    }
  }
  const tools: RecordedTool[] = [];
  for (const tool of asArray(body.tools)) {
    if (!isRecord(tool) || typeof tool.name !== 'string') continue;
    tools.push({ name: tool.name, description: String(tool.description ?? ''), parameters: tool.input_schema });
  }
  return { system: system === '' ? undefined : system, tools, messages };
}

function normalizeAnthropicAssistant(content: unknown): RecordedMessage {
  if (typeof content === 'string') return { role: 'assistant', content };
  const text: string[] = [];
  const reasoning: string[] = [];
  const toolCalls: RecordedToolCall[] = [];
  for (const block of asArray(content)) {
    if (!isRecord(block)) continue;
    if (block.type === 'text') text.push(String(block.text ?? ''));
    else if (block.type === 'thinking') reasoning.push(String(block.thinking ?? ''));
    else if (block.type === 'tool_use') {
      toolCalls.push({ id: String(block.id ?? ''), name: String(block.name ?? ''), arguments: block.input });
    }
  }
  const out: RecordedMessage = { role: 'assistant', content: text.join('') };
  if (reasoning.length > 0) out.reasoning = reasoning.join('\n');
  if (toolCalls.length > 0) out.toolCalls = toolCalls;
  return out;
}

// One Anthropic user turn carries tool results and text side by side; split it into `tool`
// turns and `user` turns, in order, so both formats read the same.
function normalizeAnthropicUser(content: unknown): RecordedMessage[] {
  if (typeof content === 'string') return [{ role: 'user', content }];
  const out: RecordedMessage[] = [];
  let pending: string[] = [];
  const flushUser = (): void => {
    if (pending.length > 0) out.push({ role: 'user', content: pending.join('\n') });
    pending = [];
  };
  for (const block of asArray(content)) {
    if (!isRecord(block)) continue;
    if (block.type === 'tool_result') {
      flushUser();
      const result: RecordedMessage = {
        role: 'tool',
        content: typeof block.content === 'string' ? block.content : flattenAnthropicText(block.content, '\n'),
        toolCallId: String(block.tool_use_id ?? ''),
      };
      if (typeof block.is_error === 'boolean') result.isError = block.is_error;
      out.push(result);
    } else if (block.type === 'text') {
      pending.push(String(block.text ?? ''));
    } else if (block.type === 'image') {
      pending.push('[image]');
    }
  }
  flushUser();
  return out;
}

function flattenAnthropicText(blocks: unknown, separator: string): string {
  if (typeof blocks === 'string') return blocks;
  return asArray(blocks)
    .map((block) => {
      if (!isRecord(block)) return '';
      if (block.type === 'text') return String(block.text ?? '');
      if (block.type === 'image') return '[image]';
      return '';
    })
    .filter((text) => text.length > 0)
    .join(separator);
}

export function parseMaybeJson(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}
