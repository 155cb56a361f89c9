/**
 * The submission engine: admission, the per-conversation FIFO queue, attempts, settlement, abort
 * and the drain that stops it. It is host-neutral: a host supplies the SQL store and a waker ("run
 * this conversation's queue soon") — a task in the process, which on Cloudflare also arms the
 * object's backstop alarm.
 *
 * One engine owns every conversation in its store, through three parts it holds: the read view
 * (conversation-view.ts), the one way anything reads the store, which it also lends its host; the
 * writer (conversation-writer.ts), the one way to write what the engine and the response loop
 * decide; and the reader (conversation-reader.ts), which serves the read verbs and asks the
 * engine's lifecycle whether a drain has begun or ended.
 */
import * as v from 'valibot';
import { type ResolvedDurability, resolveDurability } from '../authoring/durability-config.ts';
import { resolveBudget } from '../authoring/budget-config.ts';
import { isDevMode } from '../common/dev-mode.ts';
import {
  AgentInstanceExistsError,
  AgentInstanceNotFoundError,
  BudgetExceededError,
  FlueError,
  InvalidRequestError,
  RuntimeUnavailableError,
  type SettlementError,
  SubmissionAbortedError,
  SubmissionConflictError,
  SubmissionRetryExhaustedError,
  SubmissionTimeoutError,
  toSettlementError,
} from '../common/errors.ts';
import { type ProbedEngine, crashProbe } from '../store/crash-probe.ts';
import { ConversationReader, type ReaderLifecycle } from './conversation-reader.ts';
import { ConversationWriter, type SettlementWrite } from './conversation-writer.ts';
import { ConversationView, type LiveConversation } from './conversation-view.ts';
import { emit, errorInfo, eventError, observed } from '../common/events.ts';
import { type FlueAttemptResult, intercept } from '../common/instrumentation.ts';
import type { Agent, AgentRegistry } from '../authoring/identity.ts';
import { deepEqualJson, keyedSubmissionId, newId } from '../common/ids.ts';
import { assertInstanceIdShape, assertJsonValue } from '../common/input-limits.ts';
import type { ConversationRecord, SettledUsage, SubmissionOutcome } from '../store/records.ts';
import { restRecords } from './rest-records.ts';
import { ResponseRun } from './response-run.ts';
import { AttemptStalled, RunInterrupted, RunStopped, RunYield } from './run-signals.ts';
import {
  type AttemptClaim,
  FROZEN_KIND_NAMES,
  type SqlStore,
  type SubmissionKind,
  type SubmissionPayload,
  type SubmissionRow,
  type TimerRow,
} from '../store/sql-store.ts';
import type {
  AgentInstanceInfo,
  AgentReply,
  ConversationUsage,
  DeliveredMessageInput,
  DispatchReceipt,
  DurableObjectActivity,
} from '../common/types.ts';
import { budgetReached, budgetStop, conversationSpending, joinedUsage, settledUsage } from './usage-ledger.ts';
import { TIMER_SIGNAL_TYPE, parseDeliveredMessage } from './delivered-message.ts';
import { prepareAttachments, withoutAttachmentData } from './attachments.ts';
import { checkDeliveredMessage } from '../common/limits.ts';

export { MAX_ANSWER_BATCH_BYTES } from './conversation-reader.ts';
export type { Admission, AdmissionRequest, ReadOptions, ReadPoll } from './verbs.ts';
import type {
  Admission,
  AdmissionRequest,
  PollOptions,
  ReadOptions,
  ReadPoll,
  StoredAttachment,
  UpdatesOptions,
  UpdatesResult,
} from './verbs.ts';
import type { ChildConversation, FlueConversationSnapshot } from './conversation.ts';
import type { ConversationExport } from './conversation-export.ts';
import type { ExportOptions } from './conversation-transfer.ts';
import { transferPart } from './lazy-parts.ts';
import type { ConversationKey } from '../store/conversation-key.ts';
export { LiveConversation } from './conversation-view.ts';

/** How long `stop()` lets running responses run to settlement before cutting them off. */
export const STOP_GRACE_MS = 10_000;

export interface EngineOptions {
  store: SqlStore;
  registry: AgentRegistry;
  /** Ask the host to drive this conversation's queue soon (it calls `runQueue`). */
  wake(key: ConversationKey): void;
  env: Record<string, unknown>;
  /**
   * Wall time one run may spend on a response before it yields at a turn boundary and goes on as
   * the same attempt (set by the Durable Object). Unset on Node, where a response runs to completion.
   */
  sliceBudgetMs?: number;
  /**
   * What the host counted of its own activity since the last call (a Durable Object's rows,
   * alarms, RPCs); each settlement records it, so keeping the counts costs no write of its own.
   */
  takeActivity?: () => DurableObjectActivity;
  /**
   * Told the earliest due time of any pending timer whenever the timers change (undefined: none
   * left); the host arranges to call `fireDueTimers()` then (Node: a timeout; a Durable Object: its
   * alarm, brought forward when a timer is due before it).
   */
  timersChanged?: (nextDue: number | undefined) => void;
}

/** How a settlement ends a submission: its outcome, the error it reports, and why it did not complete. */
interface Settlement {
  outcome: SubmissionOutcome;
  error?: SettlementError;
  /** Why a submission that did not complete ended, as its interruption signal tells the agent (`failed` when unset). */
  reason?: 'aborted' | 'exceeded_timeout' | 'exhausted_retry_budget' | 'exceeded_budget' | 'failed';
}

export class ConversationEngine implements ProbedEngine {
  /** The one way to read this engine's store: the engine, its loop, its reader and its host read through it. */
  readonly view: ConversationView;
  private readonly writer: ConversationWriter;
  private readonly reader: ConversationReader;
  readonly registry: AgentRegistry;
  readonly env: Record<string, unknown>;
  private readonly wake: (key: ConversationKey) => void;
  private readonly sliceBudgetMs: number | undefined;
  private readonly takeActivity: (() => DurableObjectActivity) | undefined;
  private readonly timersChanged: ((nextDue: number | undefined) => void) | undefined;
  private readonly queues = new Map<ConversationKey, { running: Promise<void>; again: boolean }>();
  private readonly runs = new Map<ConversationKey, ResponseRun>();
  /** Submissions this process admitted with their first attempt claimed, not yet run. */
  private readonly admittedClaims = new Set<string>();
  /** A drain has begun: no new work is admitted or started. */
  private stopping = false;
  /** The drain is over: readers still waiting will not see a settlement in this process. */
  private readsClosed = false;

  constructor(options: EngineOptions) {
    this.view = new ConversationView(options.store, (key) => this.queues.has(key) || this.runs.has(key));
    this.writer = new ConversationWriter(options.store, this.view, () => this.timersChanged?.(this.view.nextTimerDue()));
    const lifecycle: ReaderLifecycle = { isStopping: () => this.stopping, readsClosed: () => this.readsClosed };
    this.reader = new ConversationReader(this.view, lifecycle);
    this.registry = options.registry;
    this.env = options.env;
    this.wake = options.wake;
    this.sliceBudgetMs = options.sliceBudgetMs;
    this.takeActivity = options.takeActivity;
    this.timersChanged = options.timersChanged;
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
    checkDeliveredMessage(request.message, request.initialData);
    const agent = this.registry.get(agentName)!;
    const acceptedAt = new Date().toISOString();
    const submissionId =
      request.idempotencyKey === undefined ? newId('sub') : await keyedSubmissionId(agentName, request.id, request.idempotencyKey, kind);
    const attachments = await prepareAttachments(request.message, kind, submissionId);
    const payload: SubmissionPayload = { message: withoutAttachmentData(request.message) };
    if (fromAgent) payload.fromAgent = true;
    if (attachments.length > 0) payload.attachments = attachments.map((attachment) => attachment.ref);
    if (request.initialData !== undefined) payload.initialData = request.initialData;
    if (request.idempotencyKey !== undefined) payload.idempotencyKey = request.idempotencyKey;

    // Everything below is synchronous: checks and writes happen as one step of this single writer.
    const live = this.view.live(agentName, request.id);
    if (request.idempotencyKey !== undefined) {
      const existing = this.view.submission(submissionId);
      if (existing !== undefined) {
        // A keyed replay converges on the original, even if its own uid condition would now fail.
        if (existing.kind !== kind || !deepEqualJson(existing.payload, payload)) throw new SubmissionConflictError(submissionId);
        this.emitFor(live, submissionId, 'submission_queued', { kind: FROZEN_KIND_NAMES[kind] });
        return { receipt: { submissionId, acceptedAt: existing.acceptedAt, uid: live.conv.uid!, deduplicated: true }, head: -1 };
      }
    }
    const created = live.conv.created;
    if (request.uid === null && created) throw new AgentInstanceExistsError(request.id, live.conv.uid!);
    if (typeof request.uid === 'string' && (!created || live.conv.uid !== request.uid)) {
      throw new AgentInstanceNotFoundError(request.id);
    }
    // A conversation past its spending budget takes nothing more until the static is raised.
    const limit = resolveBudget(agent).perConversation;
    if (limit !== undefined) {
      const open = this.view.openSubmissionIds(live.key);
      const overBudget = budgetReached('conversation', conversationSpending(live.conv, open, this.foldOf), limit);
      if (overBudget !== undefined) throw overBudget;
    }
    const birth = created ? undefined : this.birthRecord(agent, request.initialData);
    // Nothing else open: the row is stored with its first attempt claimed, the attempt this
    // submission's wake runs (the claim costs no write of its own).
    const claim = firstClaim(agent);
    const claimed = this.writer.admit(
      live,
      birth,
      { id: submissionId, kind, payload, acceptedAt, ...(claim === undefined ? {} : { claim }) },
      attachments,
    );
    if (claimed) this.admittedClaims.add(submissionId);
    crashProbe()?.({ point: 'admission', engine: this, agent: agentName, instanceId: request.id, submissionId });
    if (birth !== undefined) this.view.keep(live);
    this.emitFor(live, submissionId, 'submission_queued', { kind: FROZEN_KIND_NAMES[kind] });
    this.wake(live.key);
    return { receipt: { submissionId, acceptedAt, uid: live.conv.uid! }, head: live.conv.head };
  }

  private birthRecord(agent: Agent, initialData: unknown): ConversationRecord {
    let data = initialData;
    const schema = agent.initialData;
    if (schema !== undefined) {
      const parsed = v.safeParse(schema, initialData);
      if (!parsed.success) {
        throw new InvalidRequestError(
          "initialData does not match the agent's initialData schema.",
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

  // ── Timers ────────────────────────────────────────────────────────────────────────────────

  /**
   * Delivers every timer due at `now` as a queued `timer` signal of its conversation and answers
   * how many it delivered. A timer's delivery is idempotent by its id (`sub_<timer id>`): a timer
   * found again after its delivery was admitted is removed without a second one.
   */
  fireDueTimers(now = Date.now()): number {
    if (this.stopping) return 0;
    let delivered = 0;
    for (const timer of this.view.dueTimers(now)) {
      const submissionId = timerSubmissionId(timer.id);
      const admitted = this.view.submission(submissionId) !== undefined;
      const submission = admitted
        ? undefined
        : { id: submissionId, kind: 'dispatch' as const, payload: timerPayload(timer), acceptedAt: new Date(now).toISOString() };
      this.writer.fireTimer(timer, submission);
      if (submission === undefined) continue;
      delivered++;
      const live = this.view.liveByKey(timer.conversation);
      this.emitFor(live, submissionId, 'submission_queued', { kind: FROZEN_KIND_NAMES.dispatch });
      this.wake(live.key);
    }
    this.timersChanged?.(this.view.nextTimerDue());
    return delivered;
  }

  // ── Abort (durability.md §8) ──────────────────────────────────────────────────────────────

  abort(agentName: string, instanceId: string): boolean {
    const live = this.reader.addressed(agentName, instanceId);
    const affected = this.writer.requestAbort(live, Date.now());
    if (affected === 0) return false;
    this.runs.get(live.key)?.abort(new SubmissionAbortedError());
    this.wake(live.key);
    return true;
  }

  // ── Reading (conversation-reader.ts, delivery.md §6, streaming-protocol.md §5–§9) ──────────

  getInstance(agentName: string, instanceId: string): AgentInstanceInfo | null {
    return this.reader.getInstance(agentName, instanceId);
  }

  read(agentName: string, instanceId: string, submissionId: string, options?: ReadOptions): Promise<AgentReply> {
    return this.reader.read(agentName, instanceId, submissionId, options);
  }

  poll(agentName: string, instanceId: string, submissionId: string, options: PollOptions): Promise<ReadPoll> {
    return this.reader.poll(agentName, instanceId, submissionId, options);
  }

  history(agentName: string, instanceId: string): FlueConversationSnapshot | null {
    return this.reader.history(agentName, instanceId);
  }

  childConversations(agentName: string, instanceId: string): ChildConversation[] | null {
    return this.reader.childConversations(agentName, instanceId);
  }

  streamHead(agentName: string, instanceId: string): { head: number; incarnation: string } | null {
    return this.reader.streamHead(agentName, instanceId);
  }

  updates(agentName: string, instanceId: string, afterSeq: number, options: UpdatesOptions): Promise<UpdatesResult> {
    return this.reader.updates(agentName, instanceId, afterSeq, options);
  }

  attachment(agentName: string, instanceId: string, attachmentId: string): StoredAttachment | null | undefined {
    return this.reader.attachment(agentName, instanceId, attachmentId);
  }

  /** The conversation's usage ledger; null for a never-contacted instance. */
  usage(agentName: string, instanceId: string): ConversationUsage | null {
    const live = this.reader.addressed(agentName, instanceId);
    if (live.incarnation === undefined) return null;
    return this.view.usage(live);
  }

  // Export and import load their code on first use (lazy-parts.ts); past the load each runs in one
  // synchronous step, so nothing interleaves between its checks, its reads and its write.

  async exportConversation(agentName: string, instanceId: string, options: ExportOptions): Promise<ConversationExport> {
    const transfer = await transferPart();
    return transfer.exportConversation(this.view, this.reader.addressed(agentName, instanceId), options);
  }

  async importConversation(agentName: string, instanceId: string, exported: ConversationExport): Promise<{ id: string; uid: string }> {
    const transfer = await transferPart();
    if (this.stopping) throw new RuntimeUnavailableError('draining');
    this.registry.assertDefinition(agentName);
    return transfer.importConversation(this.view, this.writer, this.reader.addressed(agentName, instanceId), exported);
  }

  /** A child conversation's fold, for what a response's delegated tasks spent. */
  private readonly foldOf = (key: ConversationKey) => this.view.fold(key);

  // ── The queue ─────────────────────────────────────────────────────────────────────────────

  /** Drives one conversation's queue until it is empty; concurrent calls coalesce. */
  runQueue(key: ConversationKey): Promise<void> {
    const active = this.queues.get(key);
    if (active !== undefined) {
      active.again = true;
      return active.running;
    }
    const entry = { running: Promise.resolve(), again: false };
    entry.running = (async () => {
      try {
        do {
          entry.again = false;
          await this.drain(key);
        } while (entry.again && !this.stopping);
      } catch (error) {
        // Work cut off by a stop (or a simulated crash) while settling stays for the next start.
        if (!(error instanceof RunStopped)) throw error;
      } finally {
        this.queues.delete(key);
      }
    })();
    this.queues.set(key, entry);
    return entry.running;
  }

  private async drain(key: ConversationKey): Promise<void> {
    while (!this.stopping && (await this.runNext(key))) {
      // keep going until the queue is empty or cannot progress
    }
  }

  /**
   * Runs one attempt of the head submission.
   * Returns false when there is nothing to run or the head cannot progress now.
   */
  async runNext(key: ConversationKey): Promise<boolean> {
    if (this.stopping) return false;
    const head = this.view.queueHead(key);
    if (head === undefined) return false;
    return this.runSubmission(this.view.liveByKey(key), head);
  }

  /** Runs one attempt of the head submission; false when it cannot progress now. */
  private async runSubmission(live: LiveConversation, row: SubmissionRow): Promise<boolean> {
    // Forgotten here, whatever follows: a submission settled before it runs (aborted, past its
    // deadline or its budget) must not stay in the set for the life of the process.
    const claimedAtAdmission = this.admittedClaims.delete(row.id);
    const agent = this.registry.get(live.agentName);
    if (agent === undefined) {
      console.warn(
        `[flue] Conversation "${live.key}" has queued work for agent "${live.agentName}", which this runtime does not register.`,
      );
      return false;
    }
    let durability: ResolvedDurability;
    try {
      durability = resolveDurability(agent);
      resolveBudget(agent);
    } catch (error) {
      this.settle(live, row, { outcome: 'failed', error: toSettlementError(error, isDevMode()) });
      return true;
    }
    const now = Date.now();
    if (row.abortRequestedAt !== null) {
      this.settle(live, row, { outcome: 'aborted', error: toSettlementError(new SubmissionAbortedError()), reason: 'aborted' });
      return true;
    }
    if (row.startedAt !== null && now > row.startedAt + (row.timeoutMs ?? durability.timeoutMs)) {
      this.settle(live, row, {
        outcome: 'failed',
        error: toSettlementError(new SubmissionTimeoutError(row.timeoutMs ?? durability.timeoutMs)),
        reason: 'exceeded_timeout',
      });
      return true;
    }
    // A turn boundary: a new attempt (a retry) never starts past the budget.
    const overBudget = budgetStop(resolveBudget(agent), live.conv, row.id, this.foldOf);
    if (overBudget !== undefined) {
      this.settle(live, row, { outcome: 'failed', error: toSettlementError(overBudget), reason: 'exceeded_budget' });
      return true;
    }
    // A first attempt this process claimed with the admission runs as claimed (no write of its
    // own), whether or not its input is in the log yet (one admitted in the log has it from
    // admission on, and keeps its claim when another admission gives it a row). After a restart it
    // is an attempt a crash ended, like any other claimed one.
    const unstarted = claimedAtAdmission && row.status === 'running';
    if (!unstarted && row.attemptCount >= durability.maxAttempts) {
      const applied = live.conv.applied.has(row.id);
      const error = applied
        ? new SubmissionRetryExhaustedError({
            attemptCount: row.attemptCount,
            maxAttempts: durability.maxAttempts,
            ...this.interruptedTools(live),
          })
        : new SubmissionRetryExhaustedError({
            phase: 'retry_exhausted_before_input',
            attemptCount: row.attemptCount,
            maxAttempts: durability.maxAttempts,
          });
      // The interrupted attempt is not replaced: the give-up is durable (an alerting signal).
      this.emitRecovery(live, row, durability, { operation: 'reconcile_submission', outcome: 'terminated', error });
      this.settle(live, row, { outcome: 'failed', error: toSettlementError(error, isDevMode()), reason: 'exhausted_retry_budget' });
      return true;
    }
    const claimed = unstarted
      ? row
      : this.writer.claimAttempt(row, {
          attemptId: newId('attempt'),
          now,
          maxAttempts: durability.maxAttempts,
          timeoutMs: durability.timeoutMs,
        });
    // A claim that counts a new attempt over an earlier one replaces an attempt that a crash, a
    // stop or a stall ended (a continuation keeps its count): observers learn of the replacement.
    if (!unstarted && row.attemptCount > 0 && claimed.attemptCount > row.attemptCount) {
      this.emitRecovery(live, row, durability, { operation: 'reconcile_submission', outcome: 'deferred' });
    }
    this.emitFor(live, row.id, 'submission_running', {
      kind: FROZEN_KIND_NAMES[row.kind],
      attemptCount: claimed.attemptCount,
      maxAttempts: durability.maxAttempts,
    });
    const run = new ResponseRun({
      engine: this,
      view: this.view,
      writer: this.writer,
      live,
      row: claimed,
      agent,
      ...(this.sliceBudgetMs === undefined ? {} : { sliceDeadline: Date.now() + this.sliceBudgetMs }),
    });
    this.runs.set(live.key, run);
    // The deadline ends a running attempt too, not only at turn boundaries: a model call or a tool
    // that never answers is aborted with the timeout, and the attempt settles the submission.
    const timeoutMs = claimed.timeoutMs ?? durability.timeoutMs;
    run.watch((claimed.startedAt ?? now) + timeoutMs, durability.modelIdleTimeoutMs, () => new SubmissionTimeoutError(timeoutMs));
    try {
      // Installed interceptors see the attempt; a pause resolves for them and is rethrown here.
      let paused: unknown;
      await intercept(
        () => [{ type: 'agent', operationId: claimed.id, operationKind: 'prompt' }, run.executionContext()],
        async (): Promise<FlueAttemptResult> => {
          try {
            await run.operation();
            return { outcome: 'completed' };
          } catch (error) {
            if (!(error instanceof RunInterrupted || error instanceof RunYield || run.abortReason instanceof RunInterrupted)) throw error;
            paused = error;
            return { outcome: 'continued' };
          }
        },
      );
      if (paused !== undefined) throw paused;
      // A response that ended with nothing after its last model step settled in that step's batch.
      if (run.settled === undefined) this.settle(live, claimed, { outcome: 'completed' });
      else this.announceClosed(live, run.settled);
    } catch (error) {
      if (run.settled !== undefined) {
        // Settled with the response's last batch: what failed after it changes nothing stored.
        this.announceClosed(live, run.settled);
        if (!(error instanceof RunStopped)) console.error(`[flue] Submission ${claimed.id}: after its settlement:`, error);
        return true;
      }
      if (error instanceof RunStopped || run.abortReason instanceof RunStopped) return false; // draining: the next start picks it up
      if (error instanceof AttemptStalled || run.abortReason instanceof AttemptStalled) {
        // Abandoned like an attempt a crash ended: the submission stays open, and the next pass
        // claims a new attempt (or settles it at the attempt budget or the deadline).
        const stalled = error instanceof AttemptStalled ? error : (run.abortReason as AttemptStalled);
        this.emitRecovery(live, claimed, durability, { operation: 'process_submission', outcome: 'deferred', error: stalled });
        console.warn(
          `[flue] Submission ${claimed.id}: attempt ${claimed.attemptCount} of ${durability.maxAttempts} abandoned, its model stream delivered nothing for ${stalled.idleMs} ms.`,
        );
        return true;
      }
      if (error instanceof RunYield) {
        // Near the host's wall-time limit: the same attempt continues on the next wake.
        this.writer.markContinuation(claimed);
        return true;
      }
      if (run.abortReason instanceof SubmissionAbortedError || error instanceof SubmissionAbortedError) {
        this.settle(live, claimed, { outcome: 'aborted', error: toSettlementError(new SubmissionAbortedError()), reason: 'aborted' });
      } else if (error instanceof SubmissionTimeoutError || run.abortReason instanceof SubmissionTimeoutError) {
        // The work the deadline aborted may reject with its own AbortError: the deadline is the cause.
        const timeout = error instanceof SubmissionTimeoutError ? error : (run.abortReason as SubmissionTimeoutError);
        this.settle(live, claimed, { outcome: 'failed', error: toSettlementError(timeout, isDevMode()), reason: 'exceeded_timeout' });
      } else if (error instanceof BudgetExceededError) {
        // Expected, not a fault: the response stopped at a turn boundary.
        this.settle(live, claimed, { outcome: 'failed', error: toSettlementError(error), reason: 'exceeded_budget' });
      } else {
        // A typed error says everything in its message; anything else is logged with its stack.
        if (error instanceof FlueError) console.error(`[flue] Submission ${claimed.id} failed: ${error.message}`);
        else console.error(`[flue] Submission ${claimed.id} failed:`, error);
        this.settle(live, claimed, { outcome: 'failed', error: toSettlementError(error, isDevMode()), reason: 'failed' });
      }
    } finally {
      run.unwatch();
      this.runs.delete(live.key);
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
  private settle(live: LiveConversation, row: SubmissionRow, settlement: Settlement): void {
    const write = this.settlementWrite(live, row, settlement);
    this.writer.settle(live, write);
    this.announceSettled(live, write.settled, settlement);
  }

  /** The settlement of a completed response, to be written with its last batch (`ResponseRun`). */
  completedSettlement(live: LiveConversation, row: SubmissionRow): SettlementWrite {
    return this.settlementWrite(live, row, { outcome: 'completed' });
  }

  /** A response settled with its last batch: observers learn of it after its closing events, then its readers wake. */
  private announceClosed(live: LiveConversation, write: SettlementWrite): void {
    this.announceSettled(live, write.settled, { outcome: 'completed' });
    live.notify();
  }

  /** Observers learn of settlements once they are committed. */
  private announceSettled(live: LiveConversation, settled: readonly string[], { outcome, error }: Settlement): void {
    for (const id of settled) this.emitFor(live, id, 'submission_settled', { outcome, ...(error === undefined ? {} : { error }) });
  }

  /** The batch that settles `row` and the deliveries that joined it; the crash probe's `settlement` point is just before it is written. */
  private settlementWrite(live: LiveConversation, row: SubmissionRow, { outcome, error, reason }: Settlement): SettlementWrite {
    const ts = new Date().toISOString();
    const joined = this.view.joinedIds(row);
    const records: ConversationRecord[] = [];
    if (outcome !== 'completed' && live.conv.applied.has(row.id)) {
      const interrupted = restRecords(live, ts, this.view);
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
          kind: FROZEN_KIND_NAMES[row.kind],
          reason: reason ?? 'failed',
          ...(interrupted.tools.length ? { interruptedTools: interrupted.tools.join(',') } : {}),
        },
        ts,
      });
    }
    const settled = [row.id, ...joined];
    for (const id of settled) {
      records.push({
        type: 'submission_settled',
        submissionId: id,
        outcome,
        ...(error === undefined ? {} : { error }),
        answeredBySubmissionId: row.id,
        usage: id === row.id ? this.settledUsage(live, row) : joinedUsage(),
        ts,
      });
    }
    crashProbe()?.({
      point: 'settlement',
      engine: this,
      agent: live.agentName,
      instanceId: live.instanceId,
      submissionId: row.id,
      outcome,
    });
    return { records, settled, outcome, error: error?.message ?? null };
  }

  /** The leader's ledger entry, with the host's activity since the previous settlement. */
  private settledUsage(live: LiveConversation, row: SubmissionRow): SettledUsage {
    const usage = settledUsage(live.conv, row.id, row.attemptCount, this.foldOf);
    const activity = this.takeActivity?.();
    return activity === undefined ? usage : { ...usage, durableObject: activity };
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
    for (const live of this.view.conversations()) live.notify();
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
    for (const live of this.view.conversations()) live.notify();
  }

  /** A drain has begun (the response loop finishes the response in progress, then stops). */
  get isStopping(): boolean {
    return this.stopping;
  }

  /** Some conversation's queue is being driven right now (the crash harness tells idle from busy). */
  get busy(): boolean {
    return this.queues.size > 0;
  }

  /** What the crash probe is told reached a point: this engine. */
  get probed(): ProbedEngine {
    return this;
  }

  /** A contained failure or a replacement attempt (`submission_recovery`), built only when observed. */
  private emitRecovery(
    live: LiveConversation,
    row: SubmissionRow,
    durability: ResolvedDurability,
    step: { operation: 'reconcile_submission' | 'process_submission'; outcome: 'deferred' | 'terminated'; error?: unknown },
  ): void {
    if (!observed()) return;
    this.emitFor(live, row.id, 'submission_recovery', {
      kind: FROZEN_KIND_NAMES[row.kind],
      operation: step.operation,
      outcome: step.outcome,
      attemptCount: row.attemptCount,
      maxAttempts: durability.maxAttempts,
      ...(step.error === undefined ? {} : { error: eventError(step.error), errorInfo: errorInfo(step.error) }),
    });
  }

  emitFor(live: LiveConversation, submissionId: string | undefined, type: string, payload: Record<string, unknown> = {}): void {
    emit(
      { instanceId: live.instanceId, agentName: live.agentName, env: this.env, ...(submissionId ? { submissionId } : {}) },
      type,
      payload,
    );
  }
}

/** A timer's delivery: its id names the submission, so delivering it twice admits it once. */
export function timerSubmissionId(timerId: string): string {
  return `sub_${timerId}`;
}

/** The `timer` signal a due timer delivers; the agent scheduled it, so its origin is `'agent'`. */
export function timerPayload(timer: TimerRow): SubmissionPayload {
  return {
    message: {
      kind: 'signal',
      type: TIMER_SIGNAL_TYPE,
      body: timer.body,
      attributes: { name: timer.name, timerId: timer.id, dueAt: new Date(timer.dueAt).toISOString() },
    },
    fromAgent: true,
  };
}

/** The first attempt of a submission, claimed as it is admitted; none when the agent's durability does not resolve (its run settles that). */
function firstClaim(agent: Agent): AttemptClaim | undefined {
  let durability: ResolvedDurability;
  try {
    durability = resolveDurability(agent);
  } catch {
    return undefined;
  }
  return { attemptId: newId('attempt'), now: Date.now(), maxAttempts: durability.maxAttempts, timeoutMs: durability.timeoutMs };
}
