/**
 * What Workers AI text-generation models return, folded into text, tool calls and usage. Both
 * documented shapes are read: the native one (`response`, `tool_calls: [{ name, arguments }]`) and
 * the OpenAI-compatible one (`choices[0].message` / `choices[0].delta`), streamed or not.
 */
import { parseToolCallArguments } from '@earendil-works/pi-ai';
import type { ToolCall } from '@earendil-works/pi-ai';

export interface WorkersAIUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
}

interface PendingToolCall {
  id?: string;
  name: string;
  arguments: string;
}

/** Accumulates one response from its chunks (or from one whole result). */
export class WorkersAIResponse {
  private readonly calls: PendingToolCall[] = [];
  usage: WorkersAIUsage | undefined;
  finishReason: string | undefined;

  /**
   * Reads one chunk or whole result and returns the text it adds. OpenAI-style streamed tool calls
   * arrive in pieces keyed by `index`; native ones arrive whole.
   */
  add(value: unknown): string {
    if (!isRecord(value)) return '';
    let text = '';
    if (typeof value.response === 'string') text += value.response;
    // JSON-mode results can carry a parsed object as the response.
    else if (isRecord(value.response)) text += JSON.stringify(value.response);
    this.addToolCalls(value.tool_calls);
    const choice = Array.isArray(value.choices) && isRecord(value.choices[0]) ? value.choices[0] : undefined;
    if (choice !== undefined) {
      for (const part of [choice.message, choice.delta]) {
        if (!isRecord(part)) continue;
        if (typeof part.content === 'string') text += part.content;
        this.addToolCalls(part.tool_calls);
      }
      if (typeof choice.finish_reason === 'string') this.finishReason = choice.finish_reason;
    }
    if (isRecord(value.usage)) this.usage = value.usage as WorkersAIUsage;
    return text;
  }

  toolCalls(): ToolCall[] {
    return this.calls
      .filter((call) => call.name !== '')
      .map((call, position) => ({
        type: 'toolCall' as const,
        id: call.id ?? `call_${position}_${Math.random().toString(36).slice(2, 10)}`,
        name: call.name,
        ...parseToolCallArguments(call.arguments === '' ? '{}' : call.arguments),
      }));
  }

  private addToolCalls(value: unknown): void {
    if (!Array.isArray(value)) return;
    for (const entry of value) {
      if (!isRecord(entry)) continue;
      const fn = isRecord(entry.function) ? entry.function : undefined;
      const name = typeof (fn?.name ?? entry.name) === 'string' ? String(fn?.name ?? entry.name) : '';
      const args = argumentsText(fn !== undefined ? fn.arguments : entry.arguments);
      const id = typeof entry.id === 'string' && entry.id !== '' ? entry.id : undefined;
      const existing = typeof entry.index === 'number' ? this.calls[entry.index] : undefined;
      if (existing !== undefined && fn !== undefined) {
        // A continuation piece of a streamed call: names and ids come once, arguments in pieces.
        if (name !== '') existing.name = name;
        if (id !== undefined) existing.id = id;
        existing.arguments += args;
        continue;
      }
      const call = { ...(id !== undefined ? { id } : {}), name, arguments: args };
      if (typeof entry.index === 'number') this.calls[entry.index] = call;
      else this.calls.push(call);
    }
  }
}

function argumentsText(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The payloads of a server-sent-event byte stream (`data: …` lines), up to `data: [DONE]`.
 * `read` is the caller's guarded read, so idle timeouts and aborts stay the caller's policy.
 */
export async function* sseData(read: () => Promise<ReadableStreamReadResult<Uint8Array>>): AsyncGenerator<unknown> {
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await read();
    buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
    const lines = buffer.split(/\r?\n/);
    buffer = done ? '' : lines.pop()!;
    for (const line of lines) {
      if (!line.startsWith('data:')) continue;
      const payload = line.slice(5).trim();
      if (payload === '') continue;
      if (payload === '[DONE]') return;
      try {
        yield JSON.parse(payload);
      } catch {
        throw new SyntaxError(`a stream event is not JSON: ${payload.slice(0, 200)}`);
      }
    }
    if (done) return;
  }
}
