/**
 * One tool call of a model step, for both model loops (the conversation's tool batch and a
 * harness prompt's scratch conversation): the framework's `task` tool, an environment's built-in
 * tools and `defineTool` tools, run inside the installed interceptors. Every failure is an error
 * outcome the model sees; nothing here throws for a tool's sake.
 */
import type { ToolCall } from '@earendil-works/pi-ai';
import { type AgentSandbox, runBuiltinTool } from './agent-sandbox.ts';
import type { ToolDefinition } from '../authoring/define-tool.ts';
import { ToolInputValidationError } from '../common/errors.ts';
import { type FlueExecutionContext, intercept } from '../common/instrumentation.ts';
import type { ToolOutcome } from '../store/records.ts';
import { carryContentNote } from '../store/record-packing.ts';
import { toolAnswers } from './tool-answers.ts';
import type { RenderResult } from '../authoring/render.ts';
import { activateSkillTool, hasSkillResources, readSkillResourceTool } from '../skills/tools.ts';
import { taskTool } from '../authoring/subagents.ts';
import { type ToolCallEnvironment, runToolCall } from '../tools/tool-runner.ts';
import type { FlueHarness, FlueLogger } from '../common/types.ts';

/** Where a tool call runs: what each loop supplies. */
export interface ToolCallSite {
  signal: AbortSignal;
  /** What interceptors are told about where the call runs (with the issuing turn's id). */
  context: FlueExecutionContext;
  /** The agent's environment: its built-in tools, when it declared a sandbox. */
  environment?: AgentSandbox;
  /** Runs a `task` call as a recorded child conversation. */
  task(call: ToolCall): Promise<{ isError: boolean; content: string }>;
  /** The logger a `defineTool` call's `log` writes to (asked once per call, before `runOptions`). */
  log(call: ToolCall): FlueLogger;
  /** A `harness: true` tool's harness, scoped to the call. */
  harness(scope: AbortSignal): FlueHarness;
  /** Further pipeline options for a `defineTool` call (durable steps, the crash probe). */
  runOptions?(call: ToolCall, tool: ToolDefinition): Pick<ToolCallEnvironment, 'onRun' | 'step'>;
}

/**
 * Runs one call (`tool` is the call's tool in the turn's set, if any) inside the interceptors; the
 * outcome is what the log keeps (no `aborted`, no `error`).
 */
export function dispatchToolCall(call: ToolCall, tool: ToolDefinition | undefined, site: ToolCallSite): Promise<ToolOutcome> {
  return intercept(
    () => [{ type: 'tool', toolCallId: call.id, toolName: call.name }, site.context],
    () => routeToolCall(call, tool, site),
  );
}

/** Which kind of tool answers the call: the `task` tool, an environment built-in, or a `defineTool` tool's run. */
async function routeToolCall(call: ToolCall, tool: ToolDefinition | undefined, site: ToolCallSite): Promise<ToolOutcome> {
  const named = { toolCallId: call.id, toolName: call.name };
  const answered = toolAnswers()?.({ context: site.context, toolCallId: call.id, toolName: call.name, arguments: call.arguments });
  if (answered !== undefined) return { ...named, ...answered, durationMs: 0 };
  if (tool === taskTool) {
    const started = Date.now();
    const outcome = await site.task(call);
    return { ...named, ...outcome, ...(outcome.isError ? {} : { output: outcome.content }), durationMs: Date.now() - started };
  }
  const builtin = tool === undefined ? undefined : site.environment?.tools.get(call.name);
  if (builtin !== undefined) {
    const outcome = await runBuiltinTool(builtin, call.id, call.arguments, site.signal);
    return { ...named, ...outcome, ...(outcome.isError ? {} : { output: outcome.content }) };
  }
  if (tool === undefined) return { ...named, isError: true, content: `Tool "${call.name}" is not available.` };
  if (call.argumentsError !== undefined) {
    const error = new ToolInputValidationError(call.name, [{ message: `the arguments are not valid JSON (${call.argumentsError})` }]);
    return { ...named, isError: true, content: error.message };
  }
  const outcome = await runToolCall(tool, call.arguments, {
    toolCallId: call.id,
    signal: site.signal,
    log: site.log(call),
    ...site.runOptions?.(call, tool),
    ...(tool.harness ? { harness: (scope: AbortSignal) => site.harness(scope) } : {}),
  });
  const result: ToolOutcome = { ...named, isError: outcome.isError, content: modelText(tool, outcome), durationMs: outcome.durationMs! };
  if (!outcome.isError && outcome.output !== undefined) result.output = outcome.output;
  if (outcome.terminate === true) result.terminate = true;
  carryContentNote(outcome, result);
  return result;
}

/** The skill tools answer in prose: the model reads their text as is, not JSON-quoted. */
const PROSE_TOOLS = new Set(['activate_skill', 'read_skill_resource']);

function modelText(tool: ToolDefinition, outcome: { isError: boolean; content: string; output?: unknown }): string {
  return PROSE_TOOLS.has(tool.name) && !outcome.isError && typeof outcome.output === 'string' ? outcome.output : outcome.content;
}

/** The framework's own tools for a render: `task` always (static spec), the skill tools with skills. */
export function frameworkTools(render: RenderResult): ToolDefinition[] {
  return [
    taskTool,
    ...(render.skills.length > 0 ? [activateSkillTool(render.skills)] : []),
    ...(hasSkillResources(render.skills) ? [readSkillResourceTool(render.skills)] : []),
  ];
}
