/**
 * Interop test support: the scripted order conversation both hosts' tests run (the agent is
 * `Support` in node-sdk.test.ts and in fixtures/cloudflare-app), and what the SDK must see of it.
 */
import { expect } from 'vitest';
import * as v from 'valibot';
import { useDataWriter, useModel, useResponseStart, useTool } from '@flue/runtime';
import type { AgentSendResult, ConversationStreamChunk, FlueClient, FlueConversationSnapshot } from '@flue/sdk';
import type { ScriptedResponse } from '@flue/runtime/testing';
import { replyMessage } from './observation.ts';

/** The agent of the order conversation (fixtures/cloudflare-app/src/agents/support.ts is its twin). */
export function Support() {
  useModel('anthropic/claude-haiku-4-5');
  const progress = useDataWriter('progress');
  useResponseStart(() => ({ channel: 'web' }));
  useTool({
    name: 'lookup_order',
    description: 'Looks up an order by id.',
    input: v.object({ orderId: v.string() }),
    async run({ data, log }) {
      progress({ step: 'lookup', orderId: data.orderId });
      log.info('order found', { orderId: data.orderId });
      return { output: { orderId: data.orderId, status: 'shipped' } };
    },
  });
  return 'You help with orders. Be brief.';
}

export const REASONING = 'Need the order.';
export const FIRST_TEXT = 'Let me check.';
/** The second step streams slowly, so a test can act while the response is in flight. */
export const FINAL_CHUNKS =
  'Your order A-1 has shipped and should arrive within two to three business days, tracking to follow by mail.'.split(/(?<= )/);
export const FINAL_TEXT = FINAL_CHUNKS.join('');
/** Every text delta of the reply, concatenated. */
export const ALL_TEXT = FIRST_TEXT + FINAL_TEXT;
/** What `read()` returns as `text` (text parts joined with a blank line). */
export const REPLY_TEXT = `${FIRST_TEXT}\n\n${FINAL_TEXT}`;
export const REPLY_DATA = { progress: [{ step: 'lookup', orderId: 'A-1' }] };
export const REPLY_METADATA = { channel: 'web' };
/** The tool's log lines, carried by its progress chunk (never in the parts, the result chunk or reply data). */
export const TOOL_LOGS = [{ level: 'info', message: 'order found', attributes: { orderId: 'A-1' }, timestamp: expect.any(String) }];

/**
 * The SDK delivered the tool's progress as a chunk of its own — a repeated `tool-input` for the
 * call, carrying `progress` — before the call's result chunk, which carries no log lines.
 */
export function expectToolProgress(chunks: ConversationStreamChunk[]): void {
  const progress = chunks.findIndex((c) => c.type === 'tool-input' && 'progress' in c);
  const result = chunks.findIndex((c) => c.type === 'tool-output');
  expect(chunks[progress]).toMatchObject({ type: 'tool-input', toolCallId: 'call_order', toolName: 'lookup_order', progress: TOOL_LOGS });
  expect(progress).toBeGreaterThan(chunks.findIndex((c) => c.type === 'tool-input' && !('progress' in c)));
  expect(progress).toBeLessThan(result);
  expect(chunks[result]).toMatchObject({ toolCallId: 'call_order' });
  expect(chunks[result]).not.toHaveProperty('logs');
  expect(chunks[result]).not.toHaveProperty('progress');
}

/** Step 1: reasoning, text and a tool call; step 2: the final text, one chunk every `delayMs`. */
export function orderReplySteps(delayMs = 120): ScriptedResponse[] {
  return [
    { reasoning: REASONING, text: FIRST_TEXT, toolCalls: [{ id: 'call_order', name: 'lookup_order', arguments: { orderId: 'A-1' } }] },
    { text: FINAL_CHUNKS, chunkDelayMs: delayMs },
  ];
}

/** The reply message the scripted response must produce, as history reduces it. */
export function expectOrderReply(snapshot: FlueConversationSnapshot, submissionId: string): void {
  const reply = replyMessage(snapshot.messages, submissionId)!;
  expect(reply).toMatchObject({ role: 'assistant', purpose: 'assistant', display: 'visible', submissionId, metadata: REPLY_METADATA });
  expect(reply.parts).toEqual([
    { type: 'reasoning', text: REASONING, state: 'done' },
    { type: 'text', text: FIRST_TEXT, state: 'done' },
    {
      type: 'dynamic-tool',
      toolName: 'lookup_order',
      toolCallId: 'call_order',
      state: 'output-available',
      input: { orderId: 'A-1' },
      output: { orderId: 'A-1', status: 'shipped' },
      durationMs: expect.any(Number),
    },
    { type: 'data-progress', data: REPLY_DATA.progress[0] },
    { type: 'text', text: FINAL_TEXT, state: 'done' },
  ]);
}

/** Every conversation chunk from the stream origin, read by the SDK itself (after settlement). */
export async function allChunks(client: FlueClient, admission: AgentSendResult): Promise<ConversationStreamChunk[]> {
  const chunks: ConversationStreamChunk[] = [];
  await client.wait({ ...admission, offset: '-1' }, { onEvent: (chunk) => void chunks.push(chunk) });
  return chunks;
}

export function position(chunk: ConversationStreamChunk): { batch: number; index: number } {
  if (chunk.type === 'stream-checkpoint') throw new Error('the SDK surfaced a stream-checkpoint to onEvent');
  return chunk.position;
}

/** A history snapshot as the observer's state: what observe() must converge to. */
export function stateOf(snapshot: FlueConversationSnapshot) {
  return { conversationId: snapshot.conversationId, messages: snapshot.messages, settlements: snapshot.settlements };
}
