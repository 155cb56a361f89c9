import { env, runInDurableObject } from 'cloudflare:test';
import { afterEach, expect, test } from 'vitest';
import { init, observe, type FlueEvent } from '@flue/runtime';
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
  expect(
    children[0]!.snapshot.messages.map((m) =>
      m.parts.map((p) => (p.type === 'text' ? p.text : p.type === 'dynamic-tool' ? p.toolName : p.type)),
    ),
  ).toEqual([['Look up k7.'], ['lookup', 'k7 is value-of-k7.']]);

  // In the object's SQLite: the child is its own stream, linked from the parent's stream.
  const stub = (env as unknown as { FLUE_ECHO_AGENT: DurableObjectNamespace }).FLUE_ECHO_AGENT.getByName('delegate-1');
  const streams = await runInDurableObject(stub, (_instance, state) =>
    state.storage.sql.exec('SELECT stream FROM flue_streams ORDER BY stream').toArray(),
  );
  expect(streams.map((row) => row.stream)).toEqual([
    'agents/Echo/delegate-1',
    expect.stringMatching(/^tasks\/agents\/Echo\/delegate-1\/msg_[0-9A-Z]+\/call_task_do$/),
  ]);
});

const pixel = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52]);
const pixelBase64 = btoa(String.fromCharCode(...pixel));

test('inside a Durable Object a task runs at its cwd in the durable sandbox and gets the forwarded image; task events are published', async () => {
  const events: FlueEvent[] = [];
  const stop = observe((event) => {
    if (event.type === 'task_start' || event.type === 'task') events.push(event);
  });
  const handle = init(Echo, { id: 'delegate-ws-1' });
  await scriptLane(ECHO_LANE, { text: 'A picture.' });
  const shown = await handle.dispatch({
    message: { kind: 'user', body: 'Look.', attachments: [{ type: 'image', data: pixelBase64, mimeType: 'image/png' }] },
  });
  await handle.read(shown);
  const imageId = `att_dispatch_${shown.submissionId}_0`;
  await scriptLane(
    ECHO_LANE,
    {
      toolCalls: [
        {
          id: 'call_ws',
          name: 'task',
          arguments: { agent: 'researcher', prompt: 'Catalogue.', cwd: 'pkg', attachments: [{ id: imageId }] },
        },
      ],
    },
    { toolCalls: [{ name: 'bash', arguments: { command: 'pwd && cat notes.txt' } }] }, // the child, at /workspace/pkg
    { text: 'Catalogued next to the notes.' },
    { text: 'Done.' },
  );
  try {
    expect((await handle.read(await handle.dispatch('Catalogue the picture.'))).text).toBe('Done.');
  } finally {
    stop();
  }
  const all = await laneRequests(ECHO_LANE);
  expect(all).toHaveLength(5);
  // The model saw the image's id in the manifest after the user's text.
  expect(JSON.stringify(all[0]!.body.messages.at(-1))).toContain(`<image id=\\"${imageId}\\" mimeType=\\"image/png\\" />`);
  const requests = all.slice(1);
  // The child's first user message carries the image (OpenAI wire format: an image_url part).
  const childFirst = requests[1]!.body.messages.find((m: { role: string }) => m.role === 'user') as {
    content: { type: string; image_url?: { url: string } }[];
  };
  expect(childFirst.content.find((p) => p.type === 'image_url')!.image_url!.url).toBe(`data:image/png;base64,${pixelBase64}`);
  const shell = requests[2]!.messages.filter((m) => m.role === 'tool').at(-1)!;
  expect(shell.content).toContain('/workspace/pkg');
  expect(shell.content).toContain('notes of pkg');
  expect(requests[3]!.messages.find((m) => m.role === 'tool' && m.toolCallId === 'call_ws')).toMatchObject({
    content: 'Catalogued next to the notes.',
  });

  const [child] = await childConversations(Echo, 'delegate-ws-1');
  expect(child).toMatchObject({ agent: 'researcher', toolCallId: 'call_ws', session: expect.stringMatching(/^task:msg_\w+\/call_ws$/) });
  expect(child!.snapshot.messages[0]!.parts.find((p) => p.type === 'file')).toMatchObject({ id: imageId, mediaType: 'image/png' });
  // Observers registered in this isolate see the object's task events (the test shares its isolate).
  expect(events.map((e) => [e.type, e.taskId, e.cwd, e.session])).toEqual([
    ['task_start', 'call_ws', '/workspace/pkg', child!.session],
    ['task', 'call_ws', undefined, child!.session],
  ]);
});
