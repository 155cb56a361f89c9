/**
 * Seed 000/004, `terminate` and sandbox-provided tools: a batch ends the response only when every
 * call in it asks to (a failed call never asks), and a `SandboxFactory.tools` list replaces the six
 * built-in tools, runs against the sandbox, can terminate, and shares the one tool namespace.
 */
import { expect, test } from 'vitest';
import {
  createReadTool,
  defineTool,
  init,
  useModel,
  useSandbox,
  useTool,
  virtualSandbox,
  defineSubagent,
  usePersistentState,
  useSubagent,
  type AgentTool,
  type Sandbox,
  type SandboxFactory,
} from '@flue/runtime';
import { useScriptedRuntime } from './support/scripted-runtime.ts';
import { dispatchAndFail, toolResult } from './seed-tools/helpers.ts';

const ctx = useScriptedRuntime();

const park = defineTool({ name: 'park', description: 'Parks the request.', run: () => ({ output: 'parked', terminate: true }) });
const hold = defineTool({ name: 'hold', description: 'Holds the request.', run: () => ({ output: 'held', terminate: true }) });
const note = defineTool({ name: 'note', description: 'Takes a note.', run: () => ({ output: 'noted' }) });
const broken = defineTool({
  name: 'broken',
  description: 'Always fails.',
  run: () => {
    throw new Error('out of order');
  },
});

/** An environment tool the factory contributes; it stops the turn like `park`. */
function stamp(): AgentTool {
  return {
    name: 'stamp',
    label: 'Stamp',
    description: 'Stamps the request and ends the turn.',
    parameters: { type: 'object', properties: {} },
    execute: async () => ({ content: [{ type: 'text', text: 'stamped' }], terminate: true }),
  };
}

/** The subagent names each call of the factory's `tools` was given. */
const factoryCalls: string[][] = [];

/** A virtual sandbox whose factory brings its own tools: `read`, `count_lines` and `stamp`. */
function toolingSandbox(): SandboxFactory {
  const base = virtualSandbox({ files: { '/workspace/notes.txt': 'one\ntwo\nthree\n' }, cwd: '/workspace' });
  return {
    createSandbox: (options) => base.createSandbox(options),
    tools: (sandbox, options) => {
      factoryCalls.push(Object.keys(options.subagents));
      return toolsOf(sandbox);
    },
  };
}

function toolsOf(sandbox: Sandbox): AgentTool[] {
  return [
    createReadTool(sandbox),
    {
      name: 'count_lines',
      label: 'Count lines',
      description: 'Counts the lines of a file.',
      parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
      async execute(_id, params) {
        const text = await sandbox.readFile(String(params.path));
        return { content: [{ type: 'text', text: String(text.split('\n').filter(Boolean).length) }] };
      },
    },
    stamp(),
  ];
}

function Desk() {
  useModel('anthropic/claude-haiku-4-5');
  useSandbox(toolingSandbox());
  useTool(park);
  useTool(hold);
  useTool(note);
  useTool(broken);
  return 'Handle requests.';
}

async function run(id: string, calls: string[], after: string[] = []) {
  await ctx.start([Desk]);
  ctx.server.script({ toolCalls: calls.map((name, i) => ({ id: `${id}_${i}`, name, arguments: {} })) }, ...after.map((text) => ({ text })));
  const handle = init(Desk, { id });
  return handle.read(await handle.dispatch('go'));
}

test('a batch where every call terminates (custom and sandbox tools alike) ends the response after it', async () => {
  const reply = await run('all', ['park', 'hold', 'stamp']);
  expect(reply.text).toBe('');
  expect(ctx.server.requests).toHaveLength(1);
});

test('a batch mixing a terminating call with an ordinary one goes on to the model, which sees every result', async () => {
  const reply = await run('mixed', ['park', 'note'], ['Parked and noted.']);
  expect(reply.text).toBe('Parked and noted.');
  expect(ctx.server.requests).toHaveLength(2);
  const next = ctx.server.requests[1]!;
  expect(toolResult(next, 'mixed_0').content).toBe('"parked"');
  expect(toolResult(next, 'mixed_1').content).toBe('"noted"');
});

test('a failed call never counts as terminating: terminate + throw goes on to the model', async () => {
  const reply = await run('failed', ['park', 'broken'], ['The other tool failed.']);
  expect(reply.text).toBe('The other tool failed.');
  expect(ctx.server.requests).toHaveLength(2);
  expect(toolResult(ctx.server.requests[1]!, 'failed_1')).toMatchObject({
    isError: true,
    content: expect.stringContaining('out of order'),
  });
});

test('SandboxFactory.tools replaces the six built-in tools; its tools act on the sandbox', async () => {
  await ctx.start([Desk]);
  ctx.server.script(
    {
      toolCalls: [
        { id: 'r', name: 'read', arguments: { path: 'notes.txt' } },
        { id: 'c', name: 'count_lines', arguments: { path: 'notes.txt' } },
      ],
    },
    { text: 'Three lines.' },
  );
  const handle = init(Desk, { id: 'factory' });
  expect((await handle.read(await handle.dispatch('Count the notes.'))).text).toBe('Three lines.');
  const offered = ctx.server.requests[0]!.tools.map((t) => t.name).sort();
  expect(offered).toEqual(['broken', 'count_lines', 'hold', 'note', 'park', 'read', 'stamp', 'task']);
  expect(ctx.server.requests[0]!.tools.find((t) => t.name === 'count_lines')!.parameters).toEqual({
    type: 'object',
    properties: { path: { type: 'string' } },
    required: ['path'],
  });
  const next = ctx.server.requests[1]!;
  expect(toolResult(next, 'r').content).toContain('two');
  expect(toolResult(next, 'c')).toMatchObject({ content: '3' });
});

test('a useTool tool named like a sandbox-provided tool is a name conflict', async () => {
  function Clash() {
    useModel('anthropic/claude-haiku-4-5');
    useSandbox(toolingSandbox());
    useTool(defineTool({ name: 'count_lines', description: 'Another counter.', run: () => '0' }));
    return 'x';
  }
  await ctx.start([Clash]);
  expect((await dispatchAndFail(Clash, 'clash', 'go')).message).toContain('Duplicate tool name "count_lines".');
  expect(ctx.server.requests).toHaveLength(0);
});

test("SandboxFactory.tools is given the render's subagents by name, and asked again when they change", async () => {
  const scout = defineSubagent({ name: 'scout', description: 'Scouts.', agent: () => 'Scout.' });
  function Team() {
    useModel('anthropic/claude-haiku-4-5');
    useSandbox(toolingSandbox());
    useSubagent(scout);
    const [enlisted, setEnlisted] = usePersistentState('enlisted', false);
    if (enlisted) useSubagent({ ...scout, name: 'auditor' });
    useTool({ name: 'enlist', description: 'Enlists an auditor.', run: () => (setEnlisted(true), 'enlisted') });
    return 'Team.';
  }
  factoryCalls.length = 0;
  await ctx.start([Team]);
  ctx.server.script(
    { toolCalls: [{ name: 'count_lines', arguments: { path: 'notes.txt' } }] },
    { toolCalls: [{ name: 'enlist', arguments: {} }] },
    { text: 'Ready.' },
  );
  const handle = init(Team, { id: 'team' });
  expect((await handle.read(await handle.dispatch('Count, then enlist.'))).text).toBe('Ready.');
  // Once for the first two turns (same sandbox, same subagents), again once the auditor joined.
  expect(factoryCalls).toEqual([['scout'], ['scout', 'auditor']]);
  expect(ctx.server.requests[2]!.tools.map((t) => t.name)).toContain('count_lines');
});
