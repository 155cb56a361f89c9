/**
 * What one attempt opens outside the log and keeps for its turns: the MCP connections (resolved
 * once, from the first render that declares any) and the workspace context of each sandbox the
 * attempt sees (discovered once per sandbox). `dispose()` closes what was opened.
 */
import type { ToolDefinition } from '../authoring/define-tool.ts';
import type { RenderResult } from '../authoring/render.ts';
import { type McpConnectionFailure, type ResolvedMcpConnections, resolveMcpConnections } from '../mcp/resolve.ts';
import type { Sandbox } from '../sandbox/types.ts';
import { type WorkspaceContext, discoverWorkspace, withWorkspaceContext } from '../skills/workspace-context.ts';

export class AttemptResources {
  private mcp: Promise<ResolvedMcpConnections> | undefined;
  private workspace: { sandbox: Sandbox; context: Promise<WorkspaceContext>; resolved?: WorkspaceContext } | undefined;

  /**
   * MCP tools are submission-scoped: connected once per attempt. `unavailable` lists the optional
   * servers that failed, on the call that connected them only (a failing required one throws).
   */
  async mcpTools(rendered: RenderResult): Promise<{ tools: ToolDefinition[]; unavailable: readonly McpConnectionFailure[] }> {
    let unavailable: readonly McpConnectionFailure[] = [];
    if (this.mcp === undefined) {
      if (rendered.mcpConnections.length === 0) return { tools: [], unavailable };
      this.mcp = resolveMcpConnections(rendered.mcpConnections);
      unavailable = (await this.mcp).failures;
    }
    return { tools: [...(await this.mcp).tools], unavailable };
  }

  /** The render with the workspace context of `sandbox` (the environment as the boundary left it). */
  async withWorkspace(rendered: RenderResult, sandbox: Sandbox | undefined): Promise<RenderResult> {
    if (sandbox === undefined) return rendered;
    // Discovered once per sandbox an attempt sees (a delegate's is the one at its own cwd).
    if (this.workspace?.sandbox !== sandbox) {
      const workspace: NonNullable<AttemptResources['workspace']> = { sandbox, context: discoverWorkspace(sandbox) };
      this.workspace = workspace;
      void workspace.context.then(
        (context) => (workspace.resolved = context),
        () => {},
      );
    }
    return withWorkspaceContext(rendered, await this.workspace.context);
  }

  /** A harness prompt sees the workspace context its turn saw (it cannot wait for discovery). */
  withDiscoveredWorkspace(rendered: RenderResult, sandbox: Sandbox | undefined): RenderResult {
    const workspace = this.workspace;
    if (workspace?.resolved === undefined || workspace.sandbox !== sandbox) return rendered;
    return withWorkspaceContext(rendered, workspace.resolved);
  }

  /** Closes what the attempt opened (MCP clients). */
  async dispose(): Promise<void> {
    const mcp = this.mcp;
    this.mcp = undefined;
    if (mcp !== undefined)
      await mcp.then(
        (resolved) => resolved.close(),
        () => undefined,
      );
  }
}
