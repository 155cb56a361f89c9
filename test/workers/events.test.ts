/**
 * The runtime event surface inside a Durable Object: one submission whose prompt has a
 * tool-calling turn emits the published order, and `toolCallId` is the tool's own id.
 */
import { afterEach, expect, test } from 'vitest';
import { type FlueEvent, init, observe } from '@flue/runtime';
import { ECHO_LANE, Echo } from './agents.ts';
import { resetLane, scriptLane } from './lanes.ts';
import './worker.ts';

afterEach(async () => resetLane(ECHO_LANE));

test('one submission with a tool-calling turn: the published event order, with the call id the tool saw', async () => {
  const events: FlueEvent[] = [];
  const stop = observe((event) => {
    if (event.instanceId === 'events-1') events.push(event);
  });
  try {
    await scriptLane(ECHO_LANE, { toolCalls: [{ id: 'call_ev_w', name: 'lookup', arguments: { key: 'k1' } }] }, { text: 'k1 is known.' });
    const handle = init(Echo, { id: 'events-1' });
    const receipt = await handle.dispatch('What is k1?');
    expect((await handle.read(receipt)).text).toBe('k1 is known.');
  } finally {
    stop();
  }
  const order = events.map((e) => e.type).filter((type) => !/_delta$|^thinking_|^log$/.test(type));
  expect(order).toEqual([
    'submission_queued',
    'submission_running',
    'operation_start',
    'agent_start',
    'message_start',
    'message_end',
    'turn_start',
    'turn_request',
    'message_start',
    'turn',
    'message_end',
    'tool_start',
    'message_start',
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
  const toolStart = events.find((e) => e.type === 'tool_start')!;
  const tool = events.find((e) => e.type === 'tool')!;
  expect(toolStart).toMatchObject({ toolName: 'lookup', toolCallId: 'call_ev_w', args: { key: 'k1' }, session: 'default' });
  expect(tool).toMatchObject({ toolName: 'lookup', toolCallId: 'call_ev_w', isError: false });
  expect(
    events
      .filter((e) => e.type === 'text_delta')
      .map((e) => e.text)
      .join(''),
  ).toBe('k1 is known.');
  expect(new Set(events.map((e) => e.submissionId))).toEqual(new Set([events[0]!.submissionId]));
});
