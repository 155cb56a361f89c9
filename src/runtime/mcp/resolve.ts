/**
 * Connects a render's declared MCP servers in parallel. A failing
 * non-optional server fails the whole resolve (the submission fails before the model runs) after
 * closing whatever did connect; a failing `optional` server mounts zero tools and is reported in
 * `failures` for the engine to narrate (`resources` signal, `resource="mcp"`).
 */
import type { ToolDefinition } from '../authoring/define-tool.ts';
import type { McpConnection } from './connection.ts';
import { validateMcpConnectionDefinition } from './definition.ts';
import type { McpConnectionDefinition } from './definition.ts';

export interface McpConnectionFailure {
  name: string;
  reason: string;
}

export interface ResolvedMcpConnections {
  /** Adapted tools of every connected server, in declaration order. */
  tools: ToolDefinition[];
  /** Optional servers that failed to connect or discover. */
  failures: McpConnectionFailure[];
  /** The live connections, in declaration order. */
  connections: McpConnection[];
  close(): Promise<void>;
}

export type McpConnect = (definition: McpConnectionDefinition) => Promise<McpConnection>;

let installed: McpConnect | undefined;

/** Called by `useMcpConnection()`: declarations exist only where the client was imported. */
export function installMcpConnector(connect: McpConnect): void {
  installed = connect;
}

export async function resolveMcpConnections(
  definitions: readonly McpConnectionDefinition[],
  connect: McpConnect | undefined = installed,
): Promise<ResolvedMcpConnections> {
  if (connect === undefined) throw new Error('[flue] MCP connections were declared without useMcpConnection().');
  const defs = definitions.map((d) => validateMcpConnectionDefinition(d, 'useMcpConnection'));
  const names = new Set<string>();
  for (const def of defs) {
    if (names.has(def.name)) {
      throw new Error(`[flue] useMcpConnection(): MCP server name "${def.name}" is declared more than once.`);
    }
    names.add(def.name);
  }

  const settled = await Promise.allSettled(defs.map((def) => connect(def)));
  const connections: McpConnection[] = [];
  const failures: McpConnectionFailure[] = [];
  let fatal: unknown;
  let hasFatal = false;
  settled.forEach((outcome, i) => {
    if (outcome.status === 'fulfilled') {
      connections.push(outcome.value);
    } else if (defs[i]!.optional === true) {
      failures.push({ name: defs[i]!.name, reason: reasonOf(outcome.reason) });
    } else if (!hasFatal) {
      hasFatal = true;
      fatal = outcome.reason;
    }
  });

  const close = async (): Promise<void> => {
    await Promise.allSettled(connections.map((c) => c.close()));
  };
  if (hasFatal) {
    await close();
    throw fatal;
  }
  return {
    tools: connections.flatMap((c) => c.tools),
    failures,
    connections,
    close,
  };
}

function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
