/**
 * Seed 004, McpConnectionDefinition.optional: a failing optional server mounts zero tools for the
 * submission, is announced to the model as a `resources` signal and to observers as a log-level
 * warning event, and the next submission tries again. Also the one tool namespace: an MCP tool
 * whose adapted name is taken by a `useTool` tool is a name conflict at tool-set assembly.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { defineTool, init, observe, useMcpConnection, useModel, useTool, type FlueEvent } from '@flue/runtime';
import { useScriptedRuntime } from '../support/scripted-runtime.ts';
import { dispatchAndFail } from '../seed-tools/helpers.ts';
import { simpleTool, startMcpTestServer, toolServer, type TestServer } from './mcp-test-server.ts';

const ctx = useScriptedRuntime();
let mcp: TestServer;

beforeAll(async () => {
  mcp = await startMcpTestServer({
    makeServer: toolServer({
      pages: [[simpleTool('ping', { description: 'Ping.' })]],
      call: () => ({ content: [{ type: 'text', text: 'pong' }] }),
    }),
  });
});
afterAll(async () => mcp.close());

test('an optional server that fails emits a warn log event; the next submission connects again and mounts its tools', async () => {
  let reachable = false;
  function Pinger() {
    useModel('anthropic/claude-haiku-4-5');
    useMcpConnection({
      name: 'flaky',
      url: mcp.url,
      optional: true,
      // Down for the first submission, up for the second.
      fetch: (input, init) => (reachable ? fetch(input, init) : Promise.reject(new TypeError('fetch failed: connection refused'))),
    });
    return 'Ping.';
  }
  const events: FlueEvent[] = [];
  const unsubscribe = observe((event) => {
    if (event.type === 'log') events.push(event);
  });
  try {
    await ctx.start([Pinger]);
    ctx.server.script({ text: 'No server.' });
    const handle = init(Pinger, { id: 'mcp-warn' });
    expect((await handle.read(await handle.dispatch('first'))).text).toBe('No server.');
    const warnings = events.filter((event) => (event as { level?: string }).level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      level: 'warn',
      message: '[flue:mcp] optional server "flaky" is unavailable',
      attributes: { mcp: 'flaky', reason: expect.stringContaining('connection refused') },
    });
    expect(ctx.server.requests[0]!.tools.map((t) => t.name)).not.toContain('mcp__flaky__ping');

    reachable = true;
    ctx.server.script({ toolCalls: [{ name: 'mcp__flaky__ping', arguments: {} }] }, { text: 'Pinged.' });
    expect((await handle.read(await handle.dispatch('second'))).text).toBe('Pinged.');
    expect(ctx.server.requests[1]!.tools.map((t) => t.name)).toContain('mcp__flaky__ping');
    expect(ctx.server.requests[2]!.messages.filter((m) => m.role === 'tool').at(-1)!.content).toContain('pong');
    expect(events.filter((event) => (event as { level?: string }).level === 'warn')).toHaveLength(1);
  } finally {
    unsubscribe();
  }
});

test('a useTool tool named like an adapted MCP tool fails the submission with the duplicate name', async () => {
  function Clash() {
    useModel('anthropic/claude-haiku-4-5');
    useMcpConnection({ name: 'flaky', url: mcp.url });
    useTool(defineTool({ name: 'mcp__flaky__ping', description: 'A local ping.', run: () => 'local' }));
    return 'x';
  }
  await ctx.start([Clash]);
  expect((await dispatchAndFail(Clash, 'mcp-clash', 'go')).message).toContain('Duplicate tool name "mcp__flaky__ping".');
  expect(ctx.server.requests).toHaveLength(0);
});
