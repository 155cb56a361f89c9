import { afterEach, describe, expect, it, vi } from 'vitest';
import { createMcpConnection, resolveMcpConnections } from '../../src/runtime/mcp/index.ts';
import type { McpConnection, McpConnectionDefinition } from '../../src/runtime/mcp/index.ts';
import { invokeTool } from '../../src/runtime/tools/tool-runner.ts';
import { deadUrl, simpleTool, startMcpTestServer, toolServer } from './mcp-test-server.ts';
import type { TestServer } from './mcp-test-server.ts';

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanup.length > 0) await cleanup.pop()!().catch(() => {});
  vi.restoreAllMocks();
});

async function serve(options: Parameters<typeof startMcpTestServer>[0]): Promise<TestServer> {
  const server = await startMcpTestServer(options);
  cleanup.push(() => server.close());
  return server;
}

describe('createMcpConnection (legacy SSE transport, real SDK server)', () => {
  it('connects, lists, calls, and sends auth on the stream and every POST', async () => {
    let valid = 'sse-1';
    const server = await serve({
      transport: 'sse',
      acceptTokens: () => [valid],
      makeServer: toolServer({
        pages: [[simpleTool('echo', { description: 'Echo.', annotations: { readOnlyHint: true } })], [simpleTool('second')]],
        call: (_name, args) => ({ content: [{ type: 'text', text: `echo ${JSON.stringify(args)}` }] }),
      }),
    });
    let tokens = 0;
    const connection = await createMcpConnection({
      name: 'legacy',
      url: server.url,
      transport: 'sse',
      auth: () => {
        tokens++;
        return valid;
      },
    });
    cleanup.push(() => connection.close());
    expect(connection.tools.map((t) => t.name)).toEqual(['mcp__legacy__echo', 'mcp__legacy__second']);
    expect(connection.tools[0]!.annotations).toEqual({ readOnlyHint: true });
    expect((await invokeTool(connection.tools[0]!, { x: 1 })).output).toBe('echo {"x":1}');
    expect(server.requests.some((r) => r.method === 'GET' && r.path === '/sse')).toBe(true);
    expect(server.requests.filter((r) => r.method === 'POST').length).toBeGreaterThanOrEqual(4);
    expect(server.requests.every((r) => r.authorization === `Bearer ${valid}`)).toBe(true);
    expect(tokens).toBe(server.requests.length);

    // Rotation: a stale token gets 401 on the POST, the function is asked again and the retry works.
    valid = 'sse-2';
    const before = tokens;
    let stale = true;
    const again = await createMcpConnection({
      name: 'legacy',
      url: server.url,
      transport: 'sse',
      auth: () => {
        tokens++;
        if (stale) {
          stale = false;
          return 'sse-1';
        }
        return valid;
      },
    });
    cleanup.push(() => again.close());
    expect(again.tools).toHaveLength(2);
    expect(tokens).toBeGreaterThan(before + 1);
  });

  it('fails cleanly when the SSE endpoint is down', async () => {
    await expect(createMcpConnection({ name: 'gone', url: (await deadUrl()).replace('/mcp', '/sse'), transport: 'sse' })).rejects.toThrow(
      /\[flue\] MCP server "gone": connection failed/,
    );
  });
});

describe('resolveMcpConnections', () => {
  it('connects servers in parallel, concatenates tools in declaration order', async () => {
    const a = await serve({ makeServer: toolServer({ pages: [[simpleTool('x')]] }) });
    const b = await serve({ transport: 'sse', makeServer: toolServer({ pages: [[simpleTool('y'), simpleTool('z')]] }) });
    const resolved = await resolveMcpConnections(
      [
        { name: 'b', url: b.url, transport: 'sse' },
        { name: 'a', url: a.url },
      ],
      createMcpConnection,
    );
    cleanup.push(() => resolved.close());
    expect(resolved.tools.map((t) => t.name)).toEqual(['mcp__b__y', 'mcp__b__z', 'mcp__a__x']);
    expect(resolved.failures).toEqual([]);
    expect(resolved.connections.map((c) => c.name)).toEqual(['b', 'a']);
  });

  it('records an optional server that is down and mounts zero tools for it', async () => {
    const up = await serve({ makeServer: toolServer({ pages: [[simpleTool('x')]] }) });
    const resolved = await resolveMcpConnections(
      [
        { name: 'flaky', url: await deadUrl(), optional: true },
        { name: 'up', url: up.url },
      ],
      createMcpConnection,
    );
    cleanup.push(() => resolved.close());
    expect(resolved.tools.map((t) => t.name)).toEqual(['mcp__up__x']);
    expect(resolved.failures).toHaveLength(1);
    expect(resolved.failures[0]!.name).toBe('flaky');
    expect(resolved.failures[0]!.reason).toMatch(/MCP server "flaky": connection failed/);
  });

  it('records an optional server whose discovery fails (allowlist)', async () => {
    const up = await serve({ makeServer: toolServer({ pages: [[simpleTool('x')]] }) });
    const resolved = await resolveMcpConnections([{ name: 'up', url: up.url, tools: ['nope'], optional: true }], createMcpConnection);
    expect(resolved.tools).toEqual([]);
    expect(resolved.failures[0]!.reason).toMatch(/"tools" lists "nope"/);
  });

  it('fails hard for a non-optional server and closes the ones that connected', async () => {
    const up = await serve({ makeServer: toolServer({ pages: [[simpleTool('x')]] }) });
    const closed: string[] = [];
    const connect = async (def: McpConnectionDefinition): Promise<McpConnection> => {
      const connection = await createMcpConnection(def);
      return {
        ...connection,
        close: async () => {
          closed.push(def.name);
          await connection.close();
        },
      };
    };
    await expect(
      resolveMcpConnections(
        [
          { name: 'up', url: up.url },
          { name: 'required', url: await deadUrl() },
          { name: 'opt', url: await deadUrl(), optional: true },
        ],
        connect,
      ),
    ).rejects.toThrow(/MCP server "required": connection failed/);
    expect(closed).toEqual(['up']);
  });

  it('rejects duplicate server names and invalid definitions before connecting', async () => {
    const connect = vi.fn();
    await expect(
      resolveMcpConnections(
        [
          { name: 's', url: 'http://127.0.0.1:1/mcp' },
          { name: 's', url: 'http://127.0.0.1:2/mcp' },
        ],
        connect,
      ),
    ).rejects.toThrow(/"s" is declared more than once/);
    await expect(resolveMcpConnections([{ name: 's', url: 'nope' }], connect)).rejects.toThrow(/useMcpConnection\(\).*"url"/);
    expect(connect).not.toHaveBeenCalled();
  });
});
