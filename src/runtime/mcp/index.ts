export { defineMcpConnection, validateMcpConnectionDefinition, mcpConnectionUrl } from './definition.ts';
export type { McpAuth, McpConnectionDefinition, McpDefinitionSite, McpTransport } from './definition.ts';
export { createMcpConnection } from './connect.ts';
export type { McpConnection } from './connection.ts';
export { resolveMcpConnections } from './resolve.ts';
export type { McpConnect, McpConnectionFailure, ResolvedMcpConnections } from './resolve.ts';
