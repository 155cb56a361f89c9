/**
 * The same one-tool chat agent as the Flue side (bench/node/wrangler-cpu-project.ts), written the
 * way a Workers user would with the Cloudflare Agents SDK: an `AIChatAgent` whose
 * `onChatMessage()` streams through the AI SDK (`streamText`, `@ai-sdk/anthropic`), with one
 * server-side `lookup` tool and the same system prompt. Messages are persisted by the SDK.
 */
import { AIChatAgent } from '@cloudflare/ai-chat';
import { createAnthropic } from '@ai-sdk/anthropic';
import { convertToModelMessages, isStepCount, streamText, tool } from 'ai';
import { z } from 'zod';
import { SYSTEM_PROMPT, TOOL_DESCRIPTION, TOOL_NAME, toolOutput } from '../node/side-by-side-script.ts';

export interface Env {
  /** The scripted model server, e.g. `http://127.0.0.1:PORT`. */
  MODEL_URL: string;
  ChatAgent: DurableObjectNamespace<ChatAgent>;
}

export class ChatAgent extends AIChatAgent<Env> {
  override async onChatMessage() {
    const anthropic = createAnthropic({ baseURL: `${this.env.MODEL_URL}/v1`, apiKey: 'scripted' });
    const result = streamText({
      model: anthropic('claude-haiku-4-5'),
      system: SYSTEM_PROMPT,
      messages: await convertToModelMessages(this.messages),
      tools: {
        [TOOL_NAME]: tool({
          description: TOOL_DESCRIPTION,
          inputSchema: z.object({ key: z.string() }),
          execute: async ({ key }) => toolOutput(key),
        }),
      },
      stopWhen: isStepCount(5),
    });
    return result.toUIMessageStreamResponse();
  }

  /**
   * One exchange from the server side, what Flue's `dispatch()` then `read()` do: persist the user
   * message, run the chat turn (model call, tool, model call), answer the reply text.
   */
  async turn(text: string): Promise<string> {
    const result = await this.saveMessages((messages) => [
      ...messages,
      { id: crypto.randomUUID(), role: 'user', parts: [{ type: 'text', text }] },
    ]);
    if (result.status !== 'completed') throw new Error(`agents: the chat turn ended ${result.status}: ${String(result.error ?? '')}`);
    const last = this.messages.at(-1);
    if (last?.role !== 'assistant') throw new Error('agents: no assistant message after the turn');
    return last.parts.map((part) => (part.type === 'text' ? part.text : '')).join('');
  }
}
