/**
 * Where a response runs, as the things outside the log are told: log lines, interceptors (the ids
 * `observe()` events carry) and the crash probe. A delegated task's response says which task and
 * session it runs for.
 */
import type { LiveConversation } from './conversation-view.ts';
import { type EmitScope, createLogger, emit, observed } from '../common/events.ts';
import type { FlueExecutionContext } from '../common/instrumentation.ts';
import type { ProbedEngine } from '../store/crash-probe.ts';
import type { FlueLogger } from '../common/types.ts';

/** A delegated task's place: its session, the delegating one and the `task` call it runs for. */
export interface TaskPlace {
  session: string;
  parentSession: string;
  taskId: string;
}

export class ResponseSite {
  private readonly live: LiveConversation;
  readonly submissionId: string;
  private readonly env: Record<string, unknown>;
  private readonly probed: ProbedEngine;
  private readonly task: TaskPlace | undefined;

  constructor(options: {
    live: LiveConversation;
    submissionId: string;
    env: Record<string, unknown>;
    probed: ProbedEngine;
    task?: TaskPlace;
  }) {
    this.live = options.live;
    this.submissionId = options.submissionId;
    this.env = options.env;
    this.probed = options.probed;
    this.task = options.task;
  }

  /** This conversation's session name: `'default'` for the main one, `task:…` for a delegate's. */
  get session(): string {
    return this.task?.session ?? 'default';
  }

  logger(provenance: Record<string, unknown>): FlueLogger {
    const task = this.task;
    return createLogger(
      {
        instanceId: this.live.instanceId,
        agentName: this.live.agentName,
        env: this.env,
        submissionId: this.submissionId,
        // Inside a delegated task, lines say which task and session they come from (events.md §4).
        ...(task === undefined
          ? {}
          : {
              correlation: {
                conversationId: this.live.conv.conversationId,
                session: task.session,
                parentSession: task.parentSession,
                taskId: task.taskId,
              },
            }),
      },
      provenance,
    );
  }

  /** Someone observes events: hot emitters ask before they build anything. */
  get observed(): boolean {
    return observed();
  }

  /**
   * Emits a session event of this response. `payload` is called only when someone observes, so
   * an unobserved response builds nothing; `turnId` correlates events emitted during a model turn.
   */
  emit(type: string, payload?: () => Record<string, unknown>, turnId?: string): void {
    if (!observed()) return;
    emit(this.scope(turnId), type, payload?.() ?? {});
  }

  /** The correlation every session event of this response carries: conversation, session, operation, task and turn. */
  private scope(turnId: string | undefined): EmitScope {
    const task = this.task;
    return {
      instanceId: this.live.instanceId,
      agentName: this.live.agentName,
      env: this.env,
      submissionId: this.submissionId,
      correlation: {
        conversationId: this.live.conv.conversationId,
        session: this.session,
        harness: 'default',
        // The submission is the response's one `prompt` operation.
        operationId: this.submissionId,
        ...(task === undefined ? {} : { parentSession: task.parentSession, taskId: task.taskId }),
        ...(turnId === undefined ? {} : { turnId }),
      },
    };
  }

  /** What interceptors are told about where an operation runs. */
  executionContext(): FlueExecutionContext {
    return {
      instanceId: this.live.instanceId,
      agentName: this.live.agentName,
      submissionId: this.submissionId,
      conversationId: this.live.conv.conversationId,
      session: this.session,
      ...(this.task === undefined ? {} : { taskId: this.task.taskId }),
    };
  }

  /** Where this response is, for the crash probe (crash-probe.ts). */
  probeSite(): { engine: ProbedEngine; agent: string; instanceId: string; submissionId: string } {
    return { engine: this.probed, agent: this.live.agentName, instanceId: this.live.instanceId, submissionId: this.submissionId };
  }
}
