/**
 * The tool calls of one model step, run together and committed as one `tool_results` batch with
 * the persistent state writes they made. A batch this attempt's own step issued runs fresh; one a
 * crash left unresolved is recovered: a `task` call resumes its child conversation, a durable tool
 * re-runs with its finished steps replayed, and any other call gets the interrupted marker
 * (durability.md §6.2).
 */
import type { ToolCall } from '@earendil-works/pi-ai';
import { crashProbe } from '../store/crash-probe.ts';
import type { ToolDefinition } from '../authoring/define-tool.ts';
import { abortError } from '../common/errors.ts';
import { INTERRUPTED_TOOL_TEXT, type ToolOutcome } from '../store/records.ts';
import type { RunContext } from './run-context.ts';
import { taskTool } from '../authoring/subagents.ts';
import { runTaskCall } from './task-run.ts';
import { type ToolCallSite, dispatchToolCall } from './tool-dispatch.ts';
import { recordingLogger } from '../store/tool-log.ts';
import { createToolStep } from '../tools/tool-step.ts';
import type { FlueLogger } from '../common/types.ts';

export async function runToolBatch(run: RunContext): Promise<void> {
  const pending = run.conv.tail.pendingToolCalls!;
  const fresh = run.freshSteps.has(pending.stepId);
  // A recovered batch is a turn boundary of this attempt: the environment (which recovered
  // `task` children share) is brought in line with the render first.
  const tools = fresh ? run.lastTools : new Map((await run.renderWithEnvironment()).tools.map((tool) => [tool.name, tool]));
  const settled = await Promise.allSettled(
    pending.calls.map((call) => {
      // Recovery resumes a delegated task's child conversation to completion (durability.md §6.2).
      if (!fresh && call.name === taskTool.name) return runCall(run, call, taskTool, pending.stepId, true);
      const tool = tools.get(call.name);
      // Recovery re-runs only durable tools; an ordinary call's outcome is unknown (seed).
      if (!fresh && !(tool?.durable === true)) return Promise.resolve(interruptedOutcome(call));
      return runCall(run, call, tool, pending.stepId, false);
    }),
  );
  if (run.signal.aborted) throw run.abortReason ?? abortError();
  // Stopping or the deadline inside a child leaves the whole batch unresolved for recovery.
  const failed = settled.find((result) => result.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
  const outcomes = settled.map((result) => (result as PromiseFulfilledResult<ToolOutcome>).value);
  run.commitWithState([
    {
      type: 'tool_results',
      stepId: pending.stepId,
      messageId: pending.messageId,
      submissionId: pending.submissionId,
      outcomes,
      ts: new Date().toISOString(),
    },
  ]);
}

/** One call of the batch: the shared dispatch, with the conversation's logs, durable steps and probe points. */
async function runCall(run: RunContext, call: ToolCall, tool: ToolDefinition | undefined, stepId: string, recovering: boolean): Promise<ToolOutcome> {
  let logger: FlueLogger | undefined;
  let recorded: ReturnType<typeof recordingLogger> | undefined;
  const site: ToolCallSite = {
    signal: run.signal,
    context: { ...run.executionContext(), turnId: stepId },
    environment: run.environment,
    task: (taskCall) =>
      runTaskCall(run, taskCall, {
        stepId,
        subagents: recovering ? run.render().subagents : run.subagents,
        depth: run.depth,
        signal: run.signal,
        recovering,
      }),
    log: (toolCall) => {
      logger = run.logger({ tool: toolCall.name, toolCallId: toolCall.id });
      recorded = recordingLogger(logger);
      return recorded.log;
    },
    harness: (scope) => run.toolHarness(scope),
    runOptions: (toolCall, defined) => durableOptions(run, toolCall, defined, stepId, logger!),
  };
  const outcome = await dispatchToolCall(call, tool, site);
  const lines = recorded?.lines();
  if (lines !== undefined) outcome.logs = lines;
  return outcome;
}

/** The crash probe's `tool` point, and for a durable tool its step memos. */
function durableOptions(run: RunContext, call: ToolCall, tool: ToolDefinition, stepId: string, log: FlueLogger) {
  const site = { tool: call.name, toolCallId: call.id };
  const onRun = () => crashProbe()?.({ point: 'tool', ...run.probeSite(), ...site });
  if (!tool.durable) return { onRun };
  // Scoped to the step that issued the call: some providers reuse tool-call ids across responses.
  const memo = run.writer.stepMemo(run.live, `${stepId}:${call.id}`);
  return {
    onRun,
    step: createToolStep({
      toolCallId: call.id,
      toolName: call.name,
      lookup: (name) => {
        const recorded = memo.lookup(name);
        // Nothing recorded: step.do runs the fn now.
        if (!recorded.found) crashProbe()?.({ point: 'step-run', ...run.probeSite(), ...site, step: name });
        return recorded;
      },
      record: (name, value) => {
        // The fn finished and its memo is not stored yet: a crash here re-runs it.
        crashProbe()?.({ point: 'step', ...run.probeSite(), ...site, step: name });
        memo.record(name, value);
      },
      log,
    }),
  };
}

function interruptedOutcome(call: ToolCall): ToolOutcome {
  return { toolCallId: call.id, toolName: call.name, isError: true, content: INTERRUPTED_TOOL_TEXT };
}
