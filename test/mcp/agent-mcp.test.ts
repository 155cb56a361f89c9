import { afterAll, beforeAll, expect, test } from 'vitest';
import { AgentRunError, createMcpConnection, defineMcpConnection, init, useMcpConnection, useModel, useTool } from '@flue/runtime';
import { useScriptedRuntime } from '../support/scripted-runtime.ts';
import { deadUrl, simpleTool, startMcpTestServer, toolServer, type TestServer } from './mcp-test-server.ts';

const ctx = useScriptedRuntime();
let mcp: TestServer;
let down: string;
let token = 'first-token';

beforeAll(async () => {
  mcp = await startMcpTestServer({
    acceptTokens: () => ['first-token', 'second-token'],
    makeServer: toolServer({
      pages: [
        [
          simpleTool('create_issue', {
            description: 'Create an issue.',
            inputSchema: { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] },
          }),
        ],
      ],
      call: (_name, args) => ({ content: [{ type: 'text', text: `created: ${String(args.title)}` }] }),
    }),
  });
  down = await deadUrl();
});
afterAll(async () => mcp.close());

test('useMcpConnection mounts the server tools; the model calls them; auth is resolved per request', async () => {
  const tracker = defineMcpConnection({ name: 'tracker', url: mcp.url, auth: () => token });
  function Triage() {
    useModel('anthropic/claude-haiku-4-5');
    useMcpConnection(tracker);
    return 'Triage.';
  }
  await ctx.start([Triage]);
  ctx.server.script({ toolCalls: [{ name: 'mcp__tracker__create_issue', arguments: { title: 'Crash on start' } }] }, { text: 'Filed.' });
  const handle = init(Triage, { id: 'mcp-1' });
  const reply = await handle.read(await handle.dispatch('File it.'));
  expect(reply.text).toBe('Filed.');
  const offered = ctx.server.requests[0]!.tools.find((t) => t.name === 'mcp__tracker__create_issue')!;
  expect(offered.description).toContain('Create an issue.');
  expect(ctx.server.requests[1]!.messages.filter((m) => m.role === 'tool').at(-1)!.content).toContain('created: Crash on start');
  expect(mcp.requests.some((r) => r.headers.authorization === 'Bearer first-token')).toBe(true);
});

test('createMcpConnection() tools are plain tool definitions: useTool() mounts them and the model calls them', async () => {
  const connection = await createMcpConnection({ name: 'tracker', url: mcp.url, auth: () => 'second-token' });
  try {
    function Filer() {
      useModel('anthropic/claude-haiku-4-5');
      for (const tool of connection.tools) useTool(tool);
      return 'File issues.';
    }
    await ctx.start([Filer]);
    ctx.server.script({ toolCalls: [{ name: 'mcp__tracker__create_issue', arguments: { title: 'Mounted by hand' } }] }, { text: 'Filed.' });
    const handle = init(Filer, { id: 'mcp-usetool' });
    expect((await handle.read(await handle.dispatch('File it.'))).text).toBe('Filed.');
    const offered = ctx.server.requests[0]!.tools.find((t) => t.name === 'mcp__tracker__create_issue')!;
    expect(offered.parameters).toMatchObject({ type: 'object', properties: { title: { type: 'string' } }, required: ['title'] });
    expect(ctx.server.requests[1]!.messages.filter((m) => m.role === 'tool').at(-1)).toMatchObject({
      content: JSON.stringify('created: Mounted by hand'),
      isError: false,
    });
  } finally {
    await connection.close();
  }
});

test('an optional server that is down mounts nothing, is narrated to the model, and the agent still runs', async () => {
  function Resilient() {
    useModel('anthropic/claude-haiku-4-5');
    useMcpConnection({ name: 'flaky', url: down, optional: true });
    return 'Work.';
  }
  await ctx.start([Resilient]);
  ctx.server.script({ text: 'Still here.' });
  const handle = init(Resilient, { id: 'mcp-2' });
  expect((await handle.read(await handle.dispatch('hi'))).text).toBe('Still here.');
  const request = ctx.server.requests[0]!;
  expect(request.tools.filter((t) => t.name.startsWith('mcp__'))).toEqual([]);
  const signal = request.messages.find((m) => m.content.includes('resource="mcp"'))!.content;
  expect(signal).toMatch(
    /^<signal type="resources" resource="mcp">\nMCP server "flaky" is unavailable for this response: \S.*\. Its tools are not mounted\.\n<\/signal>$/,
  );
});

test('several optional servers down are narrated in one resources signal: a header, then a line per server', async () => {
  function Degraded() {
    useModel('anthropic/claude-haiku-4-5');
    useMcpConnection({ name: 'flaky', url: down, optional: true });
    useMcpConnection({ name: 'sleepy', url: down, optional: true });
    return 'Work.';
  }
  await ctx.start([Degraded]);
  ctx.server.script({ text: 'Still here.' });
  const handle = init(Degraded, { id: 'mcp-4' });
  expect((await handle.read(await handle.dispatch('hi'))).text).toBe('Still here.');
  const signals = ctx.server.requests[0]!.messages.filter((m) => m.content.includes('resource="mcp"'));
  expect(signals).toHaveLength(1);
  const body = signals[0]!.content.split('\n').slice(1, -1);
  expect(body).toHaveLength(3);
  expect(body[0]).toBe('These MCP servers are unavailable for this response; their tools are not mounted:');
  expect(body[1]).toMatch(/^- "flaky" — \S/);
  expect(body[2]).toMatch(/^- "sleepy" — \S/);
});

test('a required server that is down fails the submission before any model call', async () => {
  function Strict() {
    useModel('anthropic/claude-haiku-4-5');
    useMcpConnection({ name: 'required', url: down });
    return 'Work.';
  }
  await ctx.start([Strict]);
  const handle = init(Strict, { id: 'mcp-3' });
  await expect(handle.read(await handle.dispatch('hi'))).rejects.toBeInstanceOf(AgentRunError);
  expect(ctx.server.requests).toHaveLength(0);
});
