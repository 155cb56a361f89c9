/**
 * The runtime event surface on Node: one submission whose prompt has a tool-calling turn emits
 * the published order of events, with the fields observers rely on.
 */
import { expect, test } from 'vitest';
import * as v from 'valibot';
import { IMAGE_DATA_OMITTED, defineTool, init, observe, useModel, useTool, type FlueEvent } from '@flue/runtime';
import { useScriptedRuntime } from './support/scripted-runtime.ts';

const ctx = useScriptedRuntime();

const seen: string[] = [];
const lookup = defineTool({
  name: 'lookup',
  description: 'Looks a word up.',
  input: v.object({ word: v.string() }),
  async run({ data, log, toolCallId }) {
    seen.push(toolCallId);
    log.info('looking', { word: data.word });
    return { output: { word: data.word, found: true } };
  },
});

let release: () => void = () => {};
const hold = defineTool({
  name: 'hold',
  description: 'Waits until released.',
  run: () => new Promise<string>((resolve) => (release = () => resolve('released'))),
});

function Looker() {
  useModel('anthropic/claude-haiku-4-5');
  useTool(lookup);
  useTool(hold);
  return 'Look words up.';
}

test('one submission with a tool-calling turn: the published event order and fields', async () => {
  await ctx.start([Looker]);
  const events: FlueEvent[] = [];
  const stop = observe((event) => {
    if (event.instanceId === 'ev1') events.push(event);
  });
  ctx.server.script(
    { reasoning: ['Which', ' word?'], text: 'Let me look.', toolCalls: [{ id: 'call_lk', name: 'lookup', arguments: { word: 'flue' } }] },
    { text: 'Found.' },
  );
  const handle = init(Looker, { id: 'ev1' });
  const receipt = await handle.dispatch('look up flue');
  expect((await handle.read(receipt)).text).toContain('Found.');
  stop();

  // Deltas interleave while a message streams; the order around them is the published one.
  const order = events.map((e) => e.type).filter((type) => !/_delta$|^thinking_/.test(type));
  expect(order).toEqual([
    'submission_queued',
    'submission_running',
    'operation_start',
    'agent_start',
    'message_start', // the user message
    'message_end',
    'turn_start',
    'turn_request',
    'message_start', // the assistant message
    'turn',
    'message_end',
    'tool_start',
    'log',
    'message_start', // the tool-result message
    'message_end',
    'tool',
    'turn_messages',
    'turn_start',
    'turn_request',
    'message_start',
    'turn',
    'message_end',
    'turn_messages',
    'agent_end',
    'operation',
    'idle',
    'submission_settled',
  ]);
  const of = (type: string) => events.filter((e) => e.type === type);
  const first = <T = Record<string, unknown>>(type: string) => of(type)[0] as unknown as T & FlueEvent;

  // Envelope: one submission, increasing indexes, session correlation on session events.
  const indexes = events.map((e) => e.eventIndex);
  expect(indexes).toEqual([...indexes].sort((a, b) => a - b));
  expect(new Set(events.map((e) => e.submissionId))).toEqual(new Set([receipt.submissionId]));
  const turnStart = first<{ turnId: string }>('turn_start');
  expect(first('tool_start')).toMatchObject({
    toolName: 'lookup',
    toolCallId: 'call_lk',
    args: { word: 'flue' },
    session: 'default',
    operationId: receipt.submissionId,
    turnId: turnStart.turnId,
    conversationId: expect.any(String),
  });
  // The id on tool_start/tool is the call's ToolContext.toolCallId.
  expect(seen).toEqual(['call_lk']);
  expect(of('tool').map((e) => e.toolCallId)).toEqual(seen);
  expect(first('tool')).toMatchObject({
    toolName: 'lookup',
    isError: false,
    durationMs: expect.any(Number),
    effectiveResult: { word: 'flue', found: true },
  });
  expect(first('log')).toMatchObject({ attributes: { tool: 'lookup', toolCallId: seen[0] } });

  expect(first('turn_request')).toMatchObject({
    purpose: 'agent',
    request: {
      providerId: 'anthropic',
      requestedModel: 'claude-haiku-4-5',
      input: { messages: expect.any(Array), tools: expect.any(Array) },
    },
  });
  expect(first('turn')).toMatchObject({
    turnId: turnStart.turnId,
    purpose: 'agent',
    isError: false,
    durationMs: expect.any(Number),
    response: { finishReason: 'toolUse', usage: expect.objectContaining({ input: expect.any(Number) }) },
  });
  const boundary = first<{ message: { role: string }; toolResults: { toolCallId: string }[] }>('turn_messages');
  expect(boundary.message.role).toBe('assistant');
  expect(boundary.toolResults.map((m) => m.toolCallId)).toEqual(['call_lk']);
  expect(of('turn_messages')[1]).toMatchObject({ toolResults: [] });
  expect(
    of('text_delta')
      .map((e) => e.text)
      .join(''),
  ).toBe('Let me look.Found.');
  // The reasoning block streams between the assistant message's start and its turn.
  const streamed = events.map((e) => e.type).filter((type) => /^thinking_/.test(type));
  expect(streamed).toEqual(['thinking_start', 'thinking_delta', 'thinking_delta', 'thinking_end']);
  expect(first('thinking_end')).toMatchObject({ contentIndex: 0, content: 'Which word?', turnId: turnStart.turnId });
  const at = (type: string) => events.findIndex((e) => e.type === type);
  expect(at('thinking_start')).toBeGreaterThan(events.findIndex((e) => e.type === 'message_start' && e.turnId === turnStart.turnId));
  expect(at('thinking_end')).toBeLessThan(at('turn'));
  expect(of('toolcall_delta').length).toBeGreaterThan(0);
  expect(of('toolcall_delta').every((e) => e.toolCallId === 'call_lk' && e.toolName === 'lookup')).toBe(true);
  expect(first('operation')).toMatchObject({ operationId: receipt.submissionId, operationKind: 'prompt', isError: false });
  expect(first<{ messages: unknown[] }>('agent_end').messages).toHaveLength(4); // user, assistant, tool result, assistant
  expect(first('submission_settled')).toMatchObject({ outcome: 'completed' });
  expect(IMAGE_DATA_OMITTED).toBe('[image data omitted from event]');
});

test('a delivery that joins a busy conversation: its message enters at a turn boundary, with its own queued and settled but no running', async () => {
  await ctx.start([Looker]);
  const events: FlueEvent[] = [];
  let held: () => void = () => {};
  const holding = new Promise<void>((resolve) => (held = resolve));
  const stop = observe((event) => {
    if (event.instanceId !== 'ev2') return;
    events.push(event);
    if (event.type === 'tool_start') held();
  });
  ctx.server.script({ toolCalls: [{ id: 'call_hold', name: 'hold', arguments: {} }] }, { text: 'Both answered.' });
  const handle = init(Looker, { id: 'ev2' });
  const first = await handle.dispatch('first');
  await holding;
  const second = await handle.dispatch('second');
  release();
  await handle.read(first);
  await handle.read(second);
  stop();
  const lifecycle = (id: string) => events.filter((e) => e.submissionId === id && e.type.startsWith('submission_')).map((e) => e.type);
  expect(lifecycle(first.submissionId)).toEqual(['submission_queued', 'submission_running', 'submission_settled']);
  expect(lifecycle(second.submissionId)).toEqual(['submission_queued', 'submission_settled']);
  const users = events.filter((e) => e.type === 'message_start' && (e.message as { role: string }).role === 'user');
  expect(users.map((e) => (e.message as { content: { text: string }[] }).content[0]!.text)).toEqual(['first', 'second']);
  // The joined message enters after the tool batch's boundary, before the next turn starts.
  const at = (event: FlueEvent) => events.indexOf(event);
  const boundary = events.find((e) => e.type === 'turn_messages')!;
  const nextTurn = events.filter((e) => e.type === 'turn_start')[1]!;
  expect(at(users[1]!)).toBeGreaterThan(at(boundary));
  expect(at(users[1]!)).toBeLessThan(at(nextTurn));
});
