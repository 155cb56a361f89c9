/**
 * The submission engine: admission, the per-conversation FIFO queue, attempts, settlement,
 * abort and reading replies. It is host-neutral: a host supplies the SQL driver and a waker
 * ("run this conversation's queue soon") — an alarm on Cloudflare, a task in the Node process.
 *
 * One engine owns every conversation in its store; each conversation has a single writer (the
 * engine), so its log fold is kept in memory and advanced as batches are committed.
 */
import * as v from 'valibot';
import { type ChildConversation, Conversation, type FlueConversationSnapshot } from './conversation.ts';
import { resolveDurability } from './durability-config.ts';
import { isDevMode } from './dev-mode.ts';
import {
  AgentInstanceExistsError,
  AgentInstanceNotFoundError,
  AgentRunError,
  FlueError,
  InvalidRequestError,
  RuntimeUnavailableError,
  type SettlementError,
  SubmissionAbortedError,
  SubmissionConflictError,
  SubmissionRetryExhaustedError,
  SubmissionTimeoutError,
  abortError,
  toSettlementError,
} from './errors.ts';
import { crashProbe } from './crash-probe.ts';
import { emit } from './events.ts';
import { type FlueAttemptResult, intercept } from './instrumentation.ts';
import { emptyUsage } from './usage.ts';
import type { Agent, AgentRegistry } from './identity.ts';
import { deepEqualJson, keyedSubmissionId, newId } from './ids.ts';
import { assertInstanceIdShape, assertJsonValue } from './input-limits.ts';
import { Projector, type ConversationStreamChunk, projectBatch } from './projection.ts';
import { type ConversationRecord, type SubmissionOutcome, interruptedToolText } from './records.ts';
import { childConversationId, childConversations, childStreamKey } from './task-run.ts';
import { ResponseRun } from './response-run.ts';
import { RunStopped, RunYield } from './run-signals.ts';
import type { Batch, SqlStore, SubmissionKind, SubmissionPayload, SubmissionRow } from './sql-store.ts';
import type { AgentInstanceInfo, AgentReply, DeliveredMessage, DeliveredMessageInput, DispatchReceipt } from './types.ts';
import { parseDeliveredMessage } from './delivered-message.ts';
import { prepareAttachments, withoutAttachmentData } from './attachments.ts';
import { MAX_CONVERSATION_BYTES, checkDeliveredMessage, checkSize } from './limits.ts';
import type { Admission, StoredAttachment, UpdatesResult } from './runtime.ts';

export interface AdmissionRequest {
  id: string;
  message: DeliveredMessage;
  initialData?: unknown;
  /** `undefined`: continue or create; a string: continue that incarnation; `null`: create only. */
  uid?: string | null;
  idempotencyKey?: string;
}

/** What one bounded remote read returns: new batches (when asked for) and the settlement, if any. */
export interface ReadPoll {
  batches: Batch[];
  settled?: { outcome: SubmissionOutcome; error?: SettlementError; reply?: AgentReply };
}

export interface ReadOptions {
  onEvent?: (chunk: ConversationStreamChunk) => void;
  signal?: AbortSignal;
}

/** One conversation's in-memory side: its log fold and who is waiting on it. */
export class LiveConversation {
  readonly stream: string;
  readonly agentName: string;
  readonly instanceId: string;
  readonly conv = new Conversation();
  readonly listeners = new Set<() => void>();
  /** Committed persistent state (a read cache of the state table). */
  state: Map<string, unknown> | undefined;
  incarnation: string | undefined;
  /** UTF-8 size of the folded log, kept as batches are folded so admission can bound it. */
  logBytes = 0;

  constructor(stream: string, agentName: string, instanceId: string) {
    this.stream = stream;
    this.agentName = agentName;
    this.instanceId = instanceId;
  }

  notify(): void {
    for (const listener of [...this.listeners]) listener();
  }
}

/** Batches one remote answer (poll, updates) carries stop growing past this (always at least one). */
export const MAX_ANSWER_BATCH_BYTES = 8 * 1024 * 1024;

/** How long `stop()` lets running responses run to settlement before cutting them off. */
export const STOP_GRACE_MS = 10_000;

export function streamKey(agentName: string, instanceId: string): string {
  return `agents/${agentName}/${instanceId}`;
}

export interface EngineOptions {
  store: SqlStore;
  registry: AgentRegistry;
  /** Ask the host to drive this conversation's queue soon (it calls `runQueue`). */
  wake(stream: string): void;
  env: Record<string, unknown>;
  /**
   * Wall time one wake may spend on a response before it yields at a turn boundary (Cloudflare's
   * alarm invocations are time-limited). Unset on Node, where a response runs to completion.
   */
  sliceBudgetMs?: number;
}

export class ConversationEngine {
  readonly store: SqlStore;
  readonly registry: AgentRegistry;
  readonly env: Record<string, unknown>;
  private readonly wake: (stream: string) => void;
  private readonly sliceBudgetMs: number | undefined;
  private readonly lives = new Map<string, LiveConversation>();
  private readonly queues = new Map<string, { running: Promise<void>; again: boolean }>();
  private readonly runs = new Map<string, ResponseRun>();
  private stopping = false;
  /** Set once draining is over: readers still waiting will not see a settlement in this process. */
  private readsClosed = false;

  constructor(options: EngineOptions) {
    this.store = options.store;
    this.registry = options.registry;
    this.env = options.env;
    this.wake = options.wake;
    this.sliceBudgetMs = options.sliceBudgetMs;
  }

  // ── Conversations ────────────────────────────────────────────────────────────────────────

  live(agentName: string, instanceId: string): LiveConversation {
    const stream = streamKey(agentName, instanceId);
    let live = this.lives.get(stream);
    if (live === undefined) {
      live = new LiveConversation(stream, agentName, instanceId);
      // Only conversations that exist are kept: reads of random ids must not grow memory.
      if (this.store.getStream(stream) !== undefined) this.lives.set(stream, live);
    }
    if (live.incarnation === undefined) live.incarnation = this.store.getStream(stream)?.incarnation;
    for (const { batch, bytes } of this.store.readBatchesSized(stream, live.conv.head)) {
      live.conv.apply(batch);
      live.logBytes += bytes;
    }
    return live;
  }

  /**
   * `live()` for an id that came from a caller. Every transport checks ids first; this is the
   * backstop for any host path that skipped it, since storage would cut a NUL-bearing id short.
   */
  private addressed(agentName: string, instanceId: string): LiveConversation {
    assertInstanceIdShape(instanceId);
    return this.live(agentName, instanceId);
  }

  private liveByStream(stream: string): LiveConversation {
    const info = this.store.getStream(stream);
    if (info === undefined) throw new Error(`[flue] No conversation stream "${stream}".`);
    return this.live(info.agent, info.instanceId);
  }

  /** Appends one batch (plus any writes that must land with it) and advances the fold. */
  commit(live: LiveConversation, records: ConversationRecord[], alsoWrite?: () => void): void {
    const { seq, bytes } = this.store.transaction(() => {
      // The fold is this single writer's view of the log, so its head is the store's.
      const appended = this.store.appendSized(live.stream, records, live.conv.head);
      alsoWrite?.();
      return appended;
    });
    live.conv.apply({ seq, records });
    live.logBytes += bytes;
    live.notify();
  }

  stateOf(live: LiveConversation): Map<string, unknown> {
    if (live.state === undefined) live.state = this.store.readState(live.stream);
    return live.state;
  }

  // ── Admission (delivery.md §2–§4, durability.md §2) ──────────────────────────────────────

  /** `fromAgent` is only ever set by `dispatchFromAgent` below: no caller outside the engine can claim it. */
  async admit(agentName: string, request: AdmissionRequest, kind: SubmissionKind, fromAgent = false): Promise<Admission> {
    if (this.stopping) throw new RuntimeUnavailableError('draining');
    // A broken agent definition fails the send itself, before anything is stored.
    this.registry.assertDefinition(agentName);
    // Backstops of the transports' checks, before anything decodes, clones or stores the request.
    assertInstanceIdShape(request.id);
    if (request.initialData !== undefined) assertJsonValue(request.initialData, 'initialData');
    // The last line of the size check every transport makes: nothing is stored for an oversized message.
    const messageBytes = checkDeliveredMessage(request.message, request.initialData);
    const agent = this.registry.get(agentName)!;
    const acceptedAt = new Date().toISOString();
    const submissionId =
      request.idempotencyKey === undefined
        ? newId('sub')
        : await keyedSubmissionId(agentName, request.id, request.idempotencyKey, kind);
    const attachments = await prepareAttachments(request.message, kind, submissionId);
    const payload: SubmissionPayload = { message: withoutAttachmentData(request.message) };
    if (fromAgent) payload.fromAgent = true;
    if (attachments.length > 0) payload.attachments = attachments.map((attachment) => attachment.ref);
    if (request.initialData !== undefined) payload.initialData = request.initialData;
    if (request.idempotencyKey !== undefined) payload.idempotencyKey = request.idempotencyKey;

    // Everything below is synchronous: checks and writes happen as one step of this single writer.
    const live = this.live(agentName, request.id);
    if (request.idempotencyKey !== undefined) {
      const existing = this.store.getSubmission(submissionId);
      if (existing !== undefined) {
        // A keyed replay converges on the original, even if its own uid condition would now fail.
        if (existing.kind !== kind || !deepEqualJson(existing.payload, payload)) throw new SubmissionConflictError(submissionId);
        this.emitFor(live, submissionId, 'submission_queued', { kind });
        return { receipt: { submissionId, acceptedAt: existing.acceptedAt, uid: live.conv.uid!, deduplicated: true }, head: -1 };
      }
    }
    const created = live.conv.created;
    if (request.uid === null && created) throw new AgentInstanceExistsError(request.id, live.conv.uid!);
    if (typeof request.uid === 'string' && (!created || live.conv.uid !== request.uid)) {
      throw new AgentInstanceNotFoundError(request.id);
    }
    // A response already running finishes; new work would take the log past what a host can hold.
    checkSize(
      'conversation',
      live.logBytes + messageBytes,
      MAX_CONVERSATION_BYTES,
      'The conversation is too large to accept more messages; continue in a new agent instance.',
    );
    const birth = created ? undefined : this.birthRecord(agent, request.initialData);
    this.store.transaction(() => {
      if (birth !== undefined) {
        this.store.createStream({ stream: live.stream, agent: agentName, instanceId: request.id, incarnation: newId('inc') });
        this.store.append(live.stream, [birth]);
      }
      this.store.insertSubmission({ id: submissionId, stream: live.stream, kind, payload, acceptedAt });
      for (const attachment of attachments) this.store.putAttachment(live.stream, attachment.ref, attachment.bytes);
    });
    crashProbe()?.({ point: 'admission', engine: this, agent: agentName, instanceId: request.id, submissionId });
    if (birth !== undefined) {
      this.lives.set(live.stream, live);
      this.live(agentName, request.id);
      live.notify();
    }
    this.emitFor(live, submissionId, 'submission_queued', { kind });
    this.wake(live.stream);
    return { receipt: { submissionId, acceptedAt, uid: live.conv.uid! }, head: live.conv.head };
  }

  private birthRecord(agent: Agent, initialData: unknown): ConversationRecord {
    let data = initialData;
    const schema = agent.initialData;
    if (schema !== undefined) {
      const parsed = v.safeParse(schema, initialData);
      if (!parsed.success) {
        throw new InvalidRequestError(
          'initialData does not match the agent\'s initialData schema.',
          `initialData: ${parsed.issues.map((issue) => issue.message).join('; ')}`,
        );
      }
      data = parsed.output;
    }
    return {
      type: 'conversation_created',
      conversationId: newId('conv'),
      uid: newId('inst'),
      ...(data === undefined ? {} : { initialData: structuredClone(data) }),
      ts: new Date().toISOString(),
    };
  }

  /** `useDispatchMessage()`: a real delivery to the agent's own instance. */
  async dispatchFromAgent(live: LiveConversation, message: DeliveredMessageInput): Promise<DispatchReceipt> {
    return (await this.admit(live.agentName, { id: live.instanceId, message: parseDeliveredMessage(message) }, 'dispatch', true)).receipt;
  }

  getInstance(agentName: string, instanceId: string): AgentInstanceInfo | null {
    const live = this.addressed(agentName, instanceId);
    if (this.store.getStream(live.stream) === undefined) return null;
    return live.conv.uid === undefined ? { id: instanceId } : { id: instanceId, uid: live.conv.uid };
  }

  // ── Reading replies (delivery.md §6) ──────────────────────────────────────────────────────

  async read(agentName: string, instanceId: string, submissionId: string, options: ReadOptions = {}): Promise<AgentReply> {
    const { signal, onEvent } = options;
    if (signal?.aborted) throw signal.reason ?? abortError();
    const live = this.addressed(agentName, instanceId);
    if (!live.conv.created) throw new AgentInstanceNotFoundError(instanceId);
    const projector = onEvent === undefined ? undefined : new Projector();
    let projected = -1;
    const pump = () => {
      if (projector === undefined) return;
      for (const batch of this.store.readBatches(live.stream, projected)) {
        projected = batch.seq;
        for (const chunk of projector.project(batch)) {
          try {
            onEvent!(chunk);
          } catch (error) {
            console.error('[flue] read() onEvent callback threw:', error);
          }
        }
      }
    };
    await new Promise<void>((resolve, reject) => {
      const check = () => {
        pump();
        if (live.conv.settlements.has(submissionId)) {
          cleanup();
          resolve();
        } else if (this.readsClosed) {
          cleanup();
          reject(stoppedBeforeSettlement(submissionId));
        }
      };
      const onAbort = () => {
        cleanup();
        reject(signal?.reason ?? abortError());
      };
      const cleanup = () => {
        live.listeners.delete(check);
        signal?.removeEventListener('abort', onAbort);
      };
      live.listeners.add(check);
      signal?.addEventListener('abort', onAbort, { once: true });
      check();
    });
    const settlement = live.conv.settlements.get(submissionId)!;
    if (settlement.outcome !== 'completed') throw new AgentRunError(settlement.outcome, submissionId, settlement.error);
    return { ...live.conv.reply(submissionId), submissionId };
  }

  /**
   * One bounded wait for a remote reader (the Cloudflare handle reads through this): resolves when
   * the submission settles, when batches after `afterSeq` exist (if asked for), or after `waitMs`.
   */
  async poll(
    agentName: string,
    instanceId: string,
    submissionId: string,
    options: { afterSeq: number; waitMs: number; batches: boolean },
  ): Promise<ReadPoll> {
    const live = this.addressed(agentName, instanceId);
    if (!live.conv.created) throw new AgentInstanceNotFoundError(instanceId);
    const ready = () =>
      this.stopping || live.conv.settlements.has(submissionId) || (options.batches && live.conv.head > options.afterSeq);
    if (!ready()) {
      await new Promise<void>((resolve) => {
        const done = () => {
          if (!ready()) return;
          finish();
        };
        const finish = () => {
          clearTimeout(timer);
          live.listeners.delete(done);
          resolve();
        };
        const timer = setTimeout(finish, options.waitMs);
        live.listeners.add(done);
      });
    }
    const found = live.conv.settlements.get(submissionId);
    if (found === undefined && this.stopping) throw new RuntimeUnavailableError('draining');
    const batches = options.batches
      ? this.store.readBatchesSized(live.stream, options.afterSeq, undefined, MAX_ANSWER_BATCH_BYTES).map(({ batch }) => batch)
      : [];
    // The settlement travels only with the last batches, so a reader sees every batch before it.
    const settlement = options.batches && (batches.at(-1)?.seq ?? options.afterSeq) < live.conv.head ? undefined : found;
    return {
      batches,
      ...(settlement === undefined
        ? {}
        : {
            settled: {
              outcome: settlement.outcome,
              ...(settlement.error === undefined ? {} : { error: settlement.error }),
              ...(settlement.outcome === 'completed' ? { reply: { ...live.conv.reply(submissionId), submissionId } } : {}),
            },
          }),
    };
  }

  // ── The conversation stream (streaming-protocol.md §5–§9) ───────────────────────────────

  history(agentName: string, instanceId: string): FlueConversationSnapshot | null {
    const live = this.addressed(agentName, instanceId);
    if (live.incarnation === undefined) return null;
    return live.conv.snapshot(live.incarnation);
  }

  /**
   * The child conversations `task` calls opened under this instance's conversation (recursively),
   * each with its transcript in the history view's shape; null for a never-contacted instance.
   * Never served over HTTP (streaming-protocol.md §5): an in-process inspection path.
   */
  childConversations(agentName: string, instanceId: string): ChildConversation[] | null {
    const live = this.addressed(agentName, instanceId);
    if (live.incarnation === undefined) return null;
    return childConversations(this.store, live.conv);
  }

  streamHead(agentName: string, instanceId: string): { head: number; incarnation: string } | null {
    const live = this.addressed(agentName, instanceId);
    return live.incarnation === undefined ? null : { head: live.conv.head, incarnation: live.incarnation };
  }

  async updates(
    agentName: string,
    instanceId: string,
    afterSeq: number,
    options: { waitMs: number; maxBatches: number; signal?: AbortSignal },
  ): Promise<UpdatesResult> {
    const live = this.addressed(agentName, instanceId);
    if (live.incarnation === undefined) return { kind: 'not_found' };
    if (afterSeq > live.conv.head) return { kind: 'gone', head: live.conv.head };
    if (afterSeq === live.conv.head && options.waitMs > 0) await this.nextAppend(live, options.waitMs, options.signal);
    // Watchers follow a draining response to its end; one parked across the end of the drain gets
    // a retryable 503, not a failure of the closed store.
    if (this.readsClosed) throw new RuntimeUnavailableError('draining');
    const batches = this.store
      .readBatchesSized(live.stream, afterSeq, options.maxBatches, MAX_ANSWER_BATCH_BYTES)
      .map(({ batch }) => batch);
    const chunks = batches.flatMap((batch) => projectBatch(batch, live.conv.conversationId, (seq) => this.snapshotAfter(live, seq)));
    const nextSeq = batches.at(-1)?.seq ?? afterSeq;
    return { kind: 'ok', incarnation: live.incarnation, chunks, nextSeq, upToDate: nextSeq >= live.conv.head };
  }

  /** The snapshot after one batch: the live fold at the head, a fresh fold otherwise (resets are rare). */
  private snapshotAfter(live: LiveConversation, seq: number): Omit<FlueConversationSnapshot, 'incarnation'> {
    if (seq === live.conv.head) return live.conv.snapshot();
    const fold = new Conversation();
    for (const batch of this.store.readBatches(live.stream, -1, seq + 1)) fold.apply(batch);
    return fold.snapshot();
  }

  private nextAppend(live: LiveConversation, waitMs: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        live.listeners.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, waitMs);
      live.listeners.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  attachment(agentName: string, instanceId: string, attachmentId: string): StoredAttachment | null | undefined {
    const live = this.addressed(agentName, instanceId);
    if (live.incarnation === undefined) return undefined;
    const found = this.store.readAttachment(live.stream, attachmentId);
    if (found === undefined) return null;
    return {
      id: found.ref.id,
      mimeType: found.ref.mimeType,
      size: found.ref.size,
      ...(found.ref.filename === undefined ? {} : { filename: found.ref.filename }),
      bytes: found.bytes,
    };
  }

  // ── Abort (durability.md §8) ──────────────────────────────────────────────────────────────

  abort(agentName: string, instanceId: string): boolean {
    const live = this.addressed(agentName, instanceId);
    const affected = this.store.transaction(() => this.store.requestAbort(live.stream, Date.now()));
    if (affected === 0) return false;
    this.runs.get(live.stream)?.abort(new SubmissionAbortedError());
    this.wake(live.stream);
    return true;
  }

  // ── The queue ─────────────────────────────────────────────────────────────────────────────

  /** Streams with unsettled submissions: what a host drives on start (recovery). */
  openStreams(): string[] {
    return this.store.listStreamsWithOpenWork();
  }

  /** Drives one conversation's queue until it is empty; concurrent calls coalesce. */
  runQueue(stream: string): Promise<void> {
    const active = this.queues.get(stream);
    if (active !== undefined) {
      active.again = true;
      return active.running;
    }
    const entry = { running: Promise.resolve(), again: false };
    entry.running = (async () => {
      try {
        do {
          entry.again = false;
          await this.drain(stream);
        } while (entry.again && !this.stopping);
      } catch (error) {
        // Work cut off by a stop (or a simulated crash) while settling stays for the next start.
        if (!(error instanceof RunStopped)) throw error;
      } finally {
        this.queues.delete(stream);
      }
    })();
    this.queues.set(stream, entry);
    return entry.running;
  }

  private async drain(stream: string): Promise<void> {
    while (!this.stopping && (await this.runNext(stream))) {
      // keep going until the queue is empty or cannot progress
    }
  }

  /**
   * Runs one attempt of the head submission (the Durable Object runs one per alarm invocation).
   * Returns false when there is nothing to run or the head cannot progress now.
   */
  async runNext(stream: string): Promise<boolean> {
    if (this.stopping) return false;
    const head = this.store.openSubmissions(stream).find((row) => row.status !== 'joined');
    if (head === undefined) return false;
    return this.runSubmission(this.liveByStream(stream), head);
  }

  hasOpenWork(stream: string): boolean {
    return this.store.openSubmissions(stream).length > 0;
  }

  /** Runs one attempt of the head submission; false when it cannot progress now. */
  private async runSubmission(live: LiveConversation, row: SubmissionRow): Promise<boolean> {
    const agent = this.registry.get(live.agentName);
    if (agent === undefined) {
      console.warn(`[flue] Conversation "${live.stream}" has queued work for agent "${live.agentName}", which this runtime does not register.`);
      return false;
    }
    let durability: { maxAttempts: number; timeoutMs: number };
    try {
      durability = resolveDurability(agent);
    } catch (error) {
      this.settle(live, row, 'failed', toSettlementError(error, isDevMode()), undefined);
      return true;
    }
    const now = Date.now();
    if (row.abortRequestedAt !== null) {
      this.settle(live, row, 'aborted', toSettlementError(new SubmissionAbortedError()), 'aborted');
      return true;
    }
    if (row.startedAt !== null && now > row.startedAt + (row.timeoutMs ?? durability.timeoutMs)) {
      this.settle(live, row, 'failed', toSettlementError(new SubmissionTimeoutError(row.timeoutMs ?? durability.timeoutMs)), 'exceeded_timeout');
      return true;
    }
    if (row.attemptCount >= durability.maxAttempts) {
      const applied = live.conv.applied.has(row.id);
      const error = applied
        ? new SubmissionRetryExhaustedError({
            attemptCount: row.attemptCount,
            maxAttempts: durability.maxAttempts,
            ...this.interruptedTools(live),
          })
        : new SubmissionRetryExhaustedError({ phase: 'retry_exhausted_before_input', attemptCount: row.attemptCount, maxAttempts: durability.maxAttempts });
      this.settle(live, row, 'failed', toSettlementError(error, isDevMode()), 'exhausted_retry_budget');
      return true;
    }
    const claimed = this.store.claimAttempt(row.id, {
      attemptId: newId('attempt'),
      now,
      maxAttempts: durability.maxAttempts,
      timeoutMs: durability.timeoutMs,
    });
    this.emitFor(live, row.id, 'submission_running', {
      kind: row.kind,
      attemptCount: claimed.attemptCount,
      maxAttempts: durability.maxAttempts,
    });
    const run = new ResponseRun(this, live, claimed, agent, this.sliceBudgetMs === undefined ? undefined : Date.now() + this.sliceBudgetMs);
    this.runs.set(live.stream, run);
    try {
      // Installed interceptors see the attempt; a pause resolves for them and is rethrown here.
      let paused: unknown;
      await intercept(
        () => [{ type: 'agent', operationId: claimed.id, operationKind: 'prompt' }, run.executionContext()],
        async (): Promise<FlueAttemptResult> => {
          try {
            await run.execute();
            return { outcome: 'completed' };
          } catch (error) {
            if (!(error instanceof RunStopped || error instanceof RunYield || run.abortReason instanceof RunStopped)) throw error;
            paused = error;
            return { outcome: 'continued' };
          }
        },
      );
      if (paused !== undefined) throw paused;
      this.settle(live, claimed, 'completed', undefined, undefined);
    } catch (error) {
      if (error instanceof RunStopped || run.abortReason instanceof RunStopped) return false; // draining: the next start picks it up
      if (error instanceof RunYield) {
        // Near the host's wall-time limit: the same attempt continues on the next wake.
        this.store.markContinuation(claimed.id);
        return true;
      }
      if (run.abortReason instanceof SubmissionAbortedError || error instanceof SubmissionAbortedError) {
        this.settle(live, claimed, 'aborted', toSettlementError(new SubmissionAbortedError()), 'aborted');
      } else if (error instanceof SubmissionTimeoutError) {
        this.settle(live, claimed, 'failed', toSettlementError(error, isDevMode()), 'exceeded_timeout');
      } else {
        // A typed error says everything in its message; anything else is logged with its stack.
        if (error instanceof FlueError) console.error(`[flue] Submission ${claimed.id} failed: ${error.message}`);
        else console.error(`[flue] Submission ${claimed.id} failed:`, error);
        this.settle(live, claimed, 'failed', toSettlementError(error, isDevMode()), 'failed');
      }
    } finally {
      this.runs.delete(live.stream);
      await run.dispose();
    }
    return true;
  }

  private interruptedTools(live: LiveConversation): { interruptedTools?: { name: string; id: string }[] } {
    const pending = live.conv.tail.pendingToolCalls;
    if (pending === undefined) return {};
    return { interruptedTools: pending.calls.map((call) => ({ name: call.name, id: call.id })) };
  }

  /**
   * Settles a submission and the deliveries that joined it, in one batch. Failure and abort first
   * bring the conversation to rest, so the next message starts from a coherent log.
   */
  settle(
    live: LiveConversation,
    row: SubmissionRow,
    outcome: SubmissionOutcome,
    error: SettlementError | undefined,
    reason: 'aborted' | 'exceeded_timeout' | 'exhausted_retry_budget' | 'failed' | undefined,
  ): void {
    const ts = new Date().toISOString();
    const joined = this.store.joinedInto(row);
    const records: ConversationRecord[] = [];
    if (outcome !== 'completed' && live.conv.applied.has(row.id)) {
      const interrupted = restRecords(live, ts, this.store);
      records.push(...interrupted.records);
      const aborted = outcome === 'aborted';
      records.push({
        type: 'signal',
        messageId: `msg_${aborted ? 'aborted' : 'interrupted'}_${row.id}`,
        submissionId: row.id,
        origin: 'framework',
        signalType: aborted ? 'submission_aborted' : 'submission_interrupted',
        body:
          (aborted ? 'The submission was aborted.' : `The submission failed: ${(error?.message ?? 'unknown error').replace(/\.$/, '')}.`) +
          (interrupted.tools.length ? ` Interrupted tool calls: ${interrupted.tools.join(', ')}.` : ''),
        attributes: {
          submissionId: row.id,
          kind: row.kind,
          reason: reason ?? 'failed',
          ...(interrupted.tools.length ? { interruptedTools: interrupted.tools.join(',') } : {}),
        },
        ts,
      });
    }
    for (const settled of [row, ...joined]) {
      records.push({
        type: 'submission_settled',
        submissionId: settled.id,
        outcome,
        ...(error === undefined ? {} : { error }),
        answeredBySubmissionId: row.id,
        ts,
      });
    }
    const now = Date.now();
    crashProbe()?.({ point: 'settlement', engine: this, agent: live.agentName, instanceId: live.instanceId, submissionId: row.id, outcome });
    this.commit(live, records, () => {
      for (const settled of [row, ...joined]) this.store.markSettled(settled.id, outcome, error?.message ?? null, now);
    });
    for (const settled of [row, ...joined]) {
      this.emitFor(live, settled.id, 'submission_settled', { outcome, ...(error === undefined ? {} : { error }) });
    }
  }

  // ── Lifecycle ─────────────────────────────────────────────────────────────────────────────

  /**
   * Drains: new work is refused at once, running responses run on to their settlement, queued
   * ones wait for the next start. Past `graceMs` (at once when it is 0) what still runs is cut off
   * as an interruption, recovered on the next start. Either way every `read()` still waiting then
   * settles: with the reply, or with a retryable `RuntimeUnavailableError`.
   */
  async stop(graceMs = STOP_GRACE_MS): Promise<void> {
    this.stopping = true;
    // Cloudflare's pollers (poll()) answer at once: their Durable Object keeps running the work.
    for (const live of this.lives.values()) live.notify();
    const drained = Promise.allSettled([...this.queues.values()].map((queue) => queue.running));
    // A stalled model call or tool must not hang shutdown: past the grace period the work is cut
    // off as an interruption (not an abort), and the next start recovers it.
    const cutOff = () => {
      for (const run of this.runs.values()) run.abort(new RunStopped());
      this.closeReads();
    };
    // No grace (a simulated crash): cut off before anything else of this runtime can run.
    if (graceMs <= 0) cutOff();
    const timer = graceMs > 0 ? setTimeout(cutOff, graceMs) : undefined;
    await drained;
    clearTimeout(timer);
    this.closeReads();
  }

  private closeReads(): void {
    if (this.readsClosed) return;
    this.readsClosed = true;
    for (const live of this.lives.values()) live.notify();
  }

  get isStopping(): boolean {
    return this.stopping;
  }

  emitFor(live: LiveConversation, submissionId: string | undefined, type: string, payload: Record<string, unknown> = {}): void {
    emit(
      { instanceId: live.instanceId, agentName: live.agentName, env: this.env, ...(submissionId ? { submissionId } : {}) },
      type,
      payload,
    );
  }
}

/** What a `read()` still waiting when the drain ends rejects with: the submission stays durable. */
function stoppedBeforeSettlement(submissionId: string): RuntimeUnavailableError {
  return new RuntimeUnavailableError('draining', {
    details: `The runtime stopped before submission ${submissionId} settled. It is kept and continues on the next start(): read it again then.`,
    meta: { submissionId },
  });
}

/**
 * Records that bring an interrupted response to rest: an open stream is closed as aborted and
 * unresolved tool calls get the interrupted marker (a `task` call's names its child conversation),
 * so the model sees a coherent transcript.
 */
export function restRecords(live: LiveConversation, ts: string, store: SqlStore): { records: ConversationRecord[]; tools: string[] } {
  const records: ConversationRecord[] = [];
  const tail = live.conv.tail;
  if (tail.openStep !== undefined) records.push(convergeOpenStep(tail.openStep, ts));
  const pending = tail.pendingToolCalls;
  const tools: string[] = [];
  if (pending !== undefined) {
    records.push({
      type: 'tool_results',
      stepId: pending.stepId,
      messageId: pending.messageId,
      submissionId: pending.submissionId,
      outcomes: pending.calls.map((call) => {
        tools.push(call.name);
        const child = call.name === 'task' ? childConversationId(store, childStreamKey(live.stream, pending.stepId, call.id)) : undefined;
        return { toolCallId: call.id, toolName: call.name, isError: true, content: interruptedToolText(child) };
      }),
      ts,
    });
  }
  return { records, tools };
}

/** Closes a stream that never completed, keeping what it said (durability.md §6.1). */
export function convergeOpenStep(
  open: NonNullable<Conversation['tail']['openStep']>,
  ts: string,
): ConversationRecord {
  return {
    type: 'assistant_completed',
    stepId: open.stepId,
    messageId: open.messageId,
    submissionId: open.submissionId,
    message: {
      role: 'assistant',
      content: open.blocks
        .filter((block) => block !== undefined)
        .map((block) => (block.kind === 'text' ? { type: 'text', text: block.text } : { type: 'thinking', thinking: block.text })),
      api: 'openai-completions',
      provider: 'flue',
      model: 'interrupted',
      usage: emptyUsage(),
      stopReason: 'aborted',
      errorMessage: 'Stream interrupted before completion.',
      timestamp: Date.parse(ts),
    },
    ts,
  };
}
