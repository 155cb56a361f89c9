import { expect, test } from 'vitest';
import { init } from '@flue/runtime';
import { WORKSPACE_LANE, Workspace } from './agents.ts';
import { laneRequests, resetLane, scriptLane } from './lanes.ts';
import './worker.ts';

test('the virtual sandbox and its built-in tools work inside a Durable Object', async () => {
  await resetLane(WORKSPACE_LANE);
  await scriptLane(
    WORKSPACE_LANE,
    { toolCalls: [{ name: 'write', arguments: { path: 'notes/todo.txt', content: 'ship it' } }] },
    {
      toolCalls: [
        { name: 'bash', arguments: { command: 'cat notes/todo.txt; ls' } },
        { name: 'glob', arguments: { pattern: '*.md' } },
      ],
    },
    { text: 'Written and checked.' },
  );
  const handle = init(Workspace, { id: 'ws-1' });
  const reply = await handle.read(await handle.dispatch('Write a todo.'));
  expect(reply.text).toBe('Written and checked.');
  const requests = await laneRequests(WORKSPACE_LANE);
  expect(requests[0]!.tools.map((t) => t.name).sort()).toEqual(['bash', 'edit', 'glob', 'grep', 'read', 'task', 'write']);
  const results = requests[2]!.messages.filter((m) => m.role === 'tool');
  expect(results.at(-2)!.content).toContain('ship it');
  expect(results.at(-2)!.content).toContain('notes');
  expect(results.at(-1)!.content).toContain('README.md');
  await resetLane(WORKSPACE_LANE);
});
