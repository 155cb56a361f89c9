/**
 * The model in tests: a few rules instead of an LLM, so every reply is known in advance. It sees
 * what a real model would (instructions, tools, messages) and answers over the provider's real
 * wire format, so the agent's tools run for real.
 *
 * - a question about the time, when current_time is offered → calls current_time
 * - a tool result → reports it
 * - anything else → echoes
 */
import type { RecordedRequest, ScriptedResponse } from '@flue/runtime/testing';

export function scriptedModel(request: RecordedRequest): ScriptedResponse {
  const last = request.messages.at(-1);
  const content = last?.content ?? '';
  if (last?.role === 'tool') {
    const { timeZone, now } = JSON.parse(content) as { timeZone: string; now: string };
    return { text: `In ${timeZone} it is ${now}.` };
  }
  if (/\btime\b/i.test(content) && request.tools.some((tool) => tool.name === 'current_time')) {
    const timeZone = /\btokyo\b/i.test(content) ? 'Asia/Tokyo' : 'UTC';
    return { toolCalls: [{ name: 'current_time', arguments: { timeZone } }] };
  }
  return { text: `You said: ${content}` };
}
