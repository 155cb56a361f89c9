/**
 * `createMcpConnection()` as the package exports it and `useMcpConnection()` installs it. The MCP
 * client (connection.ts: transports, discovery, the tool adapter) loads with the first connection,
 * not at start (common/lazy-part.ts), and the SDK it drives loads then too; connection.ts must stay
 * imported only here (its types excepted).
 */
import { lazyPart } from '../common/lazy-part.ts';
import type { McpConnection } from './connection.ts';
import type { McpConnectionDefinition } from './definition.ts';

const clientPart = lazyPart('MCP client', () => import('./connection.ts'));

/** Connects to a remote MCP server and adapts the tools it lists (connection.ts). */
export async function createMcpConnection(definition: McpConnectionDefinition): Promise<McpConnection> {
  return (await clientPart()).createMcpConnection(definition);
}
