/**
 * One attempt of one submission: drives the response from wherever the log says it stands. A
 * first attempt and a recovery after a crash are the same code: apply the input if it is not
 * applied, run the start seam if it did not commit, close an interrupted stream, repair an
 * unfinished tool batch, then loop turns until the response would stop (agents-and-hooks.md §6,
 * "Lifecycle order of one response"; durability.md §6). `execute()` is that order; `operation()`
 * runs it for the engine, bounded by the `operation` events observers see.
 *
 * The loop decides nothing a part decides: each part is a function of what it is handed and
 * returns what it decided — the turn stream (turn-stream.ts) the completed step, the tool batch
 * (tool-batch.ts) its `tool_results`, the hook seams (response-hooks.ts) their records, compaction
 * (conversation-compaction.ts) its batch, the narration (resource-narration.ts) its signals — and
 * the loop commits it. A part that must write while it runs (streamed deltas, step memos, child
 * conversations, data writes) gets the response's narrow writer (response-writer.ts).
 */
import { compactAfterTurn, compactBeforeTurn, compactConversation, turnBudget } from './conversation-compaction.ts';
import { type ConversationWriter, type SettlementWrite, inputRecord } from './conversation-writer.ts';
import type { ConversationView, LiveConversation } from './conversation-view.ts';
import { AgentSandbox } from './agent-sandbox.ts';
import { AttachmentBytes, hydrateAttachments } from './attachment-hydration.ts';
import { AttemptAbort } from './attempt-abort.ts';
import { AttemptResources } from './attempt-resources.ts';
import { createHarness } from './harness.ts';
import { PendingState } from './pending-state.ts';
import { PendingSpend } from './pending-spend.ts';
import { PendingTimers } from './pending-timers.ts';
import { type HookSeam, runAgentFinish, runAgentStart, runResponseFinish, runResponseStart } from './response-hooks.ts';
import { type LatchedModel, ResponseRender } from './response-render.ts';
import { ResponseSite } from './response-site.ts';
import { ResponseWriter } from './response-writer.ts';
import type { Following } from './flush-policy.ts';
import { narrateMcpUnavailable, narrateResourceChanges } from './resource-narration.ts';
import { RunYield } from './run-signals.ts';
import { systemPrompt } from './system-prompt.ts';
import type { DelegatingResponse, Delegation } from './task-run.ts';
import { runTaskCall } from './lazy-parts.ts';
import { runToolBatch } from './tool-batch.ts';
import { toolEvent, toolResultMessage, turnMessages } from './session-events.ts';
import { frameworkTools } from './tool-dispatch.ts';
import { convergeInterruptedStream, streamStep } from './turn-stream.ts';
import { DocumentPlacement } from '../model/documents.ts';
import { fitContext, fixedTokens } from '../model/context-fit.ts';
import { answerCrossesThreshold } from '../model/compaction.ts';
import { type ToolDefinition, assembleToolSet, toolSpec } from '../authoring/define-tool.ts';
import { resolveDurability } from '../authoring/durability-config.ts';
import { resolveBudget } from '../authoring/budget-config.ts';
import { budgetStop } from './usage-ledger.ts';
import { addUsage, emptyUsage, usageFromPi } from '../model/usage.ts';
import type { Agent } from '../authoring/identity.ts';
import type { RenderResult } from '../authoring/render.ts';
import { DELEGATION_DEPTH_CAP, type SubagentDefinition } from '../authoring/subagents.ts';
import { type BudgetExceededError, DelegationDepthExceededError, OperationFailedError, SubmissionTimeoutError } from '../common/errors.ts';
import type { FlueExecutionContext } from '../common/instrumentation.ts';
import { errorInfo, eventError, omitImageData } from '../common/events.ts';
import type { ConversationRecord } from '../store/records.ts';
import type { Api, AssistantMessage, Model } from '@earendil-works/pi-ai';
import { newId } from '../common/ids.ts';
import { loadModel, modelErrorFromMessage } from '../model/model-registry.ts';
import { MAX_MODEL_RETRIES, isOverflow, isRetryableModelError, retryDelayMs } from '../model/model-retry.ts';
import type { ProbedEngine } from '../store/crash-probe.ts';
import type { QueuedDelivery, SubmissionRow } from '../store/sql-store.ts';
import type { DeliveredMessageInput, DispatchReceipt, FlueHarness, PromptUsage } from '../common/types.ts';

export { RunStopped, RunYield } from './run-signals.ts';

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
  /** The settlement of a completed response, made when its last batch is written (the crash probe's settlement point). */
  completedSettlement(live: LiveConversation, row: SubmissionRow): SettlementWrite;
}

export interface ResponseRunOptions {
  engine: RunEngine;
  view: ConversationView;
  writer: ConversationWriter;
  live: LiveConversation;
  /** The leader's submission row, as claimed for this attempt. */
  row: SubmissionRow;
  agent: Agent;
  /** When the wake's wall-time slice ends: past it the response yields at a turn boundary. */
  sliceDeadline?: number;
  /** Set when this run drives a delegated task's child conversation (task-run.ts). */
  delegation?: Delegation;
  /**
   * The spending check of the submission this run works for, asked at every turn boundary: the
   * root's own by default; a delegate is handed its root's, so a task's turns spend the same budget.
   */
  overBudget?: () => BudgetExceededError | undefined;
  /**
   * Whether readers follow the conversation, for how soon what streams is committed: its own by
   * default; a delegate's are its root's, the conversation readers can follow (flush-policy.ts).
   */
  following?: Following;
}

/** A turn whose step this attempt completed: what the tool batch that step issued runs against. */
interface IssuedTurn {
  stepId: string;
  /** The step's assistant message, when this attempt streamed it (the turn boundary's event carries it). */
  message?: AssistantMessage;
  tools: ReadonlyMap<string, ToolDefinition>;
  subagents: readonly SubagentDefinition[];
}

export class ResponseRun {
  private readonly options: ResponseRunOptions;
  private readonly live: LiveConversation;
  private readonly row: SubmissionRow;
  private readonly attempt = new AttemptAbort();
  private readonly state: PendingState;
  /** Model calls no record carries yet (harness prompts, failed summarizations): they ride on the next commit. */
  private readonly spend: PendingSpend;
  private readonly out: ResponseWriter;
  private readonly renderer: ResponseRender;
  private readonly resources = new AttemptResources();
  private readonly site: ResponseSite;
  private readonly bytes: AttachmentBytes;
  /** The agent's environment; a delegate shares its parent's. */
  private readonly environment: AgentSandbox;
  /** Delegation depth of this conversation (the main conversation is 0). */
  private readonly depth: number;
  /** The response message's id until its first step commits one. */
  private readonly plannedMessageId = newId('msg');
  /** The model-error policy of the turns: retries in a row, and the one compaction an overflow gets. */
  private consecutiveErrors = 0;
  private overflowRetried = false;
  /** What this attempt's operation produced and spent, for its `agent_end` and `operation` events. */
  private readonly produced: unknown[] = [];
  private usage: PromptUsage | undefined;
  /** The settlement the response's last batch carried, when it ended with nothing after its last model step. */
  settled: SettlementWrite | undefined;

  constructor(options: ResponseRunOptions) {
    const { engine, view, writer, live, row, agent, delegation } = options;
    this.options = options;
    this.live = live;
    this.row = row;
    this.depth = delegation?.depth ?? 0;
    this.environment = delegation?.environment ?? new AgentSandbox(live.instanceId, view.sandboxFiles(live));
    this.state = new PendingState(() => view.stateOf(live));
    const timers = new PendingTimers(() => view.timers(live));
    // The per-response bound on tool progress counts what earlier attempts of the response wrote.
    this.spend = new PendingSpend(row.id);
    this.out = new ResponseWriter({
      writer,
      live,
      following: options.following ?? live,
      state: this.state,
      timers,
      spend: this.spend,
      progressUsed: { ...live.conv.response(row.id).progress },
    });
    // Where attachment bytes live: the root conversation's stream (a delegate forwards refs).
    this.bytes = new AttachmentBytes(view, delegation?.attachmentKey ?? live.key);
    this.site = new ResponseSite({
      live,
      submissionId: row.id,
      env: engine.env,
      probed: engine.probed,
      ...(delegation === undefined ? {} : { task: delegation }),
    });
    this.renderer = new ResponseRender({
      agent,
      live,
      submissionId: row.id,
      responseMessageId: () => this.responseMessageId,
      state: this.state,
      timers,
      bytes: this.bytes,
      writer: this.out,
      dispatch: (message) => engine.dispatchFromAgent(live, message),
      ...(delegation === undefined ? {} : { delegate: { subagent: delegation.subagent, model: delegation.model } }),
    });
  }

  get abortReason(): unknown {
    return this.attempt.reason;
  }

  /** Ends this attempt's work: `reason` becomes the signal's reason and `abortReason`. */
  abort(reason: unknown): void {
    this.attempt.abort(reason);
  }

  /** Aborts the attempt with `reason()` at `at`; its model streams' idle window rides the same timer (attempt-abort.ts). */
  watch(at: number, idleMs: number, reason: () => unknown): void {
    this.attempt.watch(at, idleMs, reason);
  }

  /** The attempt is over: nothing of it is watched any more. */
  unwatch(): void {
    this.attempt.unwatch();
  }

  private get conv() {
    return this.live.conv;
  }

  private get responseMessageId(): string {
    return this.conv.response(this.row.id).messageId ?? this.plannedMessageId;
  }

  // ── The response ──────────────────────────────────────────────────────────────────────────

  /**
   * The response, and what it spent that no record carries yet committed before it returns — or
   * before a failure propagates, unless the attempt was abandoned (its end may be settled already).
   */
  async execute(): Promise<void> {
    try {
      await this.respond();
    } catch (error) {
      if (!this.attempt.signal.aborted) this.flushSpendAfterFailure();
      throw error;
    }
    this.out.flushSpend();
  }

  private flushSpendAfterFailure(): void {
    try {
      this.out.flushSpend();
    } catch {
      // The failure that is propagating says more than a store that also refused this write.
    }
  }

  private readonly failedSpend = (usage: PromptUsage, modelCalls: number): void => this.spend.add('compaction', usage, modelCalls);

  private async respond(): Promise<void> {
    const leader = this.row;
    const delegated = this.options.delegation !== undefined;
    let startMetadata: Record<string, unknown> | undefined;
    // A delegate's input (the task prompt) is written with its birth; it has no seams of its own.
    if (!delegated) {
      if (!this.conv.applied.has(leader.id)) {
        const input = inputRecord(leader);
        // The open submission holds the input: unless a reader follows, it goes with the first step.
        this.out.commitOrHold([input]);
        this.emitInput(input);
      } else if (leader.inLog === true && this.conv.response(leader.id).steps === 0) {
        // Admitted in the log: its input was written with the admission, and is told as this response starts.
        this.emitInput(inputRecord(leader, undefined, leader.acceptedAt));
      }
      if (this.conv.response(leader.id).steps === 0) startMetadata = runResponseStart(this.renderer.render().responseStart, this.site);
      if (!this.conv.startRuns.has(leader.id)) await this.agentStart(leader.id);
      for (const joined of this.options.view.joinedIds(leader)) {
        if (!this.conv.startRuns.has(joined)) await this.agentStart(joined);
      }
    }
    // The last turn this attempt streamed: the tool batch its step issued runs fresh.
    let issued: IssuedTurn | undefined;
    let progressed = false;
    for (;;) {
      this.checkpoint(progressed);
      const tail = this.conv.tail;
      if (tail.openStep !== undefined) {
        this.out.commit(convergeInterruptedStream(tail.openStep, leader.id));
        continue;
      }
      if (tail.pendingToolCalls !== undefined) {
        const batch = tail.pendingToolCalls;
        // Calls of a step this attempt completed run against the tools and roster of the turn that
        // issued them. Any other batch was left unresolved by a crash: it is recovered against a
        // new render, a turn boundary of this attempt (the environment that recovered `task`
        // children share is brought in line with the render first).
        const own = issued?.stepId === batch.stepId ? issued : undefined;
        const against = own ?? issuedBy(await this.renderWithEnvironment());
        const results = await runToolBatch(
          {
            batch,
            fresh: own !== undefined,
            tools: against.tools,
            subagents: against.subagents,
            attempt: this.attempt,
            site: this.site,
            environment: this.environment,
            depth: this.depth,
            harness: (scope) => this.toolHarness(scope),
            task: (call, site) => runTaskCall(this.delegating(), call, site),
          },
          this.out,
        );
        this.out.commitWithState([results]);
        this.emitBatchCommitted(own, results);
        progressed = true;
        continue;
      }
      if (!delegated && (await this.joinQueued()) > 0) continue;
      if (tail.unread) {
        // A turn boundary: no model call past the budget, in a delegate's loop as in the root's.
        const overBudget = this.overBudget();
        if (overBudget !== undefined) throw overBudget;
        issued = await this.turn(startMetadata);
        // A turn without tool calls is its own boundary; one with calls ends when its batch commits.
        if (this.conv.tail.pendingToolCalls === undefined) this.emitBatchCommitted(issued, undefined);
        if (this.settled !== undefined) return;
        progressed = true;
        continue;
      }
      const compaction = await compactAfterTurn({
        conv: this.conv,
        model: this.renderer.model,
        signal: this.attempt.signal,
        site: this.site,
        failedSpend: this.failedSpend,
      });
      if (compaction.length > 0) this.out.commit(compaction);
      if (!delegated) {
        const finish = await runAgentFinish({
          hooks: (await this.renderWithEnvironment()).agentFinish,
          submissionId: leader.id,
          response: this.conv.response(leader.id),
          hasPendingState: () => this.out.hasPendingWrites,
          seam: this.seam(),
        });
        if (finish.records.length > 0) this.out.commitWithState(finish.records);
        if (finish.continues) continue;
      }
      break;
    }
    if (!delegated) {
      const metadata = runResponseFinish({
        hooks: this.renderer.render().responseFinish,
        submissionId: leader.id,
        response: this.conv.response(leader.id),
        messageId: this.responseMessageId,
        metadata: this.conv.messages.find((message) => message.id === this.responseMessageId)?.metadata,
        site: this.site,
      });
      if (metadata !== undefined) this.out.commitWithState([metadata]);
    }
  }

  /**
   * The response as the engine runs it: `execute()` bounded by its `operation_start`/`agent_start`
   * and `agent_end`/`operation`/`idle` events. A delegate's child conversation is part of its
   * parent's operation and runs `execute()` alone.
   */
  async operation(): Promise<void> {
    const started = Date.now();
    const bounds = () => ({ operationId: this.row.id, operationKind: 'prompt', durationMs: Date.now() - started });
    this.site.emit('operation_start', () => ({ operationId: this.row.id, operationKind: 'prompt' }));
    this.site.emit('agent_start');
    try {
      await this.execute();
    } catch (error) {
      this.site.emit('operation', () => ({ ...bounds(), isError: true, error: eventError(error), errorInfo: errorInfo(error) }));
      this.site.emit('idle');
      throw error;
    }
    this.site.emit('agent_end', () => ({ messages: omitImageData(this.produced) }));
    this.site.emit('operation', () => ({ ...bounds(), isError: false, usage: this.usage }));
    this.site.emit('idle');
  }

  // ── What observers see of the response ────────────────────────────────────────────────────

  /** The user message the input record put in the conversation. */
  private emitInput(input: ConversationRecord): void {
    if (!this.site.observed) return;
    const message =
      input.type === 'user_message'
        ? { role: 'user', content: [{ type: 'text', text: input.body }], timestamp: Date.parse(input.ts) }
        : { role: 'signal', record: input };
    this.produced.push(message);
    this.site.emit('message_start', () => ({ message: omitImageData(message) }));
    this.site.emit('message_end', () => ({ message: omitImageData(message) }));
  }

  /** A committed batch's terminal `tool` events, then the turn boundary (when this attempt streamed the turn). */
  private emitBatchCommitted(turn: IssuedTurn | undefined, results: ConversationRecord | undefined): void {
    if (turn?.message !== undefined) {
      this.produced.push(turn.message);
      // The operation's usage: its turns' summed (undefined until a turn completes).
      this.usage = addUsage(this.usage ?? emptyUsage(), usageFromPi(turn.message.usage));
    }
    if (!this.site.observed) return;
    const outcomes = results?.type === 'tool_results' ? results.outcomes : [];
    const turnId = turn?.stepId;
    for (const outcome of outcomes) {
      this.produced.push(toolResultMessage(outcome));
      this.site.emit('tool', () => toolEvent(outcome), turnId);
    }
    if (turn?.message !== undefined) {
      const { stepId, message } = turn;
      this.site.emit('turn_messages', () => turnMessages(stepId, message, outcomes), stepId);
    }
  }

  /** Cooperative checks before each turn and before recovery work. */
  private checkpoint(progressed: boolean): void {
    this.attempt.throwIfAborted();
    const timeoutMs = this.timeoutMs;
    if (this.pastDeadline()) throw new SubmissionTimeoutError(timeoutMs);
    // Yield only after this wake moved the response forward, so every wake makes progress, and
    // never between a model step and its tool calls: the next wake would take calls that never
    // started for calls a crash cut off, and answer them with the interrupted marker.
    const sliceDeadline = this.options.sliceDeadline;
    if (sliceDeadline !== undefined && progressed && this.conv.tail.pendingToolCalls === undefined && Date.now() > sliceDeadline) {
      throw new RunYield();
    }
  }

  private get timeoutMs(): number {
    return this.row.timeoutMs ?? Number.POSITIVE_INFINITY;
  }

  /** Whether the submission's deadline (`durability.timeoutMs` from its first attempt) has passed. */
  private pastDeadline(): boolean {
    return Date.now() > (this.row.startedAt ?? Date.now()) + this.timeoutMs;
  }

  /** Renders, then brings the environment in line with the render (a turn boundary). */
  private async renderWithEnvironment(): Promise<RenderResult> {
    const rendered = this.renderer.render();
    // A delegate declares no sandbox: it uses its parent's environment as the parent leaves it.
    if (this.options.delegation === undefined) await this.environment.follow(rendered.sandbox, rendered.skills);
    return this.resources.withWorkspace(rendered, this.environment.current);
  }

  /** `useAgentStart` for one delivery, at a turn boundary. */
  private async agentStart(submissionId: string): Promise<void> {
    const hooks = (await this.renderWithEnvironment()).agentStart;
    const records = await runAgentStart({ hooks, submissionId, hasPendingState: () => this.out.hasPendingWrites, seam: this.seam() });
    if (records.length > 0) this.out.commitWithState(records);
  }

  // ── Joins at turn boundaries (delivery.md §5) ─────────────────────────────────────────────

  private async joinQueued(): Promise<number> {
    // A drain finishes the response in progress; queued deliveries wait for the next start.
    const joinable = this.joinable();
    if (joinable.length === 0) return 0;
    // Without useAgentStart callbacks (or state or timer writes for one to carry) nothing runs
    // between two joins: the whole burst joins in one batch, and no delivery has callbacks to run.
    if ((await this.renderWithEnvironment()).agentStart.length === 0 && !this.out.hasPendingWrites) {
      this.join(joinable);
      return joinable.length;
    }
    // Otherwise each delivery's callbacks run after its own join.
    for (const row of joinable) {
      this.join([row]);
      await this.agentStart(row.id);
    }
    return joinable.length;
  }

  /** The queued deliveries that would join the response now (none while a drain finishes it). */
  private joinable(): QueuedDelivery[] {
    if (this.options.engine.isStopping) return [];
    return joinableDeliveries(this.options.view.unjoinedDeliveries(this.live.key), this.row.id);
  }

  /** Joins deliveries in one batch; their messages enter at this turn boundary, before the next turn starts. */
  private join(rows: readonly QueuedDelivery[]): void {
    this.options.writer.join(this.live, rows, this.row.id);
    if (this.site.observed) for (const row of rows) this.emitInput(inputRecord(row, this.row.id));
  }

  // ── A model turn ──────────────────────────────────────────────────────────────────────────

  /** One model turn: the boundary's render, tool set and narration, then one streamed step. */
  private async turn(startMetadata: Record<string, unknown> | undefined): Promise<IssuedTurn> {
    const rendered = await this.renderWithEnvironment();
    const framework = frameworkTools(rendered);
    const builtin = this.environment.toolDefinitions(rendered.subagents);
    const mcp = await this.resources.mcpTools(rendered);
    if (mcp.unavailable.length > 0) {
      this.out.commit([
        narrateMcpUnavailable(mcp.unavailable, { submissionId: this.row.id, logger: (provenance) => this.site.logger(provenance) }),
      ]);
    }
    const tools = assembleToolSet({ framework, builtin, custom: [...rendered.tools, ...mcp.tools] });
    const narration = narrateResourceChanges({
      conv: this.conv,
      submissionId: this.row.id,
      tools,
      builtinTools: [...framework, ...builtin].map((tool) => tool.name),
      rendered,
      sandbox: this.environment.current,
    });
    // Made again from the render if a crash loses it: unless a reader follows, it goes with the step.
    if (narration.length > 0) this.out.commitOrHold(narration);
    const latched = this.renderer.model!;
    const model = await loadModel(latched.spec);
    const placement = new DocumentPlacement(model);
    // Instructions are live; the skill catalog and agent roster stay on the frozen baseline.
    const prompt = systemPrompt(rendered, this.conv.resourceBaseline);
    const toolSpecs = tools.map(toolSpec);
    const budgetTokens = turnBudget(model, latched, fixedTokens({ ...prompt, tools: toolSpecs }));
    const compaction = await compactBeforeTurn({
      conv: this.conv,
      model: latched,
      signal: this.attempt.signal,
      site: this.site,
      failedSpend: this.failedSpend,
      budgetTokens,
    });
    if (compaction.length > 0) this.out.commit(compaction);
    // What is sent always fits the window: a render-time reduction, the log keeps every original.
    const fitted = fitContext(this.conv.modelContext(), budgetTokens);
    const { stepId, message } = await streamStep(
      {
        model,
        context: {
          ...prompt,
          messages: hydrateAttachments(fitted.messages, { bytes: this.bytes, documents: this.conv.documents, placement }),
          tools: toolSpecs,
        },
        onPayload: placement.onPayload,
        thinkingLevel: latched.thinkingLevel,
        messageId: this.responseMessageId,
        submissionId: this.row.id,
        attemptId: this.row.attemptId ?? '',
        // The `useResponseStart` metadata rides on the response's first step.
        metadata: this.conv.response(this.row.id).steps === 0 ? startMetadata : undefined,
        sessionId: this.conv.conversationId,
        idleMs: resolveDurability(this.options.agent).modelIdleTimeoutMs,
        attempt: this.attempt,
        site: this.site,
        closing: (final) => (this.endsWith(final, rendered, latched, model) ? (records) => this.close(records) : undefined),
      },
      this.out,
    );
    const turn: IssuedTurn = { stepId, message, ...issuedBy({ tools, subagents: rendered.subagents }) };
    if (message.stopReason === 'aborted') throw this.attempt.error;
    if (message.stopReason !== 'error') {
      this.consecutiveErrors = 0;
      return turn;
    }
    if (isOverflow(message, model.contextWindow) && !this.overflowRetried) {
      this.overflowRetried = true;
      const compaction = await compactConversation(
        { conv: this.conv, model: latched, signal: this.attempt.signal, site: this.site, failedSpend: this.failedSpend },
        'overflow',
      );
      if (compaction !== undefined) this.out.commit(compaction);
      return turn;
    }
    if (isRetryableModelError(message) && this.consecutiveErrors < MAX_MODEL_RETRIES) {
      this.consecutiveErrors++;
      await sleep(retryDelayMs(this.consecutiveErrors), this.attempt.signal);
      return turn;
    }
    throw (
      modelErrorFromMessage(message.errorMessage) ?? new OperationFailedError('prompt', message.errorMessage ?? 'the model call failed')
    );
  }

  // ── The last step ─────────────────────────────────────────────────────────────────────────

  /**
   * Whether the response ends with this step's message, with nothing after it: a root response's
   * answer that calls no tool, with no finish hook to run, no compaction to follow (the threshold
   * is the answer's), no state or timer write and no delivery waiting, within the deadline. Its
   * last batch then carries the settlement, one write where there would be two: a crash before it
   * repeats this model call, as a crash during the step always did.
   */
  private endsWith(final: AssistantMessage, rendered: RenderResult, latched: LatchedModel, model: Model<Api>): boolean {
    if (this.options.delegation !== undefined || this.out.hasPendingWrites || this.attempt.signal.aborted) return false;
    if ((final.stopReason !== 'stop' && final.stopReason !== 'length') || final.content.some((block) => block.type === 'toolCall')) {
      return false;
    }
    // The turn's render: nothing runs during a model step that could change what the agent declares.
    if (rendered.agentFinish.length > 0 || rendered.responseFinish.length > 0) return false;
    if (latched.compaction !== false && answerCrossesThreshold(latched.compaction, model, final.usage)) return false;
    return !this.pastDeadline() && this.joinable().length === 0;
  }

  /** Writes the last batch with the settlement the engine makes for a completed response. */
  private close(records: ConversationRecord[]): void {
    const { engine } = this.options;
    this.settled = this.out.close(records, () => engine.completedSettlement(this.live, this.row));
  }

  // ── What parts and delegates get of this response ─────────────────────────────────────────

  /** What an async hook seam's callbacks get: a harness at this conversation's depth. */
  private seam(): HookSeam {
    return { signal: this.attempt.signal, site: this.site, harness: (scope) => this.harness(this.depth, scope) };
  }

  /** A harness over this response; `scope` (a tool call's or a hook callback's) closes it. */
  private harness(depth: number, scope: AbortSignal): FlueHarness {
    const renderer = this.renderer;
    return createHarness({
      name: 'default',
      // A harness prompt sees the workspace context its turn saw (it cannot wait for discovery).
      render: () => this.resources.withDiscoveredWorkspace(renderer.render(), this.environment.current),
      modelSpec: renderer.model?.spec ?? renderer.render().model!.spec,
      thinkingLevel: renderer.model?.thinkingLevel,
      signal: scope,
      executionContext: () => this.site.executionContext(),
      log: (toolCallId, toolName) => this.site.logger({ tool: toolName, toolCallId }),
      spend: (usage) => this.spend.add('harness', usage),
      depth,
      environment: this.environment,
      // A harness scratch conversation's `task` calls are recorded children of this conversation.
      task: (call, site) => runTaskCall(this.delegating(), call, { ...site, stepId: newId('msg') }),
    });
  }

  /** A `harness: true` tool's harness: one delegation level below this conversation, within the cap. */
  private toolHarness(scope: AbortSignal): FlueHarness {
    if (this.depth + 1 > DELEGATION_DEPTH_CAP) throw new DelegationDepthExceededError(DELEGATION_DEPTH_CAP);
    return this.harness(this.depth + 1, scope);
  }

  /** This response as a `task` call it makes sees it: a delegate's loop runs inside this attempt. */
  /** The submission's spending against the agent's budget; the root's conversation holds it (task children are folded in). */
  private overBudget(): BudgetExceededError | undefined {
    if (this.options.overBudget !== undefined) return this.options.overBudget();
    return budgetStop(resolveBudget(this.options.agent), this.conv, this.row.id, (key) => this.options.view.fold(key));
  }

  private delegating(): DelegatingResponse {
    const { engine, view, writer, agent } = this.options;
    return {
      live: this.live,
      submissionId: this.row.id,
      environment: this.environment,
      model: this.renderer.model!,
      session: this.site.session,
      attachmentKey: this.options.delegation?.attachmentKey ?? this.live.key,
      childConversationId: (key) => view.childConversationId(key),
      emit: (type, payload) => engine.emitFor(this.live, this.row.id, type, payload),
      delegateTo: (child, delegation) =>
        new ResponseRun({
          engine,
          view,
          writer,
          live: child,
          row: this.row,
          agent,
          delegation,
          overBudget: () => this.overBudget(),
          following: this.out.following,
        }),
      writer: this.out,
    };
  }

  /** What interceptors are told about where an operation runs (the ids `observe()` events carry). */
  executionContext(): FlueExecutionContext {
    return this.site.executionContext();
  }

  /** Closes what the attempt opened (MCP clients). */
  dispose(): Promise<void> {
    return this.resources.dispose();
  }
}

/** The tool set and roster a batch's calls resolve against, from a render (or a turn's tool list). */
function issuedBy(from: { tools: readonly ToolDefinition[]; subagents: readonly SubagentDefinition[] }): Omit<IssuedTurn, 'stepId'> {
  return { tools: new Map(from.tools.map((tool) => [tool.name, tool])), subagents: from.subagents };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** The queued deliveries that join the leader's response now: those in admission order up to the first that cannot (running, or asked to abort). */
function joinableDeliveries(open: readonly QueuedDelivery[], leaderId: string): QueuedDelivery[] {
  const joinable: QueuedDelivery[] = [];
  for (const row of open) {
    if (row.id === leaderId || row.status === 'joined') continue;
    if (row.status !== 'queued' || row.abortRequestedAt !== null) break;
    joinable.push(row);
  }
  return joinable;
}
