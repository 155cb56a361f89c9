/**
 * The tool calls of one model step, run together; the batch ends in one `tool_results` record,
 * which the loop commits with the persistent state writes the calls made. The loop says whether
 * the batch is fresh (its step completed in this attempt) or recovered (a crash left it
 * unresolved): a recovered `task` call resumes its child conversation, a recovered durable tool
 * re-runs with its finished steps replayed, and any other recovered call gets the interrupted
 * marker.
 *
 * The tool chain, one verb per layer: `runToolBatch` (a step's calls) → `callTool` (one call, with
 * the conversation's logs, step memos and probe points) → `dispatchToolCall` (tool-dispatch.ts,
 * shared with harness prompts) → the tool's own run (tools/tool-runner.ts).
 */
import type { ToolCall } from '@earendil-works/pi-ai';
import type { AgentSandbox } from './agent-sandbox.ts';
import type { AttemptAbort } from './attempt-abort.ts';
import type { ResponseTail } from './conversation.ts';
import type { ResponseSite } from './response-site.ts';
import type { ResponseWriter } from './response-writer.ts';
import type { TaskOutcome, TaskSite } from './task-run.ts';
import { type ToolCallSite, dispatchToolCall } from './tool-dispatch.ts';
import { progressLogger } from './tool-progress.ts';
import { toolResultMessage } from './session-events.ts';
import { crashProbe } from '../store/crash-probe.ts';
import type { ToolDefinition } from '../authoring/define-tool.ts';
import { INTERRUPTED_TOOL_TEXT, type ConversationRecord, type ToolOutcome } from '../store/records.ts';
import { type SubagentDefinition, taskTool } from '../authoring/subagents.ts';
import { createToolStep } from '../tools/tool-step.ts';
import type { FlueHarness, FlueLogger } from '../common/types.ts';

/** What a tool batch reads. */
export interface ToolBatchInput {
  /** The step's calls that have no results yet (the conversation's tail). */
  batch: NonNullable<ResponseTail['pendingToolCalls']>;
  /** The batch's step completed in this attempt: its calls run. Otherwise the batch is recovered. */
  fresh: boolean;
  /** What the calls resolve against: the issuing turn's tool set and roster, or the recovery render's. */
  tools: ReadonlyMap<string, ToolDefinition>;
  subagents: readonly SubagentDefinition[];
  attempt: AttemptAbort;
  site: ResponseSite;
  environment: AgentSandbox;
  /** The conversation's delegation depth (the main conversation is 0). */
  depth: number;
  /** A `harness: true` tool's harness, scoped to the call. */
  harness(scope: AbortSignal): FlueHarness;
  /** Runs (or resumes) a `task` call as a child conversation (task-run.ts). */
  task(call: ToolCall, site: TaskSite): Promise<TaskOutcome>;
}

/** Runs the batch's calls; the `tool_results` record they come to. */
export async function runToolBatch(input: ToolBatchInput, writer: ResponseWriter): Promise<ConversationRecord> {
  const { batch, fresh, tools, attempt } = input;
  const settled = await Promise.allSettled(
    batch.calls.map((call) => {
      // Recovery resumes a delegated task's child conversation to completion (durability.md §6.2).
      if (!fresh && call.name === taskTool.name) return callTool(input, writer, call, taskTool);
      const tool = tools.get(call.name);
      // Recovery re-runs only durable tools; an ordinary call's outcome is unknown (seed).
      if (!fresh && !(tool?.durable === true)) return Promise.resolve(interruptedOutcome(call));
      return callTool(input, writer, call, tool);
    }),
  );
  attempt.throwIfAborted();
  // Stopping or the deadline inside a child leaves the whole batch unresolved for recovery.
  const failed = settled.find((result) => result.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
  const outcomes = settled.map((result) => (result as PromiseFulfilledResult<ToolOutcome>).value);
  return {
    type: 'tool_results',
    stepId: batch.stepId,
    messageId: batch.messageId,
    submissionId: batch.submissionId,
    outcomes,
    ts: new Date().toISOString(),
  };
}

/** One call of the batch: the shared dispatch, with the conversation's logs, durable steps and probe points. */
async function callTool(
  input: ToolBatchInput,
  writer: ResponseWriter,
  call: ToolCall,
  tool: ToolDefinition | undefined,
): Promise<ToolOutcome> {
  const { batch, attempt, site } = input;
  let logger: FlueLogger | undefined;
  let progress: ReturnType<typeof progressLogger> | undefined;
  const callSite: ToolCallSite = {
    signal: attempt.signal,
    context: { ...site.executionContext(), turnId: batch.stepId },
    environment: input.environment,
    task: (taskCall) =>
      input.task(taskCall, {
        stepId: batch.stepId,
        subagents: input.subagents,
        depth: input.depth,
        signal: attempt.signal,
        recovering: !input.fresh,
      }),
    log: (toolCall) => {
      logger = site.logger({ tool: toolCall.name, toolCallId: toolCall.id });
      progress = progressLogger(logger, {
        call: {
          stepId: batch.stepId,
          messageId: batch.messageId,
          submissionId: batch.submissionId,
          toolCallId: toolCall.id,
          toolName: toolCall.name,
        },
        budget: writer.progressBudget,
        commit: (record) => writer.commit([record]),
        following: writer.following,
        signal: attempt.signal,
      });
      return progress.log;
    },
    harness: (scope) => input.harness(scope),
    runOptions: (toolCall, defined) => durableOptions({ site, writer, call: toolCall, tool: defined, stepId: batch.stepId, log: logger! }),
  };
  const turnId = batch.stepId;
  site.emit(
    'tool_start',
    () => ({
      toolName: call.name,
      toolCallId: call.id,
      args: call.arguments,
      origin: 'model',
      ...(tool === undefined ? {} : { description: tool.description }),
    }),
    turnId,
  );
  let outcome: ToolOutcome;
  try {
    outcome = await dispatchToolCall(call, tool, callSite);
  } finally {
    // The call's last lines (and the dropped-lines marker) are committed before its result.
    progress?.finish();
  }
  // The terminal `tool` event waits for the batch to commit (response-run.ts); the message is now.
  site.emit('message_start', () => ({ message: toolResultMessage(outcome), turnId }), turnId);
  site.emit('message_end', () => ({ message: toolResultMessage(outcome), turnId }), turnId);
  return outcome;
}

/** The crash probe's `tool` point, and for a durable tool its step memos. */
function durableOptions({
  site,
  writer,
  call,
  tool,
  stepId,
  log,
}: {
  site: ResponseSite;
  writer: ResponseWriter;
  call: ToolCall;
  tool: ToolDefinition;
  stepId: string;
  log: FlueLogger;
}) {
  const named = { tool: call.name, toolCallId: call.id };
  const onRun = () => crashProbe()?.({ point: 'tool', ...site.probeSite(), ...named });
  if (!tool.durable) return { onRun };
  // Scoped to the step that issued the call: some providers reuse tool-call ids across responses.
  const memo = writer.stepMemo(`${stepId}:${call.id}`);
  return {
    onRun,
    step: createToolStep({
      toolCallId: call.id,
      toolName: call.name,
      lookup: (name) => {
        const recorded = memo.lookup(name);
        // Nothing recorded: step.do runs the fn now.
        if (!recorded.found) crashProbe()?.({ point: 'step-run', ...site.probeSite(), ...named, step: name });
        return recorded;
      },
      record: (name, value) => {
        // The fn finished and its memo is not stored yet: a crash here re-runs it.
        crashProbe()?.({ point: 'step', ...site.probeSite(), ...named, step: name });
        memo.record(name, value);
      },
      log,
    }),
  };
}

function interruptedOutcome(call: ToolCall): ToolOutcome {
  return { toolCallId: call.id, toolName: call.name, isError: true, content: INTERRUPTED_TOOL_TEXT };
}
