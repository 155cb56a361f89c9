/**
 * One attempt of one submission: drives the response from wherever the log says it stands. A
 * first attempt and a recovery after a crash are the same code: apply the input if it is not
 * applied, run the start seam if it did not commit, close an interrupted stream, repair an
 * unfinished tool batch, then loop turns until the response would stop (agents-and-hooks.md §6,
 * "Lifecycle order of one response"; durability.md §6).
 *
 * The loop and the turn live here; its parts live beside it: the streamed step and its flush
 * policy (turn-stream.ts), the tool batch (tool-batch.ts, over the `dispatchToolCall` the harness
 * shares), the hook seams (response-hooks.ts) and delegated tasks (task-run.ts). They see the run
 * as a `RunContext` (run-context.ts); every write goes through the conversation writer.
 */
import type { Message } from '@earendil-works/pi-ai';
import { encodeBase64 } from './attachments.ts';
import { compactConversation, maybeCompactAfterTurn } from './conversation-compaction.ts';
import { ATTACHMENT_DATA_PREFIX, withOrigin } from './conversation.ts';
import { type ConversationWriter, inputRecord } from './conversation-writer.ts';
import type { ConversationView, LiveConversation } from './conversation-view.ts';
import { DOCUMENT_REF_PREFIX, DocumentPlacement } from '../model/documents.ts';
import { jsonNormalize } from '../common/values.ts';
import { type ToolDefinition, assembleToolSet, toolParameters } from '../authoring/define-tool.ts';
import { AgentDefinitionError, DelegationDepthExceededError, OperationFailedError, SubmissionTimeoutError, abortError } from '../common/errors.ts';
import { createLogger } from '../common/events.ts';
import type { FlueExecutionContext } from '../common/instrumentation.ts';
import { type HarnessDeps, createHarness } from './harness.ts';
import { INSTRUCTIONS_UPDATED_BODY, environmentBody, mcpUnavailableBody, narrate, resourceSnapshot, sameSnapshot } from '../authoring/narration.ts';
import { DELEGATION_DEPTH_CAP, type SubagentDefinition } from '../authoring/subagents.ts';
import { runTaskCall } from './task-run.ts';
import { type ResolvedMcpConnections, resolveMcpConnections } from '../mcp/resolve.ts';
import { type WorkspaceContext, discoverWorkspace, withWorkspaceContext } from '../skills/workspace-context.ts';
import { AgentSandbox } from './agent-sandbox.ts';
import type { Sandbox } from '../sandbox/types.ts';
import type { Agent } from '../authoring/identity.ts';
import { deepEqualJson, newId } from '../common/ids.ts';
import { resolveModel, modelErrorFromMessage } from '../model/model-registry.ts';
import { MAX_MODEL_RETRIES, isOverflow, isRetryableModelError, retryDelayMs } from '../model/model-retry.ts';
import type { ConversationRecord } from '../store/records.ts';
import { type RenderResult, type RenderScope, render, renderDelegate } from '../authoring/render.ts';
import { runAgentFinish, runAgentStart, runResponseFinish, runResponseStart } from './response-hooks.ts';
import type { Delegation, DelegateRun, RunContext, RunEngine } from './run-context.ts';
import { RunYield } from './run-signals.ts';
import type { SubmissionRow } from '../store/sql-store.ts';
import { MAX_STATE_VALUE_BYTES, checkSize, jsonSize } from '../common/limits.ts';
import { systemPrompt } from './system-prompt.ts';
import { runToolBatch } from './tool-batch.ts';
import { frameworkTools } from './tool-dispatch.ts';
import { convergeInterruptedStream, streamStep } from './turn-stream.ts';
import type { Delivery, FlueHarness, FlueLogger } from '../common/types.ts';

export { RunStopped, RunYield } from './run-signals.ts';

export class ResponseRun implements RunContext {
  readonly engine: RunEngine;
  readonly writer: ConversationWriter;
  readonly view: ConversationView;
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
  readonly freshSteps = new Set<string>();
  lastTools = new Map<string, ToolDefinition>();
  private plannedMessageId = newId('msg');
  startMetadata: Record<string, unknown> | undefined;
  private consecutiveErrors = 0;
  private readonly attachmentCache = new Map<string, string>();
  /** The agent's environment; a delegate shares its parent's. */
  readonly environment: AgentSandbox;
  /** Set when this run drives a delegated task's child conversation. */
  private readonly delegate: Delegation | undefined;
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

  constructor(
    engine: RunEngine,
    view: ConversationView,
    writer: ConversationWriter,
    live: LiveConversation,
    row: SubmissionRow,
    agent: Agent,
    sliceDeadline?: number,
    delegate?: Delegation,
  ) {
    this.engine = engine;
    this.view = view;
    this.writer = writer;
    this.live = live;
    this.row = row;
    this.agent = agent;
    this.sliceDeadline = sliceDeadline;
    this.delegate = delegate;
    this.depth = delegate?.depth ?? 0;
    this.session = delegate?.session ?? 'default';
    this.attachmentStream = delegate?.attachmentStream ?? live.stream;
    this.model = delegate?.model;
    this.environment = delegate?.environment ?? new AgentSandbox(live.instanceId, view.sandboxFiles(live));
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
    const leader = this.row;
    // A delegate's input (the task prompt) is written with its birth; it has no seams of its own.
    if (this.delegate === undefined) {
      if (!this.conv.applied.has(leader.id)) this.commit([inputRecord(leader)]);
      if (this.conv.response(leader.id).steps === 0) runResponseStart(this);
      if (!this.conv.startRuns.has(leader.id)) await runAgentStart(this, leader.id);
      for (const joined of this.view.joinedInto(leader)) {
        if (!this.conv.startRuns.has(joined.id)) await runAgentStart(this, joined.id);
      }
    }
    for (;;) {
      this.checkpoint();
      const tail = this.conv.tail;
      if (tail.openStep !== undefined) {
        convergeInterruptedStream(this);
        continue;
      }
      if (tail.pendingToolCalls !== undefined) {
        await runToolBatch(this);
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
      if (this.delegate === undefined && (await runAgentFinish(this))) continue;
      break;
    }
    if (this.delegate === undefined) runResponseFinish(this);
  }

  /** Cooperative checks before each turn and before recovery work. */
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
        const committed = run.view.stateOf(run.live);
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
  async renderWithEnvironment(): Promise<RenderResult> {
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
      : this.view.stateOf(this.live).has(name)
        ? this.view.stateOf(this.live).get(name)
        : defaultValue;
    const value = typeof next === 'function' ? (next as (previous: unknown) => unknown)(structuredClone(current)) : next;
    if (value === undefined) throw new Error(`[flue] usePersistentState("${name}") cannot be set to undefined; persistent state has no unset.`);
    const normalized = jsonNormalize(value, `usePersistentState("${name}")`);
    checkSize(`usePersistentState("${name}") value`, jsonSize(normalized), MAX_STATE_VALUE_BYTES, 'Keep persistent state small; store large data elsewhere, e.g. in a sandbox file.');
    if (deepEqualJson(normalized, current)) return;
    this.stateWrites.set(name, normalized);
  }

  get hasStateWrites(): boolean {
    return this.stateWrites.size > 0;
  }

  commit(records: ConversationRecord[]): void {
    this.writer.commit(this.live, records);
  }

  /** Commits a batch together with the pending state writes it explains. */
  commitWithState(records: ConversationRecord[]): void {
    const writes = [...this.stateWrites];
    this.stateWrites.clear();
    this.writer.commitWithState(this.live, records, writes);
  }

  private writeData(name: string, data: unknown): void {
    if (data === undefined) throw new Error(`[flue] useDataWriter("${name}") cannot write undefined.`);
    const normalized = jsonNormalize(data, `useDataWriter("${name}")`);
    this.commit([
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
  toolHarness(scope: AbortSignal): FlueHarness {
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


  // ── Joins at turn boundaries (delivery.md §5) ─────────────────────────────────────────────

  private async joinQueued(): Promise<number> {
    // A drain finishes the response in progress; queued deliveries wait for the next start.
    if (this.engine.isStopping) return 0;
    const open = this.view.openSubmissions(this.live.stream);
    let joined = 0;
    for (const row of open) {
      if (row.id === this.row.id || row.status === 'joined') continue;
      if (row.status !== 'queued' || row.abortRequestedAt !== null) break;
      this.writer.join(this.live, row, this.row.id);
      await runAgentStart(this, row.id);
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
      builtin: this.environment.toolDefinitions(rendered.subagents),
      custom: [...rendered.tools, ...(await this.mcpTools(rendered))],
    });
    this.lastTools = new Map(tools.map((tool) => [tool.name, tool]));
    this.narrateResourceChanges(tools, rendered);
    const model = resolveModel(this.model!.spec);
    const documents = new DocumentPlacement(model);
    const message = await streamStep(
      this,
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
      const found = this.view.attachment(this.attachmentStream, id)?.bytes;
      data = found === undefined ? '' : encodeBase64(found);
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
        this.commit([
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
   * Dynamic-resource narration at a turn boundary: the render is
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
      this.commit([{ type: 'resource_snapshot', baseline: true, snapshot: current }]);
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
    this.commit([
      ...signals.map((signal): ConversationRecord => ({ type: 'signal', messageId: newId('msg'), submissionId: this.row.id, origin: 'framework', ...signal, ts })),
      { type: 'resource_snapshot', baseline: false, snapshot: current },
    ]);
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
  probeSite() {
    return { engine: this.engine.probed, agent: this.live.agentName, instanceId: this.live.instanceId, submissionId: this.row.id };
  }

  /** A delegate's loop over a child conversation, inside this attempt (task-run.ts). */
  delegateTo(child: LiveConversation, delegation: Delegation): DelegateRun {
    return new ResponseRun(this.engine, this.view, this.writer, child, this.row, this.agent, undefined, delegation);
  }
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
