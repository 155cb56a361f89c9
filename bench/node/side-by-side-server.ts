/**
 * The scripted model server of the side-by-side benchmark: our `startScriptedModelServer`
 * (Anthropic Messages over SSE, answering instantly) with a stateless script, so any number of
 * conversations can run at once: after a user `question <key>` the model calls `lookup`, after the
 * tool result it streams the 200-chunk reply quoting the value it found in that result.
 */
import { startScriptedModelServer } from '@flue/runtime/testing';
import type { RecordedRequest, ScriptedModelServer, ScriptedResponse } from '@flue/runtime/testing';
import {
  SLOW_KEY_PREFIX,
  SLOW_STREAM_MS,
  TEXT_CHUNKS,
  TOOL_NAME,
  keyOfQuestion,
  replyChunks,
  valueInToolResult,
} from './side-by-side-script.ts';

export function scriptedReply(request: RecordedRequest): ScriptedResponse {
  const messages = request.messages;
  let asked = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role === 'user' && keyOfQuestion(messages[i]!.content) !== undefined) {
      asked = i;
      break;
    }
  }
  if (asked < 0) return { text: 'scripted model: no question found in the request' };
  const key = keyOfQuestion(messages[asked]!.content)!;
  const result = messages.slice(asked + 1).find((message) => message.role === 'tool');
  if (result === undefined) return { toolCalls: [{ name: TOOL_NAME, arguments: { key } }] };
  const value = valueInToolResult(result.content);
  if (value === undefined) return { text: `scripted model: the tool result carries no value: ${result.content.slice(0, 200)}` };
  // A model that takes its time: the object waits on this stream (bench/node/wrangler-cpu.ts prices that wait).
  if (key.startsWith(SLOW_KEY_PREFIX)) return { text: replyChunks(value), chunkDelayMs: SLOW_STREAM_MS / TEXT_CHUNKS };
  return { text: replyChunks(value) };
}

export function startSideBySideServer(): Promise<ScriptedModelServer> {
  return startScriptedModelServer({ fallback: scriptedReply });
}
