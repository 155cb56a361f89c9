import { afterEach, describe, expect, it, vi } from 'vitest';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { createMcpConnection } from '../../src/runtime/mcp/index.ts';
import { flattenMcpToolResult } from '../../src/runtime/mcp/connection.ts';
import type { McpConnection } from '../../src/runtime/mcp/index.ts';
import { invokeTool } from '../../src/runtime/tools/tool-runner.ts';
import { toolParameters } from '../../src/runtime/authoring/define-tool.ts';
import type { ToolDefinition } from '../../src/runtime/authoring/define-tool.ts';
import { simpleTool, startMcpTestServer, toolServer } from './mcp-test-server.ts';
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

async function connect(def: Parameters<typeof createMcpConnection>[0]): Promise<McpConnection> {
  const connection = await createMcpConnection(def);
  cleanup.push(() => connection.close());
  return connection;
}

function tool(connection: McpConnection, name: string): ToolDefinition {
  const found = connection.tools.find((t) => t.name === name);
  if (!found) throw new Error(`no tool ${name} in ${connection.tools.map((t) => t.name).join(', ')}`);
  return found;
}

describe('createMcpConnection (streamable HTTP, real SDK server)', () => {
  it('lists tools with adapted names, descriptions, parameters and annotations, and calls them', async () => {
    const calls: [string, Record<string, unknown>][] = [];
    const server = await serve({
      makeServer: toolServer({
        pages: [
          [
            simpleTool('search', {
              description: 'Search issues.',
              inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
              annotations: { title: 'Issue search', readOnlyHint: true, openWorldHint: false },
            }),
            simpleTool('get.item', { title: 'get.item' }),
            { name: 'bare', inputSchema: { type: 'object' } },
          ],
        ],
        call: (name, args) => {
          calls.push([name, args]);
          return { content: [{ type: 'text', text: `found ${String(args.q)}` }] };
        },
      }),
    });
    const connection = await connect({ name: 'tracker', url: server.url });
    expect(connection.name).toBe('tracker');
    expect(connection.tools.map((t) => t.name)).toEqual(['mcp__tracker__search', 'mcp__tracker__get_item', 'mcp__tracker__bare']);
    const search = tool(connection, 'mcp__tracker__search');
    expect(search.description).toBe('Title: Issue search. Search issues.');
    expect(search.annotations).toEqual({ title: 'Issue search', readOnlyHint: true, openWorldHint: false });
    expect(toolParameters(search)).toEqual({
      type: 'object',
      properties: { q: { type: 'string' } },
      required: ['q'],
    });
    expect(Object.isFrozen(search)).toBe(true);
    // Sanitization changed the tool name, so the description spells out the original.
    expect(tool(connection, 'mcp__tracker__get_item').description).toBe('MCP tool "get.item" from server "tracker".');
    expect(toolParameters(tool(connection, 'mcp__tracker__bare'))).toEqual({ type: 'object', properties: {} });
    expect(tool(connection, 'mcp__tracker__bare').description).toBe('MCP tool "bare" from server "tracker".');

    // Through the engine's own tool pipeline: the model's arguments pass straight through.
    const result = await invokeTool(search, { q: 'bug', extra: 1 });
    expect(result.output).toBe('found bug');
    expect(calls).toEqual([['search', { q: 'bug', extra: 1 }]]);
  });

  it('sanitizes the server name and prefixes the description', async () => {
    const server = await serve({
      makeServer: toolServer({ pages: [[simpleTool('echo', { description: 'Echo.' })]] }),
    });
    const connection = await connect({ name: 'my.server', url: server.url });
    expect(connection.tools[0]!.name).toBe('mcp__my_server__echo');
    expect(connection.tools[0]!.description).toBe('MCP tool "echo" from server "my.server". Echo.');
    const odd = await connect({ name: '..', url: server.url });
    expect(odd.tools[0]!.name).toBe('mcp__unnamed__echo');
  });

  it('rejects tools whose adapted names collide', async () => {
    const server = await serve({ makeServer: toolServer({ pages: [[simpleTool('a.b'), simpleTool('a_b')]] }) });
    await expect(createMcpConnection({ name: 's', url: server.url })).rejects.toThrow(/two tools adapt to the same name "mcp__s__a_b"/);
  });

  it('follows tools/list pagination and rejects a repeated cursor', async () => {
    const pages = [[simpleTool('one')], [simpleTool('two')], [simpleTool('three')]];
    const server = await serve({ makeServer: toolServer({ pages }) });
    const connection = await connect({ name: 'p', url: server.url });
    expect(connection.tools.map((t) => t.name)).toEqual(['mcp__p__one', 'mcp__p__two', 'mcp__p__three']);

    const looping = await serve({
      makeServer: toolServer({ pages, cursorAfter: (page) => (page === 0 ? 'page-1' : 'page-1') }),
    });
    await expect(createMcpConnection({ name: 'p', url: looping.url })).rejects.toThrow(/tools\/list returned the cursor "page-1" twice/);
  });

  it('validates output schemas of tools on every tools/list page, not just the last', async () => {
    const outputSchema = { type: 'object' as const, properties: { n: { type: 'number' } }, required: ['n'] };
    const server = await serve({
      makeServer: toolServer({
        pages: [[simpleTool('early', { outputSchema })], [simpleTool('late', { outputSchema })]],
        call: () => ({ content: [], structuredContent: { n: 'not a number' } }),
      }),
    });
    const connection = await connect({ name: 'o', url: server.url });
    await expect(invokeTool(tool(connection, 'mcp__o__early'), {})).rejects.toThrow(/output schema/i);
    await expect(invokeTool(tool(connection, 'mcp__o__late'), {})).rejects.toThrow(/output schema|structured content/i);
  });

  it('applies the allowlist in its order and rejects unknown, duplicate and task-required names', async () => {
    const server = await serve({
      makeServer: toolServer({
        pages: [[simpleTool('a'), simpleTool('b'), simpleTool('c'), simpleTool('job', { execution: { taskSupport: 'required' } })]],
      }),
    });
    const connection = await connect({ name: 's', url: server.url, tools: ['c', 'a'] });
    expect(connection.tools.map((t) => t.name)).toEqual(['mcp__s__c', 'mcp__s__a']);

    await expect(createMcpConnection({ name: 's', url: server.url, tools: ['a', 'zzz'] })).rejects.toThrow(
      /"tools" lists "zzz", which the server does not expose\. Discovered tools: "a", "b", "c", "job"/,
    );
    await expect(createMcpConnection({ name: 's', url: server.url, tools: ['a', 'a'] })).rejects.toThrow(
      /"tools" lists "a" more than once/,
    );
    await expect(createMcpConnection({ name: 's', url: server.url, tools: ['job'] })).rejects.toThrow(
      /"job", which requires task-based execution/,
    );

    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const all = await connect({ name: 's', url: server.url });
    expect(all.tools.map((t) => t.name)).toEqual(['mcp__s__a', 'mcp__s__b', 'mcp__s__c']);
    expect(warn).toHaveBeenCalledWith(expect.stringMatching(/skipping tool "job"/));
  });

  it('surfaces isError results and server-side failures as tool errors', async () => {
    const server = await serve({
      makeServer: toolServer({
        pages: [[simpleTool('fails'), simpleTool('throws')]],
        call: (name) => {
          if (name === 'throws') throw new Error('database exploded');
          return { isError: true, content: [{ type: 'text', text: 'no such issue' }] };
        },
      }),
    });
    const connection = await connect({ name: 's', url: server.url });
    await expect(invokeTool(tool(connection, 'mcp__s__fails'), {})).rejects.toThrow('no such issue');
    await expect(invokeTool(tool(connection, 'mcp__s__throws'), {})).rejects.toThrow(/database exploded/);
  });

  it('validates structured content against the output schema (McpServer + cfworker validator)', async () => {
    const server = await serve({
      makeServer: () => {
        const mcp = new McpServer({ name: 'typed', version: '1.0.0' });
        mcp.registerTool(
          'sum',
          {
            description: 'Adds.',
            inputSchema: { a: z.number(), b: z.number() },
            outputSchema: { total: z.number() },
            annotations: { idempotentHint: true },
          },
          async ({ a, b }) => ({ content: [{ type: 'text', text: `${a + b}` }], structuredContent: { total: a + b } }),
        );
        mcp.registerTool('liar', { outputSchema: { total: z.number() } }, async () => ({
          content: [],
          structuredContent: { total: 'nope' } as unknown as { total: number },
        }));
        mcp.registerTool('boom', { description: 'Throws.' }, async () => {
          throw new Error('handler failed');
        });
        return mcp;
      },
    });
    const connection = await connect({ name: 'typed', url: server.url });
    const sum = tool(connection, 'mcp__typed__sum');
    expect(sum.annotations).toEqual({ idempotentHint: true });
    expect((await invokeTool(sum, { a: 2, b: 3 })).output).toBe('Structured content:\n{\n  "total": 5\n}\n\n5');
    await expect(invokeTool(tool(connection, 'mcp__typed__liar'), {})).rejects.toThrow(/output schema|structured content/i);
    // McpServer reports a throwing handler as an isError result.
    await expect(invokeTool(tool(connection, 'mcp__typed__boom'), {})).rejects.toThrow(/handler failed/);
    // Server-side argument validation failure surfaces too.
    await expect(invokeTool(sum, { a: 'x' })).rejects.toThrow();
  });

  it('re-resolves auth on every request and once more after a 401, then succeeds', async () => {
    let valid = 'token-1';
    const server = await serve({
      makeServer: toolServer({ pages: [[simpleTool('ping')]] }),
      acceptTokens: () => [valid],
    });
    let resolutions = 0;
    let current = 'token-1';
    const auth = vi.fn(async () => {
      resolutions++;
      return current;
    });
    const connection = await connect({ name: 'a', url: server.url, auth });
    const afterConnect = resolutions;
    expect(afterConnect).toBeGreaterThanOrEqual(3); // initialize, initialized, tools/list
    expect(server.requests.every((r) => r.authorization === 'Bearer token-1')).toBe(true);

    // The server rotates; the app's function returns the old token once, then the refreshed one.
    valid = 'token-2';
    let first = true;
    auth.mockImplementation(async () => {
      resolutions++;
      if (first) {
        first = false;
        return 'token-1';
      }
      return 'token-2';
    });
    const seenBefore = server.requests.length;
    expect((await invokeTool(tool(connection, 'mcp__a__ping'), {})).output).toBe('ok');
    expect(resolutions).toBe(afterConnect + 2);
    expect(server.requests.slice(seenBefore).map((r) => r.authorization)).toEqual(['Bearer token-1', 'Bearer token-2']);

    // A persistent 401 is retried only once, then fails.
    valid = 'token-3';
    const before = resolutions;
    await expect(invokeTool(tool(connection, 'mcp__a__ping'), {})).rejects.toThrow();
    expect(resolutions).toBe(before + 2);
  });

  it('fails connect on a rejected static token and closes the client', async () => {
    const server = await serve({
      makeServer: toolServer({ pages: [[simpleTool('ping')]] }),
      acceptTokens: () => ['right'],
    });
    await expect(createMcpConnection({ name: 'a', url: server.url, auth: 'wrong' })).rejects.toThrow(
      /\[flue\] MCP server "a": connection failed/,
    );
    const ok = await connect({ name: 'a', url: server.url, auth: 'right' });
    expect(ok.tools).toHaveLength(1);
  });

  it('merges headers over requestInit headers and uses a custom fetch', async () => {
    const server = await serve({ makeServer: toolServer({ pages: [[simpleTool('ping')]] }) });
    const fetched: string[] = [];
    const connection = await connect({
      name: 'h',
      url: server.url,
      requestInit: { headers: { 'X-Tenant': 'from-init', 'X-Init-Only': 'yes' } },
      headers: { 'x-tenant': 'from-headers' },
      fetch: (input, init) => {
        fetched.push(String(input));
        return fetch(input, init);
      },
    });
    await invokeTool(tool(connection, 'mcp__h__ping'), {});
    expect(fetched.length).toBeGreaterThan(0);
    for (const request of server.requests) {
      expect(request.headers['x-tenant']).toBe('from-headers');
      expect(request.headers['x-init-only']).toBe('yes');
    }
  });

  it('applies timeoutMs to requests', async () => {
    const server = await serve({
      makeServer: toolServer({
        pages: [[simpleTool('slow')]],
        call: async () => {
          await new Promise((resolve) => setTimeout(resolve, 500));
          return { content: [{ type: 'text', text: 'late' }] };
        },
      }),
    });
    const connection = await connect({ name: 't', url: server.url, timeoutMs: 100 });
    await expect(invokeTool(tool(connection, 'mcp__t__slow'), {})).rejects.toThrow(/timed out/i);
  });

  it('close() closes the client; calls afterwards fail', async () => {
    const server = await serve({ makeServer: toolServer({ pages: [[simpleTool('ping')]] }) });
    const connection = await createMcpConnection({ name: 'c', url: server.url });
    await connection.close();
    await connection.close();
    await expect(invokeTool(connection.tools[0]!, {})).rejects.toThrow();
  });
});

describe('flattenMcpToolResult', () => {
  it('renders every content kind', () => {
    const text = flattenMcpToolResult({
      structuredContent: { n: 1 },
      content: [
        { type: 'text', text: 'hello' },
        { type: 'image', mimeType: 'image/png', data: 'AAAA' },
        { type: 'audio', mimeType: 'audio/wav', data: 'BBBBBB' },
        { type: 'resource', resource: { uri: 'file:///a.txt', text: 'body' } },
        { type: 'resource', resource: { uri: 'file:///b.bin', blob: 'CC' } },
        { type: 'resource_link', name: 'doc', uri: 'https://x.test/doc', description: 'Docs' },
        { type: 'resource_link', name: 'raw', uri: 'https://x.test/raw' },
        { type: 'mystery', value: 1 },
      ],
    });
    expect(text).toBe(
      [
        'Structured content:\n{\n  "n": 1\n}',
        'hello',
        '[Image: image/png, 4 base64 chars]',
        '[Audio: audio/wav, 6 base64 chars]',
        '[Resource: file:///a.txt]\nbody',
        '[Resource: file:///b.bin, 2 base64 chars]',
        '[Resource link: doc (https://x.test/doc) - Docs]',
        '[Resource link: raw (https://x.test/raw)]',
        '{"type":"mystery","value":1}',
      ].join('\n\n'),
    );
    expect(flattenMcpToolResult({ content: [] })).toBe('(MCP tool returned no content)');
  });
});
