/**
 * A real MCP server on loopback for the MCP client tests: the SDK's server classes over node:http,
 * either stateless Streamable HTTP or the legacy SSE transport. Optional bearer-token check and a
 * log of every request's Authorization/custom headers.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';

/** Anything with the SDK server's `connect`/`close` (low-level `Server` or `McpServer`). */
export interface ConnectableServer {
  connect(transport: StreamableHTTPServerTransport | SSEServerTransport): Promise<void>;
  close(): Promise<void>;
}

export interface TestServerOptions {
  transport?: 'streamable-http' | 'sse';
  /** Builds a fresh SDK server per session (stateless HTTP: per request). */
  makeServer: () => ConnectableServer;
  /** Accepted bearer tokens; when set, anything else gets HTTP 401. */
  acceptTokens?: () => string[];
}

export interface SeenRequest {
  method: string;
  path: string;
  authorization?: string;
  headers: Record<string, string | string[] | undefined>;
}

export interface TestServer {
  url: string;
  requests: SeenRequest[];
  close(): Promise<void>;
}

export async function startMcpTestServer(options: TestServerOptions): Promise<TestServer> {
  const requests: SeenRequest[] = [];
  const sseSessions = new Map<string, SSEServerTransport>();
  const servers = new Set<ConnectableServer>();
  const mode = options.transport ?? 'streamable-http';

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    requests.push({ method: req.method ?? '', path, authorization: req.headers.authorization, headers: req.headers });
    if (options.acceptTokens !== undefined) {
      const token = req.headers.authorization?.replace(/^Bearer /, '');
      if (token === undefined || !options.acceptTokens().includes(token)) {
        res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'unauthorized' }));
        return;
      }
    }
    if (mode === 'streamable-http') {
      if (req.method !== 'POST') {
        res.writeHead(405).end();
        return;
      }
      const server = options.makeServer();
      servers.add(server);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => {
        servers.delete(server);
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res);
      return;
    }
    if (req.method === 'GET' && path === '/sse') {
      const transport = new SSEServerTransport('/messages', res);
      const server = options.makeServer();
      servers.add(server);
      sseSessions.set(transport.sessionId, transport);
      res.on('close', () => {
        sseSessions.delete(transport.sessionId);
        servers.delete(server);
        void server.close();
      });
      await server.connect(transport);
      return;
    }
    if (req.method === 'POST' && path === '/messages') {
      const id = new URL(req.url ?? '/', 'http://localhost').searchParams.get('sessionId') ?? '';
      const transport = sseSessions.get(id);
      if (transport === undefined) {
        res.writeHead(404).end();
        return;
      }
      await transport.handlePostMessage(req, res);
      return;
    }
    res.writeHead(404).end();
  };

  const http = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(error));
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${mode === 'sse' ? '/sse' : '/mcp'}`,
    requests,
    async close() {
      await Promise.allSettled([...servers].map((s) => s.close()));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

export interface ToolServerSpec {
  /** Pages of tools/list; the cursor for page i is `page-i`. */
  pages: Tool[][];
  /** Overrides the cursor returned after page i (for the repeated-cursor test). */
  cursorAfter?: (page: number) => string | undefined;
  call?: (name: string, args: Record<string, unknown>) => CallToolResult | Promise<CallToolResult>;
}

/** A low-level SDK `Server` with hand-controlled tools/list pages and a call handler. */
export function toolServer(spec: ToolServerSpec): () => ConnectableServer {
  return () => {
    const server = new Server({ name: 'test-server', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, (request) => {
      const cursor = request.params?.cursor;
      const index = cursor === undefined ? 0 : Number(cursor.replace(/^page-/, ''));
      const tools = spec.pages[index] ?? [];
      const next = spec.cursorAfter ? spec.cursorAfter(index) : index + 1 < spec.pages.length ? `page-${index + 1}` : undefined;
      return next === undefined ? { tools } : { tools, nextCursor: next };
    });
    server.setRequestHandler(CallToolRequestSchema, async (request) => {
      const handler = spec.call ?? (() => ({ content: [{ type: 'text' as const, text: 'ok' }] }));
      return handler(request.params.name, (request.params.arguments ?? {}) as Record<string, unknown>);
    });
    return server;
  };
}

/** A port nothing listens on. */
export async function deadUrl(): Promise<string> {
  const http = createServer();
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  await new Promise<void>((resolve) => http.close(() => resolve()));
  return `http://127.0.0.1:${port}/mcp`;
}

export function simpleTool(name: string, extra: Partial<Tool> = {}): Tool {
  return { name, inputSchema: { type: 'object', properties: {} }, ...extra };
}
