/**
 * `useMcpConnection()`, in its own module so a Worker whose agents never call it does not bundle
 * the MCP client (the package is `sideEffects: false`): the engine reaches the client only through
 * the connector this hook installs.
 */
import { rootFrame } from '../authoring/hooks.ts';
import { createMcpConnection } from './connect.ts';
import { type McpConnectionDefinition, validateMcpConnectionDefinition } from './definition.ts';
import { installMcpConnector } from './resolve.ts';

/**
 * Mounts a remote MCP server's tools as `mcp__<server>__<tool>`. Connections are resolved once per
 * submission attempt, from the first render's declarations; root frames only.
 */
export function useMcpConnection(connection: McpConnectionDefinition): void {
  const frame = rootFrame('useMcpConnection');
  const definition = validateMcpConnectionDefinition(connection, 'useMcpConnection');
  if (frame.mcpConnections.some((declared) => declared.name === definition.name)) {
    throw new Error(`[flue] useMcpConnection("${definition.name}") was declared twice in one render.`);
  }
  installMcpConnector(createMcpConnection);
  frame.mcpConnections.push(definition);
}
