/**
 * Delegated tasks as recorded child conversations.
 *
 * Each `task` call runs its delegate in a child conversation of its own in the same store, keyed
 * deterministically by the delegating conversation's key, the step that issued the call and the
 * call id (`childConversationKey`, store/conversation-key.ts). The child is born (its
 * `conversation_created` and the task prompt) in the same transaction as a
 * `child_session_retained` record on the parent (the response writer's `openChild`), then driven by the
 * same response loop as the main conversation over the child's log, inside the parent's
 * attempt and budget: its records carry the parent's submission and attempt, and the parent's
 * deadline applies.
 *
 * Recovery is the same code: a `task` call left unresolved by a crash opens the child conversation that
 * already exists and continues it from where its log stands (an interrupted stream is converged and
 * continued, an unfinished tool batch repaired, nested tasks resumed recursively); its real final
 * text becomes the parent's tool result.
 */
import type { ToolCall } from '@earendil-works/pi-ai';
import type { LiveConversation } from './conversation-view.ts';
import { type ConversationKey, childConversationKey } from '../store/conversation-key.ts';
import type { AgentSandbox } from './agent-sandbox.ts';
import type { LatchedModel } from './response-render.ts';
import type { ResponseWriter } from './response-writer.ts';
import { AttachmentNotAvailableError, SubmissionTimeoutError } from '../common/errors.ts';
import { errorInfo } from '../common/events.ts';
import { newId } from '../common/ids.ts';
import { type AttachmentRecordRef, type ChildConversationRef, type ConversationRecord, interruptedToolText } from '../store/records.ts';
import { RunInterrupted } from './run-signals.ts';
import { type SubagentDefinition, resolveTask } from '../authoring/subagents.ts';

export type { ChildConversation } from './conversation-reader.ts';

/** Where a `task` call was made. */
export interface TaskSite {
  /** The step (or, in a harness scratch conversation, a fresh id) that issued the call. */
  stepId: string;
  /** The live roster the call resolves against. */
  subagents: readonly SubagentDefinition[];
  /** The delegating conversation's delegation depth (the main conversation is 0). */
  depth: number;
  signal: AbortSignal;
  /** Set when a harness scratch conversation made the call: the harness's name. */
  harness?: string;
  /** A crash left this call unresolved: continue its child, or settle it as an error. */
  recovering?: boolean;
}

/** What the parent model sees of a `task` call. */
export interface TaskOutcome {
  isError: boolean;
  content: string;
}

/** What a task run reads of the delegating response, and how it writes to its conversation. */
export interface DelegatingResponse {
  live: LiveConversation;
  submissionId: string;
  environment: AgentSandbox;
  /** The model the delegating response latched; a delegate inherits what its subagent leaves unset. */
  model: LatchedModel;
  session: string;
  /** The conversation whose attachment store holds the bytes of forwarded attachments (the root's). */
  attachmentKey: ConversationKey;
  /** The id of the child conversation at `key`, when one exists. */
  childConversationId(key: ConversationKey): string | undefined;
  /** Publishes an event of the delegating submission. */
  emit(type: string, payload: Record<string, unknown>): void;
  /** The delegate's loop over a child conversation, inside the delegating attempt. */
  delegateTo(child: LiveConversation, delegation: Delegation): DelegateRun;
  writer: ResponseWriter;
}

/**
 * A delegated task's child conversation: the same loop over the child's own log, inside the
 * parent's attempt (same submission row, deadline and signal), with the delegate's render, the
 * parent's environment and a model latched from the parent turn's.
 */
export interface Delegation {
  subagent: SubagentDefinition;
  depth: number;
  environment: AgentSandbox;
  model: LatchedModel;
  /** The child's session name (what its events' `session` says), and the `task` call it runs for. */
  session: string;
  parentSession: string;
  taskId: string;
  /** The conversation whose attachment store holds the bytes of forwarded attachments (the root's). */
  attachmentKey: ConversationKey;
}

/** A delegate's loop, as the task run that drives it sees it. */
export interface DelegateRun {
  execute(): Promise<void>;
  abort(reason: unknown): void;
  dispose(): Promise<void>;
}

/** The session name of a task call's child conversation (opaque; unique per instance, as step ids are). */
function taskSessionName(stepId: string, toolCallId: string): string {
  return `task:${stepId}/${toolCallId}`;
}

/**
 * Runs (or resumes) one `task` call of the delegating conversation; the outcome is what the parent model
 * sees. Stopping, a stalled model stream, the parent's abort and the parent's deadline propagate
 * (the call stays unresolved, so recovery resumes it); any other failure of the child is the
 * tool's error result.
 *
 * Before a new child is born the call's `attachments` are resolved against the delegating
 * conversation and its `cwd` against the delegating sandbox; either failing is the tool's error
 * result and no child is created. A child that exists (recovery) is continued as it was born.
 * Every run of a child publishes `task_start` and then exactly one `task`.
 */
export async function runTaskCall(parent: DelegatingResponse, call: ToolCall, site: TaskSite): Promise<TaskOutcome> {
  const key = childConversationKey(parent.live.key, site.stepId, call.id);
  const resolved = resolveTask(call.arguments, site.subagents, site.depth);
  const existing = site.recovering ? parent.childConversationId(key) : undefined;
  if (resolved.kind === 'result') {
    // A delegate that was running when the crash hit but is no longer declared: an error outcome.
    if (existing !== undefined && resolved.undeclared) return { isError: true, content: interruptedToolText(existing) };
    return { isError: resolved.isError, content: resolved.content };
  }
  const { subagent } = resolved;
  let attachments: AttachmentRecordRef[] = [];
  let environment = parent.environment;
  let cwd = resolved.cwd;
  if (resolved.cwd !== undefined) {
    const placed = await taskEnvironment(parent.environment, resolved.cwd, existing === undefined);
    if ('error' in placed) return { isError: true, content: placed.error };
    environment = placed.environment;
    cwd = placed.cwd;
  }
  if (existing === undefined) {
    for (const id of resolved.attachmentIds) {
      const ref = parent.live.conv.attachments.get(id);
      if (ref === undefined) return { isError: true, content: new AttachmentNotAvailableError(id).message };
      attachments.push(ref);
    }
  }
  const session = taskSessionName(site.stepId, call.id);
  const child = openChild({ parent, key, call, site, subagent, prompt: resolved.prompt, attachments, session });
  attachments = [...child.conv.attachments.values()];
  const parentModel = parent.model;
  const delegate = parent.delegateTo(child, {
    subagent,
    depth: resolved.depth,
    environment,
    model: {
      ...parentModel,
      spec: subagent.model ?? parentModel.spec,
      thinkingLevel: subagent.thinkingLevel ?? parentModel.thinkingLevel,
    },
    session,
    parentSession: parent.session,
    taskId: call.id,
    attachmentKey: parent.attachmentKey,
  });
  const correlation = {
    parentSession: parent.session,
    session,
    conversationId: child.conv.conversationId,
    ...(site.harness === undefined ? {} : { harness: site.harness }),
  };
  const started = Date.now();
  parent.emit('task_start', {
    taskId: call.id,
    prompt: resolved.prompt,
    agent: subagent.name,
    ...(cwd === undefined ? {} : { cwd }),
    ...correlation,
    toolCallId: call.id,
    agentInput: {
      text: resolved.prompt,
      ...(attachments.length === 0 ? {} : { images: attachments.filter((a) => a.type === 'image').map((a) => ({ mimeType: a.mimeType })) }),
    },
  });
  const finished = (isError: boolean, result: string, error?: unknown) =>
    parent.emit('task', {
      taskId: call.id,
      agent: subagent.name,
      isError,
      result,
      durationMs: Date.now() - started,
      ...correlation,
      ...(error === undefined ? {} : { errorInfo: errorInfo(error) }),
    });
  const follow = () => delegate.abort(site.signal.reason);
  if (site.signal.aborted) follow();
  else site.signal.addEventListener('abort', follow, { once: true });
  try {
    await delegate.execute();
    const content = child.conv.finalAssistantText() || '(task completed with no text)';
    finished(false, content);
    return { isError: false, content };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    finished(true, message, error);
    if (site.signal.aborted || error instanceof RunInterrupted || error instanceof SubmissionTimeoutError) throw error;
    return { isError: true, content: message };
  } finally {
    site.signal.removeEventListener('abort', follow);
    await delegate.dispose();
  }
}

/**
 * Where a task with a `cwd` runs: the delegating environment re-pointed at `cwd`, resolved
 * against the delegating sandbox's cwd. A new child needs an existing directory the sandbox lets
 * it use (an adapter with a root, like `local()`, refuses one outside it); without a sandbox a
 * `cwd` is refused, as there is nothing to point it at. A child being resumed is placed again
 * without the checks (it was born there), and without a sandbox it continues without one.
 */
async function taskEnvironment(
  parent: AgentSandbox,
  requested: string,
  check: boolean,
): Promise<{ environment: AgentSandbox; cwd: string } | { error: string }> {
  const sandbox = parent.current;
  if (sandbox === undefined) {
    return check
      ? { error: `The task cwd "${requested}" cannot be used: this agent has no sandbox.` }
      : { environment: parent, cwd: requested };
  }
  const cwd = sandbox.resolvePath(requested);
  if (check) {
    let directory: boolean;
    try {
      directory = (await sandbox.stat(cwd)).isDirectory;
    } catch (error) {
      return { error: `The task cwd "${requested}" cannot be used: ${error instanceof Error ? error.message : String(error)}` };
    }
    if (!directory) return { error: `The task cwd "${requested}" cannot be used: ${cwd} is not a directory.` };
  }
  return { environment: parent.at(cwd), cwd };
}

/** The child's live fold; a new child is born here, retained on the parent in the same transaction. */
function openChild({
  parent,
  key,
  call,
  site,
  subagent,
  prompt,
  attachments,
  session,
}: {
  parent: DelegatingResponse;
  key: ConversationKey;
  call: ToolCall;
  site: TaskSite;
  subagent: SubagentDefinition;
  prompt: string;
  attachments: AttachmentRecordRef[];
  session: string;
}): LiveConversation {
  return parent.writer.openChild({
    key,
    birth: () => {
      const ts = new Date().toISOString();
      const conversationId = newId('conv');
      const records: ConversationRecord[] = [
        {
          type: 'conversation_created',
          conversationId,
          uid: parent.live.conv.uid ?? '',
          kind: 'task',
          parentConversationId: parent.live.conv.conversationId,
          taskId: call.id,
          agent: subagent.name,
          ts,
        },
        {
          type: 'user_message',
          messageId: newId('msg'),
          submissionId: parent.submissionId,
          // The delegating agent (its model) wrote the prompt, not whoever delivered the parent's message.
          deliveryOrigin: 'agent',
          body: prompt,
          // References only: the bytes stay where they were delivered (the root's attachment store).
          ...(attachments.length === 0 ? {} : { attachments }),
          ts,
        },
      ];
      const ref: ChildConversationRef = {
        type: 'task',
        conversationId,
        stream: key,
        agent: subagent.name,
        taskId: call.id,
        harness: site.harness ?? 'default',
        session,
        parentToolCallId: call.id,
        ...(site.harness === undefined ? { parentAssistantEntryId: site.stepId } : {}),
      };
      return { records, retained: { type: 'child_session_retained', child: ref, ts } };
    },
  });
}
