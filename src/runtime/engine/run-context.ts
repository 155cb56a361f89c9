/**
 * What the parts of a response loop share: the run they serve (response-run.ts) as the turn
 * stream, the tool batch, the hook seams, task runs and compaction see it, and what the run needs
 * from the engine that started it. Types only, so every part may import it.
 */
import type { AgentSandbox } from './agent-sandbox.ts';
import type { Conversation } from './conversation.ts';
import type { ConversationWriter } from './conversation-writer.ts';
import type { ConversationView, LiveConversation } from './conversation-view.ts';
import type { ProbedEngine } from '../store/crash-probe.ts';
import type { ToolDefinition } from '../authoring/define-tool.ts';
import type { Agent } from '../authoring/identity.ts';
import type { FlueExecutionContext } from '../common/instrumentation.ts';
import type { ConversationRecord } from '../store/records.ts';
import type { RenderResult } from '../authoring/render.ts';
import type { SubmissionRow } from '../store/sql-store.ts';
import type { SubagentDefinition } from '../authoring/subagents.ts';
import type { DeliveredMessageInput, DispatchReceipt, FlueHarness, FlueLogger } from '../common/types.ts';

/** What a run asks of the engine that started it (the engine implements it). */
export interface RunEngine {
  readonly env: Record<string, unknown>;
  /** A drain finishes the response in progress; queued deliveries wait for the next start. */
  readonly isStopping: boolean;
  /** What the crash probe is told reached a point. */
  readonly probed: ProbedEngine;
  /** `useDispatchMessage()`: a real delivery to the agent's own instance. */
  dispatchFromAgent(live: LiveConversation, message: DeliveredMessageInput): Promise<DispatchReceipt>;
  emitFor(live: LiveConversation, submissionId: string | undefined, type: string, payload?: Record<string, unknown>): void;
}

/**
 * A delegated task's child conversation (task-run.ts): the same loop over the child's own stream,
 * inside the parent's attempt (same submission row, deadline and signal), with the delegate's
 * render, the parent's environment and a model latched from the parent turn's.
 */
export interface Delegation {
  subagent: SubagentDefinition;
  depth: number;
  environment: AgentSandbox;
  model: NonNullable<RenderResult['model']>;
  /** The child's session name (what its events' `session` says), and the `task` call it runs for. */
  session: string;
  parentSession: string;
  taskId: string;
  /** The stream whose attachment store holds the bytes of forwarded attachments (the root's). */
  attachmentStream: string;
}

/** A delegate's loop, as the task run that drives it sees it. */
export interface DelegateRun {
  execute(): Promise<void>;
  abort(reason: unknown): void;
  dispose(): Promise<void>;
}

/** One attempt's response loop over one conversation, as its parts see it. */
export interface RunContext {
  readonly engine: RunEngine;
  readonly writer: ConversationWriter;
  readonly view: ConversationView;
  readonly live: LiveConversation;
  readonly conv: Conversation;
  readonly row: SubmissionRow;
  readonly agent: Agent;
  readonly signal: AbortSignal;
  readonly abortReason: unknown;
  /** Ends this attempt's work: `reason` becomes the signal's reason and `abortReason`. */
  abort(reason: unknown): void;
  /** The agent's environment; a delegate shares its parent's. */
  readonly environment: AgentSandbox;
  /** Delegation depth of this conversation (the main conversation is 0). */
  readonly depth: number;
  /** This conversation's session name: `'default'` for the main one, `task:…` for a delegate's. */
  readonly session: string;
  /** Where attachment bytes live: the root conversation's stream (a delegate forwards refs). */
  readonly attachmentStream: string;
  /** Model, thinking level and compaction as latched by the first render of this attempt. */
  readonly model: RenderResult['model'];
  readonly responseMessageId: string;
  /** Metadata the `useResponseStart` callbacks returned; the response's first step carries it. */
  startMetadata: Record<string, unknown> | undefined;
  /** Steps this attempt completed: their tool calls run fresh; others are recovered. */
  readonly freshSteps: Set<string>;
  /** The tool set of the latest turn: what a fresh batch's calls resolve against. */
  lastTools: Map<string, ToolDefinition>;
  /** The live roster of the latest turn's render: what `task` calls resolve against. */
  subagents: readonly SubagentDefinition[];
  /** Whether `usePersistentState` writes are waiting for the next commit. */
  readonly hasStateWrites: boolean;
  render(): RenderResult;
  /** Renders, then brings the environment in line with the render (a turn boundary). */
  renderWithEnvironment(): Promise<RenderResult>;
  commit(records: ConversationRecord[]): void;
  /** Commits a batch together with the pending state writes it explains. */
  commitWithState(records: ConversationRecord[]): void;
  logger(provenance: Record<string, unknown>): FlueLogger;
  /** A harness over this response; `scope` (a tool call's, by default the response's) closes it. */
  harness(depth?: number, scope?: AbortSignal): FlueHarness;
  /** A `harness: true` tool's harness: one delegation level below this conversation, within the cap. */
  toolHarness(scope: AbortSignal): FlueHarness;
  /** What interceptors are told about where an operation runs (the ids `observe()` events carry). */
  executionContext(): FlueExecutionContext;
  /** Where this run is, for the crash probe (crash-probe.ts). */
  probeSite(): { engine: ProbedEngine; agent: string; instanceId: string; submissionId: string };
  /** A delegate's loop over a child conversation, inside this attempt. */
  delegateTo(child: LiveConversation, delegation: Delegation): DelegateRun;
}
