/**
 * `createMcpConnection()` (skills-subagents-mcp.md §3.3): connects to a remote MCP server with the
 * `@modelcontextprotocol/sdk` client and adapts its listed tools into plain `ToolDefinition`s.
 * Always uses the cfworker JSON Schema validator: the SDK's default (ajv) compiles with
 * `new Function`, which real workerd forbids (toolchain.md §5).
 */
import * as v from 'valibot';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { type McpToolAnnotations, type ToolDefinition, adoptToolDefinition } from '../authoring/define-tool.ts';
import { mcpConnectionUrl, validateMcpConnectionDefinition } from './definition.ts';
import type { McpAuth, McpConnectionDefinition } from './definition.ts';

export interface McpConnection {
  readonly name: string;
  readonly tools: ToolDefinition[];
  close(): Promise<void>;
}

/** Client identity sent to servers (our product name and runtime version). */
export const MCP_CLIENT_INFO = Object.freeze({ name: 'flue-workers', version: '0.1.0' });

/** A failure to connect to or discover tools on an MCP server; `server` is the definition's name. */
export class McpConnectionError extends Error {
  readonly server: string;
  constructor(server: string, message: string, options?: { cause?: unknown }) {
    super(`[flue] MCP server "${server}": ${message}`, options);
    this.name = 'McpConnectionError';
    this.server = server;
  }
}

/** Thrown by an adapted tool when the server's result has `isError: true`; message = result text. */
export class McpToolResultError extends Error {
  readonly server: string;
  readonly tool: string;
  constructor(server: string, tool: string, text: string) {
    super(text);
    this.name = 'McpToolResultError';
    this.server = server;
    this.tool = tool;
  }
}

/** The fields of a listed tool this module reads (the SDK's `Tool`, loosely). */
interface ListedTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
  execution?: { taskSupport?: string };
}

/**
 * The SDK is loaded on first connect: it is about 240 modules (zod included), and a Node process
 * whose agents declare no MCP server should not pay for them at start-up. Worker bundles inline
 * it either way, and drop it when no agent imports `useMcpConnection`.
 */
let sdk: Promise<McpSdk> | undefined;
type McpSdk = Awaited<ReturnType<typeof importSdk>>;

async function importSdk() {
  const [client, streamable, sse, cfworker] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/client/sse.js'),
    import('@modelcontextprotocol/sdk/validation/cfworker'),
  ]);
  return {
    Client: client.Client,
    StreamableHTTPClientTransport: streamable.StreamableHTTPClientTransport,
    SSEClientTransport: sse.SSEClientTransport,
    CfWorkerJsonSchemaValidator: cfworker.CfWorkerJsonSchemaValidator,
  };
}

export async function createMcpConnection(definition: McpConnectionDefinition): Promise<McpConnection> {
  const def = validateMcpConnectionDefinition(definition, 'createMcpConnection');
  sdk ??= importSdk().catch((error: unknown) => {
    sdk = undefined;
    throw error;
  });
  const mcp = await sdk;
  const client = new mcp.Client({ ...MCP_CLIENT_INFO }, { jsonSchemaValidator: new mcp.CfWorkerJsonSchemaValidator() });
  const requestOptions: RequestOptions = {};
  if (def.timeoutMs !== undefined) requestOptions.timeout = def.timeoutMs;
  if (def.resetTimeoutOnProgress === true) {
    requestOptions.resetTimeoutOnProgress = true;
    // Progress notifications are only requested (progressToken) when a handler exists.
    requestOptions.onprogress = () => {};
  }

  let tools: ToolDefinition[];
  try {
    await client.connect(createTransport(mcp, def), requestOptions);
    const listed = await listAllTools(client, def.name, requestOptions);
    tools = adaptTools(mcp, def, listed, client, requestOptions);
  } catch (error) {
    await client.close().catch(() => {});
    if (error instanceof McpConnectionError) throw error;
    throw new McpConnectionError(def.name, `connection failed: ${messageOf(error)}`, { cause: error });
  }

  let closing: Promise<void> | undefined;
  return Object.freeze({
    name: def.name,
    tools,
    close(): Promise<void> {
      closing ??= client.close();
      return closing;
    },
  });
}

// ── Transport ─────────────────────────────────────────────────────────────────────────────────

function createTransport(mcp: McpSdk, def: Readonly<McpConnectionDefinition>): Transport {
  const url = mcpConnectionUrl(def);
  const options = { fetch: authorizedFetch(def), requestInit: mergedRequestInit(def) };
  return def.transport === 'sse' ? new mcp.SSEClientTransport(url, options) : new mcp.StreamableHTTPClientTransport(url, options);
}

/** `requestInit` with `headers` merged in; same-name `headers` entries win. */
function mergedRequestInit(def: Readonly<McpConnectionDefinition>): RequestInit | undefined {
  if (def.requestInit === undefined && def.headers === undefined) return undefined;
  const headers = new Headers(def.requestInit?.headers);
  new Headers(def.headers).forEach((value, key) => headers.set(key, value));
  const record: Record<string, string> = {};
  headers.forEach((value, key) => {
    record[key] = value;
  });
  return { ...def.requestInit, headers: record };
}

/**
 * The transport's fetch: `def.fetch ?? fetch`, with `Authorization: Bearer <token>` resolved before
 * every request, and on HTTP 401 resolved once more and the request retried once.
 */
function authorizedFetch(def: Readonly<McpConnectionDefinition>): typeof fetch {
  const base: typeof fetch = def.fetch ?? ((input, init) => fetch(input, init));
  const auth = def.auth;
  if (auth === undefined) return base;
  const send = async (input: RequestInfo | URL, init: RequestInit | undefined): Promise<Response> => {
    const token = await resolveAuth(auth);
    const headers = new Headers(init?.headers);
    headers.set('Authorization', `Bearer ${token}`);
    return base(input, { ...init, headers });
  };
  return async (input, init) => {
    const response = await send(input, init);
    if (response.status !== 401) return response;
    await response.body?.cancel().catch(() => {});
    return send(input, init);
  };
}

async function resolveAuth(auth: McpAuth): Promise<string> {
  const token = typeof auth === 'function' ? await auth() : auth;
  if (typeof token !== 'string' || token.trim() === '') {
    throw new Error(`"auth" must resolve to a non-empty string token.`);
  }
  return token;
}

// ── Discovery ─────────────────────────────────────────────────────────────────────────────────

async function listAllTools(client: Client, server: string, options: RequestOptions): Promise<ListedTool[]> {
  const tools: ListedTool[] = [];
  const seen = new Set<string>();
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? undefined : { cursor }, options);
    tools.push(...(page.tools as ListedTool[]));
    cursor = page.nextCursor;
    if (cursor !== undefined) {
      if (seen.has(cursor)) {
        throw new McpConnectionError(server, `tools/list returned the cursor ${JSON.stringify(cursor)} twice.`);
      }
      seen.add(cursor);
    }
  } while (cursor !== undefined);
  return tools;
}

/** `[^A-Za-z0-9_-]` → `_`, leading/trailing `_` trimmed, `unnamed` if nothing is left. */
export function sanitizeMcpNamePart(part: string): string {
  const cleaned = part.replace(/[^A-Za-z0-9_-]/g, '_').replace(/^_+|_+$/g, '');
  return cleaned === '' ? 'unnamed' : cleaned;
}

export function mcpToolName(server: string, tool: string): string {
  return `mcp__${sanitizeMcpNamePart(server)}__${sanitizeMcpNamePart(tool)}`;
}

function selectTools(def: Readonly<McpConnectionDefinition>, listed: ListedTool[]): ListedTool[] {
  const byName = new Map<string, ListedTool>();
  for (const tool of listed) if (!byName.has(tool.name)) byName.set(tool.name, tool);
  if (def.tools === undefined) {
    return [...byName.values()].filter((tool) => {
      if (tool.execution?.taskSupport !== 'required') return true;
      console.warn(`[flue] MCP server "${def.name}": skipping tool "${tool.name}", which requires task-based execution.`);
      return false;
    });
  }
  const allow = new Set<string>();
  const selected: ListedTool[] = [];
  for (const name of def.tools) {
    if (allow.has(name)) throw new McpConnectionError(def.name, `"tools" lists "${name}" more than once.`);
    allow.add(name);
    const tool = byName.get(name);
    if (tool === undefined) {
      const available = [...byName.keys()].map((n) => JSON.stringify(n)).join(', ') || '(none)';
      throw new McpConnectionError(def.name, `"tools" lists "${name}", which the server does not expose. Discovered tools: ${available}.`);
    }
    if (tool.execution?.taskSupport === 'required') {
      throw new McpConnectionError(def.name, `"tools" lists "${name}", which requires task-based execution (unsupported).`);
    }
    selected.push(tool);
  }
  return selected;
}

function adaptTools(
  mcp: McpSdk,
  def: Readonly<McpConnectionDefinition>,
  listed: ListedTool[],
  client: Client,
  options: RequestOptions,
): ToolDefinition[] {
  const names = new Set<string>();
  const validator = new mcp.CfWorkerJsonSchemaValidator();
  return selectTools(def, listed).map((tool) => {
    const name = mcpToolName(def.name, tool.name);
    if (names.has(name)) {
      throw new McpConnectionError(def.name, `two tools adapt to the same name "${name}".`);
    }
    names.add(name);
    // The client only keeps output validators for the last tools/list page: validate here too.
    const validateOutput = tool.outputSchema === undefined ? undefined : validator.getValidator(structuredClone(tool.outputSchema));
    const definition: Record<string, unknown> = {
      name,
      description: adaptedDescription(def.name, tool),
      input: v.looseObject({}),
      parameters: Object.freeze({
        ...structuredClone(tool.inputSchema),
        type: tool.inputSchema.type ?? 'object',
        properties: tool.inputSchema.properties ?? {},
      }),
      async run(ctx: { data?: Record<string, unknown>; signal?: AbortSignal }): Promise<string> {
        const result = await client.callTool(
          { name: tool.name, arguments: ctx.data ?? {} },
          undefined,
          ctx.signal === undefined ? options : { ...options, signal: ctx.signal },
        );
        const text = flattenMcpToolResult(result);
        if (result.isError === true) throw new McpToolResultError(def.name, tool.name, text);
        if (validateOutput !== undefined) {
          if (result.structuredContent === undefined) {
            throw new Error(`MCP tool "${tool.name}" declares an output schema but returned no structured content.`);
          }
          const check = validateOutput(result.structuredContent);
          if (!check.valid) {
            throw new Error(
              `MCP tool "${tool.name}" returned structured content that does not match its output schema: ${check.errorMessage}`,
            );
          }
        }
        return text;
      },
    };
    if (tool.annotations !== undefined) {
      definition.annotations = Object.freeze({ ...tool.annotations }) as Readonly<McpToolAnnotations>;
    }
    return adoptToolDefinition(Object.freeze(definition) as unknown as ToolDefinition);
  });
}

function adaptedDescription(server: string, tool: ListedTool): string {
  const parts: string[] = [];
  const intro = `MCP tool "${tool.name}" from server "${server}".`;
  if (sanitizeMcpNamePart(server) !== server || sanitizeMcpNamePart(tool.name) !== tool.name) parts.push(intro);
  const annotated = tool.annotations?.title;
  const title = tool.title ?? (typeof annotated === 'string' ? annotated : undefined);
  if (title !== undefined && title !== '' && title !== tool.name) parts.push(`Title: ${title}.`);
  if (tool.description !== undefined && tool.description.trim() !== '') parts.push(tool.description);
  return parts.length === 0 ? intro : parts.join(' ');
}

// ── Results ───────────────────────────────────────────────────────────────────────────────────

/** A `tools/call` result flattened to model-facing text. */
export function flattenMcpToolResult(result: Record<string, unknown>): string {
  const parts: string[] = [];
  if (result.structuredContent !== undefined) {
    parts.push(`Structured content:\n${JSON.stringify(result.structuredContent, null, 2)}`);
  }
  if (result.toolResult !== undefined && result.content === undefined) {
    parts.push(JSON.stringify(result.toolResult, null, 2));
  }
  const content = Array.isArray(result.content) ? (result.content as Record<string, unknown>[]) : [];
  for (const item of content) parts.push(contentText(item));
  return parts.length === 0 ? '(MCP tool returned no content)' : parts.join('\n\n');
}

function contentText(item: Record<string, unknown>): string {
  switch (item.type) {
    case 'text':
      return String(item.text);
    case 'image':
      return `[Image: ${String(item.mimeType)}, ${String(item.data).length} base64 chars]`;
    case 'audio':
      return `[Audio: ${String(item.mimeType)}, ${String(item.data).length} base64 chars]`;
    case 'resource': {
      const resource = (item.resource ?? {}) as Record<string, unknown>;
      if (typeof resource.text === 'string') return `[Resource: ${String(resource.uri)}]\n${resource.text}`;
      return `[Resource: ${String(resource.uri)}, ${String(resource.blob ?? '').length} base64 chars]`;
    }
    case 'resource_link': {
      const described = typeof item.description === 'string' && item.description !== '' ? ` - ${item.description}` : '';
      return `[Resource link: ${String(item.name)} (${String(item.uri)})${described}]`;
    }
    default:
      return JSON.stringify(item);
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
