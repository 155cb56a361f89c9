import { env, runInDurableObject } from 'cloudflare:test';
import { afterEach, expect, test } from 'vitest';
import { init } from '@flue/runtime';
import { childConversations } from '@flue/runtime/testing';
import { ECHO_LANE, Echo } from './agents.ts';
import { laneRequests, resetLane, scriptLane } from './lanes.ts';
import './worker.ts';

afterEach(async () => resetLane(ECHO_LANE));

test('a task delegation inside a Durable Object records the child conversation and returns its final text', async () => {
  await scriptLane(
    ECHO_LANE,
    { toolCalls: [{ id: 'call_task_do', name: 'task', arguments: { agent: 'researcher', prompt: 'Look up k7.' } }] },
    { toolCalls: [{ name: 'lookup', arguments: { key: 'k7' } }] }, // the delegate's own conversation
    { text: 'k7 is value-of-k7.' },
    { text: 'The researcher found value-of-k7.' },
  );
  const handle = init(Echo, { id: 'delegate-1' });
  const reply = await handle.read(await handle.dispatch('What is k7?'));
  expect(reply.text).toBe('The researcher found value-of-k7.');

  const requests = await laneRequests(ECHO_LANE);
  expect(requests).toHaveLength(4);
  expect(requests[0]!.system).toContain('- **researcher** — Looks keys up and reports.');
  expect(requests[1]!.system).toContain('You research keys.');
  expect(requests[1]!.messages.map((m) => m.content)).toEqual(['Look up k7.']);
  expect(requests[3]!.messages.find((m) => m.role === 'tool' && m.toolCallId === 'call_task_do')).toMatchObject({
    content: 'k7 is value-of-k7.',
  });

  // Inspection through the runtime (one RPC to the object) shows the child's whole transcript.
  const children = await childConversations(Echo, 'delegate-1');
  expect(children).toHaveLength(1);
  expect(children[0]).toMatchObject({ agent: 'researcher', toolCallId: 'call_task_do', via: 'conversation' });
  expect(children[0]!.snapshot.messages.map((m) => m.parts.map((p) => (p.type === 'text' ? p.text : p.type === 'dynamic-tool' ? p.toolName : p.type)))).toEqual([
    ['Look up k7.'],
    ['lookup', 'k7 is value-of-k7.'],
  ]);

  // In the object's SQLite: the child is its own stream, linked from the parent's stream.
  const stub = (env as unknown as { FLUE_ECHO_AGENT: DurableObjectNamespace }).FLUE_ECHO_AGENT.getByName('delegate-1');
  const streams = await runInDurableObject(stub, (_instance, state) => state.storage.sql.exec('SELECT stream FROM flue_streams ORDER BY stream').toArray());
  expect(streams.map((row) => row.stream)).toEqual(['agents/Echo/delegate-1', expect.stringMatching(/^tasks\/agents\/Echo\/delegate-1\/msg_[0-9A-Z]+\/call_task_do$/)]);
});
