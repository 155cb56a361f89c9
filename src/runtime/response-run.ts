/**
 * One attempt of one submission: drives the response from wherever the log says it stands. A
 * first attempt and a recovery after a crash are the same code: apply the input if it is not
 * applied, run the start seam if it did not commit, close an interrupted stream, repair an
 * unfinished tool batch, then loop turns until the response would stop (agents-and-hooks.md §6,
 * "Lifecycle order of one response"; durability.md §6).
 */
import type { Api, AssistantMessage, Message, Model, ToolCall } from '@earendil-works/pi-ai';
import { encodeBase64 } from './attachments.ts';
import { compactConversation, maybeCompactAfterTurn } from './conversation-compaction.ts';
import { ATTACHMENT_DATA_PREFIX, deepMerge, withOrigin } from './conversation.ts';
import { DOCUMENT_REF_PREFIX, DocumentPlacement } from './documents.ts';
import { isPlainObject } from './values.ts';
import { parseAppendMessage } from './delivered-message.ts';
import { type ToolDefinition, assembleToolSet, toolParameters } from './define-tool.ts';
import { type LiveConversation, type ConversationEngine, convergeOpenStep } from './engine.ts';
import { AgentDefinitionError, DelegationDepthExceededError, OperationFailedError, SubmissionTimeoutError, ToolInputValidationError, abortError } from './errors.ts';
import { crashProbe } from './crash-probe.ts';
import { createLogger } from './events.ts';
import { type FlueExecutionContext, intercept } from './instrumentation.ts';
import { DELEGATION_DEPTH_CAP, type HarnessDeps, createHarness, frameworkTools, modelText, systemPrompt } from './harness.ts';
import { INSTRUCTIONS_UPDATED_BODY, environmentBody, mcpUnavailableBody, narrate, resourceSnapshot, sameSnapshot } from './narration.ts';
import { type SubagentDefinition, renderDelegate, taskTool } from './subagents.ts';
import { runTaskCall } from './task-run.ts';
import { type ResolvedMcpConnections, resolveMcpConnections } from './mcp/resolve.ts';
import { type WorkspaceContext, discoverWorkspace, withWorkspaceContext } from './workspace-context.ts';
import { AgentSandbox, runBuiltinTool } from './agent-sandbox.ts';
import type { Sandbox } from './sandbox/types.ts';
import type { Agent } from './identity.ts';
import { deepEqualJson, newId } from './ids.ts';
import { getModels, reasoningOption, resolveModel, modelErrorFromMessage } from './model-registry.ts';
import { MAX_MODEL_RETRIES, isOverflow, isRetryableModelError, retryDelayMs } from './model-retry.ts';
import { INTERRUPTED_TOOL_TEXT, type ConversationRecord, type ToolOutcomeRecord } from './records.ts';
import { type RenderResult, type RenderScope, render } from './render.ts';
import type { SubmissionRow } from './sql-store.ts';
import { MAX_STATE_VALUE_BYTES, checkSize, jsonSize } from './limits.ts';
import { recordingLogger } from './tool-log.ts';
import { runToolCall } from './tool-runner.ts';
import { createToolStep } from './tool-step.ts';
import type { AgentAppendMessage, DeliveredMessage, Delivery, DeliveryOrigin, FlueHarness, FlueLogger } from './types.ts';
import { RunStopped, RunYield } from './run-signals.ts';

const FINISH_CYCLE_CEILING = 32;

/**
 * A delegated task's child session (task-run.ts): the same loop over the child's own stream,
 * inside the parent's attempt (same submission row, deadline and signal), with the delegate's
 * render, the parent's environment and a model latched from the parent turn's.
 */
export interface DelegateSession {
  subagent: SubagentDefinition;
  depth: number;
  environment: AgentSandbox;
  model: NonNullable<RenderResult['model']>;
  /** The child's session name, and the `task` call it runs for (event correlation). */
  session: string;
  parentSession: string;
  taskId: string;
  /** The stream whose attachment store holds the bytes of forwarded attachments (the root's). */
  attachmentStream: string;
}
/**
 * Streamed deltas are committed in batches, one row per flush: the first after 250 ms, then at
 * doubling intervals up to 2 s. Short replies cost one or two rows; a long stream about one row
 * every two seconds, and a crash loses at most that much text.
 */
const DELTA_FLUSH_FIRST_MS = 250;
const DELTA_FLUSH_MAX_MS = 2_000;

export class ResponseRun {
  readonly engine: ConversationEngine;
  readonly live: LiveConversation;
  readonly row: SubmissionRow;
  readonly agent: Agent;
  private readonly controller = new AbortController();
  abortReason: unknown;
  /** Pending `usePersistentState` writes; they commit with the next tool batch or hook seam. */
  private readonly stateWrites = new Map<string, unknown>();
  /** Model, thinking level and compaction as latched by the first render of this attempt. */
  model: RenderResult['model'];
  private dataWriterNames: readonly string[] | undefined;
  /** Steps this attempt completed: their tool calls run fresh; others are recovered. */
  private readonly freshSteps = new Set<string>();
  private lastTools = new Map<string, ToolDefinition>();
  private plannedMessageId = newId('msg');
  private startMetadata: Record<string, unknown> | undefined;
  private consecutiveErrors = 0;
  private readonly attachmentCache = new Map<string, string>();
  /** The agent's environment; a delegate shares its parent's. */
  readonly environment: AgentSandbox;
  /** Set when this run drives a delegated task's child session. */
  private readonly delegate: DelegateSession | undefined;
  /** Delegation depth of this conversation (the main conversation is 0). */
  readonly depth: number;
  /** This conversation's session name: `'default'` for the main one, `task:…` for a delegate's. */
  readonly session: string;
  /** Where attachment bytes live: the root conversation's stream (a delegate forwards refs). */
  readonly attachmentStream: string;
  /** This attempt's MCP connections, resolved once from the first render that declares any. */
  private mcp: Promise<ResolvedMcpConnections> | undefined;
  private workspace: { sandbox: Sandbox; context: Promise<WorkspaceContext>; resolved?: WorkspaceContext } | undefined;
  /** The live roster of the latest turn's render (what `task` calls resolve against). */
  subagents: readonly SubagentDefinition[] = [];
  private overflowRetried = false;

  private readonly sliceDeadline: number | undefined;
  private progressed = false;

  constructor(engine: ConversationEngine, live: LiveConversation, row: SubmissionRow, agent: Agent, sliceDeadline?: number, delegate?: DelegateSession) {
    this.engine = engine;
    this.live = live;
    this.row = row;
    this.agent = agent;
    this.sliceDeadline = sliceDeadline;
    this.delegate = delegate;
    this.depth = delegate?.depth ?? 0;
    this.session = delegate?.session ?? 'default';
    this.attachmentStream = delegate?.attachmentStream ?? live.stream;
    this.model = delegate?.model;
    this.environment = delegate?.environment ?? new AgentSandbox(live.instanceId, engine.store.sandboxFiles(live.stream));
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  abort(reason: unknown): void {
    if (this.controller.signal.aborted) return;
    this.abortReason = reason;
    this.controller.abort(reason);
  }

  get conv() {
    return this.live.conv;
  }

  get responseMessageId(): string {
    return this.conv.response(this.row.id).messageId ?? this.plannedMessageId;
  }

  // ── The response ──────────────────────────────────────────────────────────────────────────

  async execute(): Promise<void> {
    const host = this.row;
    // A delegate's input (the task prompt) is written with its birth; it has no seams of its own.
    if (this.delegate === undefined) {
      if (!this.conv.applied.has(host.id)) this.engine.commit(this.live, [inputRecord(host)]);
      if (this.conv.response(host.id).steps === 0) this.runResponseStart();
      if (!this.conv.startRuns.has(host.id)) await this.runAgentStart(host.id);
      for (const joined of this.engine.store.joinedInto(host)) {
        if (!this.conv.startRuns.has(joined.id)) await this.runAgentStart(joined.id);
      }
    }
    for (;;) {
      this.checkpoint();
      const tail = this.conv.tail;
      if (tail.openStep !== undefined) {
        this.convergeInterruptedStream();
        continue;
      }
      if (tail.pendingToolCalls !== undefined) {
        await this.runToolBatch();
        this.progressed = true;
        continue;
      }
      if (this.delegate === undefined && (await this.joinQueued()) > 0) continue;
      if (tail.unread) {
        await this.turn();
        this.progressed = true;
        continue;
      }
      await maybeCompactAfterTurn(this);
      if (this.delegate === undefined && (await this.runAgentFinish())) continue;
      break;
    }
    if (this.delegate === undefined) this.runResponseFinish();
  }

  /** Cooperative checks before each turn and before recovery work (durability.md §5). */
  private checkpoint(): void {
    if (this.controller.signal.aborted) throw this.abortReason ?? abortError();
    const startedAt = this.row.startedAt ?? Date.now();
    const timeoutMs = this.row.timeoutMs ?? Number.POSITIVE_INFINITY;
    if (Date.now() > startedAt + timeoutMs) throw new SubmissionTimeoutError(timeoutMs);
    // Yield only after this wake moved the response forward, so every wake makes progress, and
    // never between a model step and its tool calls: the next wake would take calls that never
    // started for calls a crash cut off, and answer them with the interrupted marker.
    if (this.sliceDeadline !== undefined && this.progressed && this.conv.tail.pendingToolCalls === undefined && Date.now() > this.sliceDeadline) {
      throw new RunYield();
    }
  }

  // ── Rendering ─────────────────────────────────────────────────────────────────────────────

  render(): RenderResult {
    if (this.delegate !== undefined) return renderDelegate(this.delegate.subagent, this.deliveryWithAttachments());
    const run = this;
    const scope: RenderScope = {
      instanceId: this.live.instanceId,
      delivery: this.deliveryWithAttachments(),
      initialData: this.conv.initialData,
      dataWriterNames: this.dataWriterNames,
      readState: (name) => {
        if (run.stateWrites.has(name)) return { found: true, value: run.stateWrites.get(name) };
        const committed = run.engine.stateOf(run.live);
        return committed.has(name) ? { found: true, value: committed.get(name) } : { found: false };
      },
      setState: (name, next, defaultValue) => run.setState(name, next, defaultValue),
      writeData: (name, data) => run.writeData(name, data),
      dispatch: (message) => run.engine.dispatchFromAgent(run.live, message),
    };
    const result = render(this.agent, { kind: 'root', scope, props: { id: this.live.instanceId } });
    this.dataWriterNames = result.dataWriterNames;
    // Model, thinking level and compaction are latched for the submission (agents-and-hooks.md §5).
    if (this.model === undefined) {
      if (result.model === undefined) {
        throw new AgentDefinitionError('model_required', `[flue] The agent requires a model. Call useModel('provider-id/model-id') in the agent function.`, {
          agent: this.live.agentName,
        });
      }
      this.model = result.model;
    }
    return result;
  }

  /** `useDelivery()` shows attachments as delivered: base64 data, loaded from the store. */
  private deliveryWithAttachments(): Delivery | undefined {
    const delivery = this.conv.lastDelivery;
    if (delivery?.kind !== 'user' || delivery.attachments === undefined) return delivery;
    // A spread copies only enumerable properties: the origin is carried over explicitly.
    return withOrigin(delivery.origin, {
      ...delivery,
      attachments: delivery.attachments.map((attachment) =>
        attachment.data.startsWith(ATTACHMENT_DATA_PREFIX)
          ? { ...attachment, data: this.attachmentBase64(attachment.data.slice(ATTACHMENT_DATA_PREFIX.length)) }
          : attachment,
      ),
    });
  }

  /** Renders, then brings the environment in line with the render (a turn boundary). */
  private async renderWithEnvironment(): Promise<RenderResult> {
    const rendered = this.render();
    // A delegate declares no sandbox: it uses its parent's environment as the parent leaves it.
    if (this.delegate === undefined) await this.environment.follow(rendered.sandbox, rendered.skills);
    const sandbox = this.environment.current;
    if (sandbox === undefined) return rendered;
    // Discovered once per sandbox an attempt sees (a delegate's is the one at its own cwd).
    if (this.workspace?.sandbox !== sandbox) {
      const workspace: NonNullable<ResponseRun['workspace']> = { sandbox, context: discoverWorkspace(sandbox) };
      this.workspace = workspace;
      void workspace.context.then((context) => (workspace.resolved = context), () => {});
    }
    return withWorkspaceContext(rendered, await this.workspace.context);
  }

  /** A harness prompt sees the workspace context its turn saw (it cannot wait for discovery). */
  private renderForHarness(): RenderResult {
    const rendered = this.render();
    const workspace = this.workspace;
    if (workspace?.resolved === undefined || workspace.sandbox !== this.environment.current) return rendered;
    return withWorkspaceContext(rendered, workspace.resolved);
  }

  private setState(name: string, next: unknown, defaultValue: unknown): void {
    const current = this.stateWrites.has(name)
      ? this.stateWrites.get(name)
      : this.engine.stateOf(this.live).has(name)
        ? this.engine.stateOf(this.live).get(name)
        : defaultValue;
    const value = typeof next === 'function' ? (next as (previous: unknown) => unknown)(structuredClone(current)) : next;
    if (value === undefined) throw new Error(`[flue] usePersistentState("${name}") cannot be set to undefined; persistent state has no unset.`);
    const normalized = jsonNormalize(value, `usePersistentState("${name}")`);
    checkSize(`usePersistentState("${name}") value`, jsonSize(normalized), MAX_STATE_VALUE_BYTES, 'Keep persistent state small; store large data elsewhere, e.g. in a sandbox file.');
    if (deepEqualJson(normalized, current)) return;
    this.stateWrites.set(name, normalized);
  }

  /** Commits a batch together with the pending state writes it explains. */
  private commitWithState(records: ConversationRecord[]): void {
    const writes = [...this.stateWrites];
    this.stateWrites.clear();
    const state = this.engine.stateOf(this.live);
    this.engine.commit(this.live, records, () => {
      for (const [name, value] of writes) this.engine.store.writeState(this.live.stream, name, value);
    });
    for (const [name, value] of writes) state.set(name, value);
  }

  private writeData(name: string, data: unknown): void {
    if (data === undefined) throw new Error(`[flue] useDataWriter("${name}") cannot write undefined.`);
    const normalized = jsonNormalize(data, `useDataWriter("${name}")`);
    this.engine.commit(this.live, [
      { type: 'data_write', submissionId: this.row.id, messageId: this.responseMessageId, name, data: normalized },
    ]);
  }

  logger(provenance: Record<string, unknown>): FlueLogger {
    const delegate = this.delegate;
    return createLogger(
      {
        instanceId: this.live.instanceId,
        agentName: this.live.agentName,
        env: this.engine.env,
        submissionId: this.row.id,
        // Inside a delegated task, lines say which task and session they come from (events.md §4).
        ...(delegate === undefined
          ? {}
          : {
              correlation: {
                conversationId: this.conv.conversationId,
                session: delegate.session,
                parentSession: delegate.parentSession,
                taskId: delegate.taskId,
              },
            }),
      },
      provenance,
    );
  }

  /** A harness over this response; `scope` (a tool call's, by default the response's) closes it. */
  harness(depth = this.depth, scope: AbortSignal = this.signal): FlueHarness {
    return createHarness({ name: 'default', render: () => this.renderForHarness(), ...this.delegationDeps(depth), signal: scope });
  }

  /** A `harness: true` tool's harness: one delegation level below this conversation, within the cap. */
  private toolHarness(scope: AbortSignal): FlueHarness {
    if (this.depth + 1 > DELEGATION_DEPTH_CAP) throw new DelegationDepthExceededError(DELEGATION_DEPTH_CAP);
    return this.harness(this.depth + 1, scope);
  }

  /** What a harness or a delegated task inherits from this response. */
  private delegationDeps(depth: number): Omit<HarnessDeps, 'name' | 'render'> {
    return {
      modelSpec: this.model?.spec ?? this.render().model!.spec,
      thinkingLevel: this.model?.thinkingLevel,
      signal: this.signal,
      executionContext: () => this.executionContext(),
      log: (toolCallId, toolName) => this.logger({ tool: toolName, toolCallId }),
      depth,
      environment: this.environment,
      // A harness scratch conversation's `task` calls are recorded children of this conversation.
      task: (call, site) => runTaskCall(this, call, { ...site, stepId: newId('msg') }),
    };
  }

  // ── Seams ─────────────────────────────────────────────────────────────────────────────────

  private runResponseStart(): void {
    const hooks = this.render().responseStart;
    let metadata: Record<string, unknown> = {};
    hooks.forEach((hook, index) => {
      const returned = hook({ metadata: structuredClone(metadata), log: this.logger({ hook: 'useResponseStart', hookIndex: index }) });
      metadata = mergeReturnedMetadata(metadata, returned, 'useResponseStart');
    });
    this.startMetadata = Object.keys(metadata).length > 0 ? metadata : undefined;
  }

  private runResponseFinish(): void {
    const hooks = this.render().responseFinish;
    if (hooks.length === 0) return;
    const info = this.conv.response(this.row.id);
    const message = this.conv.messages.find((m) => m.id === this.responseMessageId);
    let metadata: Record<string, unknown> = message?.metadata ?? {};
    let contributed: Record<string, unknown> = {};
    hooks.forEach((hook, index) => {
      const returned = hook({
        metadata: structuredClone(metadata),
        response: { usage: structuredClone(info.usage), toolCalls: structuredClone(info.toolCalls) },
        log: this.logger({ hook: 'useResponseFinish', hookIndex: index }),
      });
      metadata = mergeReturnedMetadata(metadata, returned, 'useResponseFinish');
      contributed = mergeReturnedMetadata(contributed, returned, 'useResponseFinish');
    });
    if (Object.keys(contributed).length > 0) {
      this.commitWithState([{ type: 'response_metadata', submissionId: this.row.id, messageId: this.responseMessageId, metadata: contributed }]);
    }
  }

  /** `useAgentStart` for one delivery: concurrent callbacks, appends grouped in declaration order. */
  private async runAgentStart(submissionId: string): Promise<void> {
    const hooks = (await this.renderWithEnvironment()).agentStart;
    // With no callbacks there is nothing a recovery could repeat, so no marker row is needed.
    if (hooks.length === 0 && this.stateWrites.size === 0) return;
    const appended: AgentAppendMessage[][] = hooks.map(() => []);
    await Promise.all(
      hooks.map(async (hook, index) => {
        const seam = this.seamContext(appended[index]!, { hook: 'useAgentStart', hookIndex: index });
        try {
          await hook(seam.context);
        } finally {
          seam.close();
        }
      }),
    );
    this.commitWithState([
      ...appended.flat().map((message) => this.appendedRecord(message, submissionId)),
      { type: 'agent_start_run', submissionId },
    ]);
  }

  /** `useAgentFinish` at a would-stop point; true when an append continues the response. */
  private async runAgentFinish(): Promise<boolean> {
    const hooks = (await this.renderWithEnvironment()).agentFinish;
    if (hooks.length === 0) return false;
    const info = this.conv.response(this.row.id);
    const appended: AgentAppendMessage[] = [];
    for (const [index, hook] of hooks.entries()) {
      const seam = this.seamContext(appended, { hook: 'useAgentFinish', hookIndex: index });
      try {
        await hook({
          ...seam.context,
          response: { toolCalls: structuredClone(info.toolCalls), usage: structuredClone(info.usage) },
        });
      } finally {
        seam.close();
      }
    }
    if (appended.length === 0) {
      if (this.stateWrites.size > 0) this.commitWithState([{ type: 'agent_finish_cycle', submissionId: this.row.id }]);
      return false;
    }
    if (info.finishCycles >= FINISH_CYCLE_CEILING) {
      throw new Error(`[flue] useAgentFinish() continued this response more than ${FINISH_CYCLE_CEILING} times; the ceiling is ${FINISH_CYCLE_CEILING} continuation cycles per response.`);
    }
    this.commitWithState([
      ...appended.map((message) => this.appendedRecord(message, this.row.id)),
      { type: 'agent_finish_cycle', submissionId: this.row.id },
    ]);
    return true;
  }

  private seamContext(sink: AgentAppendMessage[], provenance: Record<string, unknown>) {
    let open = true;
    let harness: FlueHarness | undefined;
    // Like a tool's, a hook's harness is scoped to its callback: it closes when the callback ends.
    let scope: AbortController | undefined;
    const run = this;
    const context = {
      append(message: AgentAppendMessage) {
        if (!open) throw new Error('[flue] append() was called after its hook callback finished; it is valid only during the callback.');
        sink.push(parseAppendMessage(message));
      },
      get harness() {
        if (harness === undefined) {
          scope = new AbortController();
          const signal = run.signal;
          const follow = () => scope!.abort(signal.reason);
          if (signal.aborted) follow();
          else signal.addEventListener('abort', follow, { once: true });
          harness = run.harness(run.depth, scope.signal);
        }
        return harness;
      },
      log: this.logger(provenance),
      signal: this.signal,
    };
    return {
      context,
      close() {
        open = false;
        scope?.abort(abortError('The hook callback finished; its harness is closed.'));
      },
    };
  }

  private appendedRecord(message: AgentAppendMessage, submissionId: string): ConversationRecord {
    return {
      type: 'signal',
      messageId: newId('msg'),
      submissionId,
      origin: 'append',
      signalType: message.type,
      body: message.body,
      ...(message.attributes === undefined ? {} : { attributes: message.attributes }),
      ...(message.tagName === undefined ? {} : { tagName: message.tagName }),
      ts: new Date().toISOString(),
    };
  }

  // ── Joins at turn boundaries (delivery.md §5) ─────────────────────────────────────────────

  private async joinQueued(): Promise<number> {
    // A drain finishes the response in progress; queued deliveries wait for the next start.
    if (this.engine.isStopping) return 0;
    const open = this.engine.store.openSubmissions(this.live.stream);
    let joined = 0;
    for (const row of open) {
      if (row.id === this.row.id || row.status === 'joined') continue;
      if (row.status !== 'queued' || row.abortRequestedAt !== null) break;
      this.engine.commit(this.live, [inputRecord(row, this.row.id)], () => this.engine.store.markJoined(row.id, this.row.id));
      await this.runAgentStart(row.id);
      joined++;
    }
    return joined;
  }

  // ── A model turn ──────────────────────────────────────────────────────────────────────────

  private async turn(): Promise<void> {
    const rendered = await this.renderWithEnvironment();
    this.subagents = rendered.subagents;
    const tools = assembleToolSet({
      framework: frameworkTools(rendered),
      builtin: this.environment.toolDefinitions(),
      custom: [...rendered.tools, ...(await this.mcpTools(rendered))],
    });
    this.lastTools = new Map(tools.map((tool) => [tool.name, tool]));
    this.narrateResourceChanges(tools, rendered);
    const model = resolveModel(this.model!.spec);
    const documents = new DocumentPlacement(model);
    const message = await this.streamStep(
      model,
      {
        // Instructions are live; the skill catalog and agent roster stay on the frozen baseline.
        ...systemPrompt(rendered, this.conv.resourceBaseline),
        messages: this.hydrateAttachments(this.conv.modelContext(), documents),
        tools: tools.map((tool) => ({ name: tool.name, description: tool.description, parameters: toolParameters(tool) })),
      },
      documents.onPayload,
    );
    if (message.stopReason === 'aborted') throw this.abortReason ?? abortError();
    if (message.stopReason !== 'error') {
      this.consecutiveErrors = 0;
      return;
    }
    if (isOverflow(message, model.contextWindow) && !this.overflowRetried) {
      this.overflowRetried = true;
      await compactConversation(this, 'overflow');
      return;
    }
    if (isRetryableModelError(message) && this.consecutiveErrors < MAX_MODEL_RETRIES) {
      this.consecutiveErrors++;
      await sleep(retryDelayMs(this.consecutiveErrors), this.signal);
      return;
    }
    throw modelErrorFromMessage(message.errorMessage) ?? new OperationFailedError('prompt', message.errorMessage ?? 'the model call failed');
  }

  /**
   * Loads image bytes the fold left as store references (once per attempt), and places document
   * references for the model's API: a native document block, or a placeholder.
   */
  private hydrateAttachments(messages: Message[], documents: DocumentPlacement): Message[] {
    const isRef = (part: { type: string; data?: string; text?: string }) =>
      (part.type === 'image' && part.data!.startsWith(ATTACHMENT_DATA_PREFIX)) || (part.type === 'text' && part.text!.startsWith(DOCUMENT_REF_PREFIX));
    return messages.map((message) => {
      if (message.role !== 'user' || typeof message.content === 'string') return message;
      if (!message.content.some(isRef)) return message;
      return {
        ...message,
        content: message.content.map((part) => {
          if (part.type === 'image' && part.data.startsWith(ATTACHMENT_DATA_PREFIX)) {
            return { ...part, data: this.attachmentBase64(part.data.slice(ATTACHMENT_DATA_PREFIX.length)) };
          }
          if (part.type !== 'text' || !part.text.startsWith(DOCUMENT_REF_PREFIX)) return part;
          const id = part.text.slice(DOCUMENT_REF_PREFIX.length);
          const ref = this.conv.documents.get(id);
          const name = ref?.filename ?? id;
          return documents.place(
            id,
            () => ({ data: this.attachmentBase64(id), mimeType: ref?.mimeType ?? 'application/pdf', ...(ref?.filename === undefined ? {} : { filename: ref.filename }) }),
            name,
          );
        }),
      };
    });
  }

  private attachmentBase64(id: string): string {
    let data = this.attachmentCache.get(id);
    if (data === undefined) {
      const found = this.engine.store.readAttachment(this.attachmentStream, id);
      data = found === undefined ? '' : encodeBase64(found.bytes);
      this.attachmentCache.set(id, data);
    }
    return data;
  }

  /**
   * MCP tools are submission-scoped: connected once per attempt. A failing optional server mounts
   * nothing and is narrated to the model; a failing required one fails the submission.
   */
  private async mcpTools(rendered: RenderResult): Promise<ToolDefinition[]> {
    if (this.mcp === undefined) {
      if (rendered.mcpConnections.length === 0) return [];
      this.mcp = resolveMcpConnections(rendered.mcpConnections);
      const resolved = await this.mcp;
      if (resolved.failures.length > 0) {
        this.engine.commit(this.live, [
          {
            type: 'signal',
            messageId: newId('msg'),
            submissionId: this.row.id,
            origin: 'framework',
            signalType: 'resources',
            body: mcpUnavailableBody(resolved.failures),
            attributes: { resource: 'mcp' },
            ts: new Date().toISOString(),
          },
        ]);
        for (const failure of resolved.failures) this.logger({ mcp: failure.name }).warn(`[flue:mcp] optional server "${failure.name}" is unavailable`, { reason: failure.reason });
      }
    }
    return [...(await this.mcp).tools];
  }

  /** Closes what the attempt opened (MCP clients). */
  async dispose(): Promise<void> {
    const mcp = this.mcp;
    this.mcp = undefined;
    if (mcp !== undefined) await mcp.then((resolved) => resolved.close(), () => undefined);
  }

  /**
   * Dynamic-resource narration at a turn boundary (skills-subagents-mcp.md §4): the render is
   * compared with the last narrated snapshot. First contact records the baseline silently (the
   * prompt catalogs are rendered from it). Otherwise an instruction change is marked with an
   * `instructions` signal, and a sandbox presence flip is restated by one `environment` signal
   * that supersedes the boundary's `resources` deltas. Signals and the new snapshot commit in one
   * batch; framework signals never move the `useDelivery()` cursor.
   */
  private narrateResourceChanges(tools: readonly ToolDefinition[], rendered: RenderResult): void {
    const current = resourceSnapshot({
      tools,
      skills: rendered.skills,
      subagents: rendered.subagents,
      instructions: rendered.instructions,
      // The environment as this boundary left it (a delegate shares its parent's).
      sandbox: this.environment.current !== undefined,
    });
    const previous = this.conv.resourceSnapshot;
    if (previous === undefined || this.conv.resourceBaseline === undefined) {
      this.engine.commit(this.live, [{ type: 'resource_snapshot', baseline: true, snapshot: current }]);
      return;
    }
    if (sameSnapshot(previous, current)) return;
    const signals: { signalType: string; body: string; attributes?: Record<string, string> }[] = [];
    if (previous.instructionsDigest !== current.instructionsDigest) signals.push({ signalType: 'instructions', body: INSTRUCTIONS_UPDATED_BODY });
    if (previous.sandbox !== current.sandbox) {
      signals.push({
        signalType: 'environment',
        body: environmentBody({
          cwd: current.sandbox ? this.environment.current?.cwd : undefined,
          tools: current.tools.map((tool) => tool.name),
          skills: current.skills,
          subagents: current.subagents,
        }),
      });
    } else {
      for (const { kind, body } of narrate(previous, current)) signals.push({ signalType: 'resources', body, attributes: { resource: kind } });
    }
    const ts = new Date().toISOString();
    this.engine.commit(this.live, [
      ...signals.map((signal): ConversationRecord => ({ type: 'signal', messageId: newId('msg'), submissionId: this.row.id, origin: 'framework', ...signal, ts })),
      { type: 'resource_snapshot', baseline: false, snapshot: current },
    ]);
  }

  /** Streams one step; deltas are committed in coalesced batches, the step ends in one record. */
  async streamStep(
    model: Model<Api>,
    context: Parameters<ReturnType<typeof getModels>['streamSimple']>[1],
    onPayload?: (payload: unknown) => unknown,
  ): Promise<AssistantMessage> {
    const stepId = newId('msg');
    return intercept(
      () => [
        { type: 'model', turnId: stepId, purpose: 'agent', provider: model.provider, model: model.id },
        { ...this.executionContext(), turnId: stepId },
      ],
      () => this.streamInto(stepId, model, context, onPayload),
    );
  }

  private async streamInto(
    stepId: string,
    model: Model<Api>,
    context: Parameters<ReturnType<typeof getModels>['streamSimple']>[1],
    onPayload?: (payload: unknown) => unknown,
  ): Promise<AssistantMessage> {
    const messageId = this.responseMessageId;
    const startedRecord: ConversationRecord = {
      type: 'assistant_started',
      messageId,
      stepId,
      submissionId: this.row.id,
      attemptId: this.row.attemptId ?? '',
      ...(this.startMetadata === undefined || this.conv.response(this.row.id).steps > 0 ? {} : { metadata: this.startMetadata }),
      ts: new Date().toISOString(),
    };
    let started = false;
    let pending: ConversationRecord[] = [];
    let lastFlush = Date.now();
    let interval = DELTA_FLUSH_FIRST_MS;
    // A trailing flush bounds how long received text stays uncommitted when the stream stalls.
    let trailing: ReturnType<typeof setTimeout> | undefined;
    const flush = (extra: ConversationRecord[] = []) => {
      if (trailing !== undefined) clearTimeout(trailing);
      trailing = undefined;
      if (pending.length === 0 && extra.length === 0) return;
      const records = [...(started ? [] : [startedRecord]), ...pending, ...extra];
      started = true;
      pending = [];
      lastFlush = Date.now();
      interval = Math.min(interval * 2, DELTA_FLUSH_MAX_MS);
      this.engine.commit(this.live, records);
    };
    const stream = getModels().streamSimple(model, context, {
      signal: this.signal,
      sessionId: this.conv.conversationId,
      ...reasoningOption(model, this.model?.thinkingLevel),
      ...(onPayload === undefined ? {} : { onPayload }),
    });
    let firstDelta = true;
    try {
      for await (const event of stream) {
        if (event.type !== 'text_delta' && event.type !== 'thinking_delta') continue;
        const kind = event.type === 'text_delta' ? 'text' : 'reasoning';
        const last = pending[pending.length - 1];
        if (last?.type === 'assistant_delta' && last.kind === kind && last.block === event.contentIndex) last.delta += event.delta;
        else pending.push({ type: 'assistant_delta', stepId, messageId, kind, block: event.contentIndex, delta: event.delta });
        const elapsed = Date.now() - lastFlush;
        if (elapsed >= interval) flush();
        // Once the run is aborted the loop's exit flushes; a timer must not write for a stopped runtime.
        else trailing ??= setTimeout(() => this.signal.aborted || flush(), interval - elapsed);
        if (firstDelta) {
          firstDelta = false;
          crashProbe()?.({ point: 'model', ...this.probeSite() });
        }
      }
    } finally {
      if (trailing !== undefined) clearTimeout(trailing);
    }
    const final = await stream.result();
    if (final.stopReason === 'aborted' && this.abortReason instanceof RunStopped) {
      // A shutdown cut the stream: leave the step open, so the next start converges and continues it.
      flush();
      throw this.abortReason;
    }
    this.freshSteps.add(stepId);
    flush([{ type: 'assistant_completed', stepId, messageId, submissionId: this.row.id, message: final, ts: new Date().toISOString() }]);
    return final;
  }

  /** A stream that a crash cut off: close it, and tell the model it was interrupted. */
  private convergeInterruptedStream(): void {
    const open = this.conv.tail.openStep!;
    const ts = new Date().toISOString();
    const said = open.blocks.some((block) => block !== undefined && block.text.length > 0);
    const records: ConversationRecord[] = [convergeOpenStep(open, ts)];
    if (said) {
      for (const signalType of ['stream_interrupted', 'stream_continued'] as const) {
        records.push({
          type: 'signal',
          messageId: `msg_${signalType}_${open.stepId}`,
          submissionId: this.row.id,
          origin: 'framework',
          signalType,
          body:
            signalType === 'stream_interrupted'
              ? 'Your previous response was interrupted before it completed.'
              : 'Continue from where the interrupted response stopped.',
          ts,
        });
      }
    }
    this.engine.commit(this.live, records);
  }

  // ── Tool batches ──────────────────────────────────────────────────────────────────────────

  private async runToolBatch(): Promise<void> {
    const pending = this.conv.tail.pendingToolCalls!;
    const fresh = this.freshSteps.has(pending.stepId);
    // A recovered batch is a turn boundary of this attempt: the environment (which recovered
    // `task` children share) is brought in line with the render first.
    const tools = fresh ? this.lastTools : new Map((await this.renderWithEnvironment()).tools.map((tool) => [tool.name, tool]));
    const settled = await Promise.allSettled(
      pending.calls.map((call) => {
        // Recovery resumes a delegated task's child session to completion (durability.md §6.2).
        if (!fresh && call.name === taskTool.name) return this.intercepted(call, pending.stepId, () => this.runTask(call, pending.stepId, true));
        const tool = tools.get(call.name);
        // Recovery re-runs only durable tools; an ordinary call's outcome is unknown (seed).
        if (!fresh && !(tool?.durable === true)) return Promise.resolve(interruptedOutcome(call));
        return this.intercepted(call, pending.stepId, () => this.runOne(call, tool, pending.stepId));
      }),
    );
    if (this.signal.aborted) throw this.abortReason ?? abortError();
    // Stopping or the deadline inside a child leaves the whole batch unresolved for recovery.
    const failed = settled.find((result) => result.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    const outcomes = settled.map((result) => (result as PromiseFulfilledResult<ToolOutcomeRecord>).value);
    this.commitWithState([
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

  /** A `task` call: its delegate runs (or, recovering, resumes) as a recorded child session. */
  private async runTask(call: ToolCall, stepId: string, recovering: boolean): Promise<ToolOutcomeRecord> {
    const started = Date.now();
    const outcome = await runTaskCall(this, call, {
      stepId,
      subagents: recovering ? this.render().subagents : this.subagents,
      depth: this.depth,
      signal: this.signal,
      recovering,
    });
    return { toolCallId: call.id, toolName: call.name, ...outcome, ...(outcome.isError ? {} : { output: outcome.content }), durationMs: Date.now() - started };
  }

  /** One tool execution inside the installed interceptors. */
  private intercepted(call: ToolCall, stepId: string, work: () => Promise<ToolOutcomeRecord>): Promise<ToolOutcomeRecord> {
    return intercept(() => [{ type: 'tool', toolCallId: call.id, toolName: call.name }, { ...this.executionContext(), turnId: stepId }], work);
  }

  /** What interceptors are told about where an operation runs (the ids `observe()` events carry). */
  executionContext(): FlueExecutionContext {
    const delegate = this.delegate;
    return {
      instanceId: this.live.instanceId,
      agentName: this.live.agentName,
      submissionId: this.row.id,
      conversationId: this.conv.conversationId,
      session: this.session,
      ...(delegate === undefined ? {} : { taskId: delegate.taskId }),
    };
  }

  /** Where this run is, for the crash probe (crash-probe.ts). */
  private probeSite() {
    return { engine: this.engine, agent: this.live.agentName, instanceId: this.live.instanceId, submissionId: this.row.id };
  }

  private async runOne(call: ToolCall, tool: ToolDefinition | undefined, stepId: string): Promise<ToolOutcomeRecord> {
    if (tool === taskTool) return this.runTask(call, stepId, false);
    const builtin = tool === undefined ? undefined : this.environment.tools.get(call.name);
    if (builtin !== undefined) {
      const outcome = await runBuiltinTool(builtin, call.id, call.arguments, this.signal);
      return { toolCallId: call.id, toolName: call.name, ...outcome, ...(outcome.isError ? {} : { output: outcome.content }) };
    }
    if (tool === undefined) {
      return { toolCallId: call.id, toolName: call.name, isError: true, content: `Tool "${call.name}" is not available.` };
    }
    if (call.argumentsError !== undefined) {
      const error = new ToolInputValidationError(call.name, [{ message: `the arguments are not valid JSON (${call.argumentsError})` }]);
      return { toolCallId: call.id, toolName: call.name, isError: true, content: error.message };
    }
    const log = this.logger({ tool: call.name, toolCallId: call.id });
    const recorded = recordingLogger(log);
    const stream = this.live.stream;
    // Scoped to the step that issued the call: some providers reuse tool-call ids across responses.
    const memoKey = `${stepId}:${call.id}`;
    const store = this.engine.store;
    const site = { tool: call.name, toolCallId: call.id };
    const outcome = await runToolCall(tool, call.arguments, {
      toolCallId: call.id,
      signal: this.signal,
      log: recorded.log,
      onRun: () => crashProbe()?.({ point: 'tool', ...this.probeSite(), ...site }),
      ...(tool.harness ? { harness: (scope: AbortSignal) => this.toolHarness(scope) } : {}),
      ...(tool.durable
        ? {
            step: createToolStep({
              toolCallId: call.id,
              toolName: call.name,
              lookup: (name) => {
                const recorded = store.readStep(stream, memoKey, name);
                // Nothing recorded: step.do runs the fn now.
                if (!recorded.found) crashProbe()?.({ point: 'step-run', ...this.probeSite(), ...site, step: name });
                return recorded;
              },
              record: (name, value) => {
                // The fn finished and its memo is not stored yet: a crash here re-runs it.
                crashProbe()?.({ point: 'step', ...this.probeSite(), ...site, step: name });
                store.writeStep(stream, memoKey, name, value);
              },
              log,
            }),
          }
        : {}),
    });
    const record: ToolOutcomeRecord = {
      toolCallId: call.id,
      toolName: call.name,
      isError: outcome.isError,
      content: modelText(tool, outcome),
      durationMs: outcome.durationMs,
    };
    if (!outcome.isError && outcome.output !== undefined) record.output = outcome.output;
    if (outcome.terminate === true) record.terminate = true;
    const lines = recorded.lines();
    if (lines !== undefined) record.logs = lines;
    return record;
  }
}

function interruptedOutcome(call: ToolCall): ToolOutcomeRecord {
  return { toolCallId: call.id, toolName: call.name, isError: true, content: INTERRUPTED_TOOL_TEXT };
}

/** The canonical input record of a delivery; deterministic ids make re-application detectable. */
export function inputRecord(row: SubmissionRow, joinedInto?: string): ConversationRecord {
  const message = row.payload.message;
  const ts = new Date().toISOString();
  const joined = joinedInto === undefined ? {} : { joinedInto };
  const deliveryOrigin = submissionOrigin(row);
  if (message.kind === 'user') {
    return {
      type: 'user_message',
      messageId: `msg_in_${row.id}`,
      submissionId: row.id,
      ...joined,
      deliveryOrigin,
      body: message.body,
      ...(row.payload.attachments === undefined ? {} : { attachments: row.payload.attachments }),
      ts,
    };
  }
  return {
    type: 'signal',
    messageId: `msg_in_${row.id}`,
    submissionId: row.id,
    ...joined,
    origin: 'delivery',
    deliveryOrigin,
    signalType: message.type,
    body: message.body,
    ...(message.attributes === undefined ? {} : { attributes: message.attributes }),
    ...(message.tagName === undefined ? {} : { tagName: message.tagName }),
    ts,
  };
}

/** The transport the submission was admitted through decides its origin, never the payload's sender. */
function submissionOrigin(row: SubmissionRow): DeliveryOrigin {
  if (row.kind === 'direct') return 'http';
  return row.payload.fromAgent === true ? 'agent' : 'app';
}

function mergeReturnedMetadata(metadata: Record<string, unknown>, returned: unknown, hook: string): Record<string, unknown> {
  if (returned === undefined) return metadata;
  if (returned !== null && typeof returned === 'object' && typeof (returned as { then?: unknown }).then === 'function') {
    throw new Error(`[flue] ${hook}() callbacks are synchronous; it returned a promise.`);
  }
  if (!isPlainObject(returned)) throw new Error(`[flue] ${hook}() must return a plain object of metadata or nothing.`);
  return deepMerge(metadata, returned);
}

/** JSON round trip that refuses what does not survive it. */
export function jsonNormalize(value: unknown, site: string): unknown {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    throw new Error(`[flue] ${site} value is not JSON-serializable: ${(error as Error).message}`);
  }
  if (text === undefined) throw new Error(`[flue] ${site} value is not JSON-serializable.`);
  return JSON.parse(text);
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
