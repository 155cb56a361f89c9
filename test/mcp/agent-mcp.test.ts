import { afterAll, beforeAll, expect, test } from 'vitest';
import { AgentRunError, defineMcpConnection, init, useMcpConnection, useModel } from '@flue/runtime';
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
      pages: [[simpleTool('create_issue', { description: 'Create an issue.', inputSchema: { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] } })]],
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
  expect(request.tools).toEqual([]);
  expect(request.messages.map((m) => m.content).join('\n')).toContain('MCP server "flaky" is unavailable for this response');
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
