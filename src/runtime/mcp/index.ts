export { defineMcpConnection, validateMcpConnectionDefinition, mcpConnectionUrl } from './definition.ts';
export type { McpAuth, McpConnectionDefinition, McpDefinitionSite, McpTransport } from './definition.ts';
export {
  createMcpConnection,
  flattenMcpToolResult,
  mcpToolName,
  sanitizeMcpNamePart,
  McpConnectionError,
  McpToolResultError,
  MCP_CLIENT_INFO,
} from './connection.ts';
export type { McpConnection } from './connection.ts';
export { resolveMcpConnections } from './resolve.ts';
export type { McpConnect, McpConnectionFailure, ResolvedMcpConnections } from './resolve.ts';
