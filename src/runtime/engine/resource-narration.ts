/**
 * What the model is told about its resources at a turn boundary: the render is compared with the
 * last narrated snapshot. First contact records the baseline silently (the prompt catalogs are
 * rendered from it). Otherwise an instruction change is marked with an `instructions` signal, and
 * a sandbox presence flip is restated by one `environment` signal that supersedes the boundary's
 * `resources` deltas. Signals and the new snapshot are one batch; framework signals never move the
 * `useDelivery()` cursor.
 */
import type { Conversation } from './conversation.ts';
import type { ToolDefinition } from '../authoring/define-tool.ts';
import {
  INSTRUCTIONS_UPDATED_BODY,
  environmentBody,
  mcpUnavailableBody,
  narrate,
  resourceSnapshot,
  sameSnapshot,
} from '../authoring/narration.ts';
import type { RenderResult } from '../authoring/render.ts';
import { newId } from '../common/ids.ts';
import type { McpConnectionFailure } from '../mcp/resolve.ts';
import type { ConversationRecord } from '../store/records.ts';
import type { Sandbox } from '../sandbox/types.ts';
import type { FlueLogger } from '../common/types.ts';

/** The boundary's narration batch; empty when nothing changed since the last snapshot. */
export function narrateResourceChanges({
  conv,
  submissionId,
  tools,
  builtinTools,
  rendered,
  sandbox,
}: {
  conv: Conversation;
  submissionId: string;
  tools: readonly ToolDefinition[];
  /** The names of `tools` the runtime added (its own and the sandbox's), recorded beside the snapshot. */
  builtinTools: readonly string[];
  rendered: RenderResult;
  /** The environment's sandbox as this boundary left it (a delegate shares its parent's). */
  sandbox: Sandbox | undefined;
}): ConversationRecord[] {
  const current = resourceSnapshot({
    tools,
    skills: rendered.skills,
    subagents: rendered.subagents,
    instructions: rendered.instructions,
    sandbox: sandbox !== undefined,
  });
  // Narration and the frozen prompt catalogs (skills-subagents-mcp.md §4).
  const previous = conv.resourceSnapshot;
  if (previous === undefined || conv.resourceBaseline === undefined)
    return [{ type: 'resource_snapshot', baseline: true, snapshot: current, builtinTools: [...builtinTools] }];
  if (sameSnapshot(previous, current)) return [];
  const signals: { signalType: string; body: string; attributes?: Record<string, string> }[] = [];
  if (previous.instructionsDigest !== current.instructionsDigest)
    signals.push({ signalType: 'instructions', body: INSTRUCTIONS_UPDATED_BODY });
  if (previous.sandbox !== current.sandbox) {
    signals.push({
      signalType: 'environment',
      body: environmentBody({
        cwd: current.sandbox ? sandbox?.cwd : undefined,
        tools: current.tools.map((tool) => tool.name),
        skills: current.skills,
        subagents: current.subagents,
      }),
    });
  } else {
    for (const { kind, body } of narrate(previous, current))
      signals.push({ signalType: 'resources', body, attributes: { resource: kind } });
  }
  const ts = new Date().toISOString();
  return [
    ...signals.map(
      (signal): ConversationRecord => ({ type: 'signal', messageId: newId('msg'), submissionId, origin: 'framework', ...signal, ts }),
    ),
    { type: 'resource_snapshot', baseline: false, snapshot: current, builtinTools: [...builtinTools] },
  ];
}

/** A failing optional MCP server mounts nothing: the model is told, and the log says why. */
export function narrateMcpUnavailable(
  failures: readonly McpConnectionFailure[],
  { submissionId, logger }: { submissionId: string; logger: (provenance: Record<string, unknown>) => FlueLogger },
): ConversationRecord {
  for (const failure of failures)
    logger({ mcp: failure.name }).warn(`[flue:mcp] optional server "${failure.name}" is unavailable`, { reason: failure.reason });
  return {
    type: 'signal',
    messageId: newId('msg'),
    submissionId,
    origin: 'framework',
    signalType: 'resources',
    body: mcpUnavailableBody(failures),
    attributes: { resource: 'mcp' },
    ts: new Date().toISOString(),
  };
}
