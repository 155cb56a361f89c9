/**
 * Reading conversations: waiting for a reply, the bounded polls a remote reader makes, the
 * history and updates views, attachments and the in-process inspection of child conversations.
 * Reads only, all through the read view (conversation-view.ts); every write goes through the
 * conversation writer. The engine holds one reader and serves the read verbs through it; the
 * reader asks the engine's lifecycle whether a drain has begun or ended, and never changes it.
 */
import type { ChildConversation, Conversation, FlueConversationSnapshot } from './conversation.ts';
import type { ConversationView, LiveConversation } from './conversation-view.ts';
import { AgentInstanceNotFoundError, RuntimeUnavailableError, abortError } from '../common/errors.ts';
import { assertInstanceIdShape } from '../common/input-limits.ts';
import { projectBatch } from './projection.ts';
import type { AgentInstanceInfo, AgentReply } from '../common/types.ts';
import type { PollOptions, ReadOptions, ReadPoll, StoredAttachment, UpdatesOptions, UpdatesResult } from './verbs.ts';
import { readReply } from './reply-reader.ts';
import { promised } from '../common/promised.ts';
import { DeadlineSweep } from './deadline-sweep.ts';

export type { ChildConversation } from './conversation.ts';
export type { ReadOptions, ReadPoll, StoredAttachment, UpdatesResult } from './verbs.ts';

/** Batches one remote answer (poll, updates) carries stop growing past this (always at least one). */
export const MAX_ANSWER_BATCH_BYTES = 8 * 1024 * 1024;

/** What a reader asks of the runtime's lifecycle: waiting reads follow a drain to its end. */
export interface ReaderLifecycle {
  /** A drain has begun: remote pollers answer at once (their host keeps running the work). */
  isStopping(): boolean;
  /** The drain is over: readers still waiting will not see a settlement in this process. */
  readsClosed(): boolean;
}

export class ConversationReader {
  private readonly view: ConversationView;
  private readonly lifecycle: ReaderLifecycle;
  /** The bounds of remote polls, under one timer however many are parked. */
  private readonly pollBounds = new DeadlineSweep();

  constructor(view: ConversationView, lifecycle: ReaderLifecycle) {
    this.view = view;
    this.lifecycle = lifecycle;
  }

  /**
   * The conversation's fold for an id that came from a caller. Every transport checks ids first;
   * this is the backstop for any host path that skipped it, since storage would cut a NUL-bearing
   * id short.
   */
  addressed(agentName: string, instanceId: string): LiveConversation {
    assertInstanceIdShape(instanceId);
    // After the drain the host closes the store: a late caller (a watcher polling on) gets a
    // retryable answer instead of a query on a closed store.
    if (this.lifecycle.readsClosed()) throw new RuntimeUnavailableError('draining');
    return this.view.live(agentName, instanceId);
  }

  getInstance(agentName: string, instanceId: string): AgentInstanceInfo | null {
    const live = this.addressed(agentName, instanceId);
    if (this.view.conversationInfo(live.key) === undefined) return null;
    return live.conv.uid === undefined ? { id: instanceId } : { id: instanceId, uid: live.conv.uid };
  }

  // ── Reading replies (delivery.md §6) ──────────────────────────────────────────────────────

  async read(agentName: string, instanceId: string, submissionId: string, options: ReadOptions = {}): Promise<AgentReply> {
    const { signal } = options;
    if (signal?.aborted) throw signal.reason ?? abortError();
    if (this.lifecycle.readsClosed()) throw stoppedBeforeSettlement(submissionId);
    const live = this.addressed(agentName, instanceId);
    if (!live.conv.created) throw new AgentInstanceNotFoundError(instanceId);
    // In process the reader waits as long as it takes: until the settlement, or the drain's end.
    const next = async (afterSeq: number, batches: boolean): Promise<ReadPoll> => {
      const settled = this.settledCheck(live, submissionId);
      const ready = () => this.lifecycle.readsClosed() || settled() || (batches && live.conv.head > afterSeq);
      await this.following(live, batches, () => this.whenReady(live, ready, undefined, signal));
      if (!settled() && this.lifecycle.readsClosed()) throw stoppedBeforeSettlement(submissionId);
      // Pages like a remote poll, so a reader that follows a long log never holds all of it.
      return this.answer(live, submissionId, afterSeq, batches, MAX_ANSWER_BATCH_BYTES);
    };
    return readReply(next, submissionId, options);
  }

  /**
   * One bounded wait for a remote reader (the Cloudflare handle reads through this): resolves when
   * the submission settles, when batches after `afterSeq` exist (if asked for), or after `waitMs`.
   * Chained rather than awaited: hundreds of parked polls hold no suspended frames of their own.
   */
  poll(agentName: string, instanceId: string, submissionId: string, options: PollOptions): Promise<ReadPoll> {
    return promised(() => {
      const live = this.addressed(agentName, instanceId);
      if (!live.conv.created) throw new AgentInstanceNotFoundError(instanceId);
      const settled = this.settledCheck(live, submissionId);
      const ready = () => this.lifecycle.isStopping() || settled() || (options.batches && live.conv.head > options.afterSeq);
      return this.following(live, options.batches, () => this.whenReady(live, ready, options.waitMs)).then(() => {
        if (!settled() && this.lifecycle.isStopping()) throw new RuntimeUnavailableError('draining');
        return this.answer(live, submissionId, options.afterSeq, options.batches, MAX_ANSWER_BATCH_BYTES);
      });
    });
  }

  /**
   * Whether the submission has settled, asked again at every append while a reader waits: the
   * store is asked once, then the live fold, which sees every settlement this process writes.
   */
  private settledCheck(live: LiveConversation, submissionId: string): () => boolean {
    const before = this.view.settled(live, submissionId) !== undefined;
    return () => before || live.conv.settlements.has(submissionId);
  }

  /**
   * Runs a reader's wait; one that reads the log's batches follows it meanwhile, so streams commit
   * what they hold on the followed schedule (flush-policy.ts), starting with what is due now.
   */
  private following(live: LiveConversation, batches: boolean, wait: () => Promise<void>): Promise<void> {
    if (!batches) return wait();
    const release = live.follow();
    try {
      return wait().finally(release);
    } catch (error) {
      release();
      throw error;
    }
  }

  /** Resolves once `ready()` holds after an append (or at once), after `waitMs` if set; rejects on abort. */
  private whenReady(live: LiveConversation, ready: () => boolean, waitMs: number | undefined, signal?: AbortSignal): Promise<void> {
    if (ready()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const done = () => {
        if (!ready()) return;
        finish();
        resolve();
      };
      const onAbort = () => {
        finish();
        reject(signal?.reason ?? abortError());
      };
      const finish = () => {
        cancelBound?.();
        live.listeners.delete(done);
        signal?.removeEventListener('abort', onAbort);
      };
      const cancelBound =
        waitMs === undefined
          ? undefined
          : this.pollBounds.add(Date.now() + waitMs, () => {
              finish();
              resolve();
            });
      live.listeners.add(done);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** A reader's answer: the batches after `afterSeq` (if asked for) and the settlement, which travels only with the last ones. */
  private answer(live: LiveConversation, submissionId: string, afterSeq: number, batches: boolean, maxBytes: number): ReadPoll {
    const read = batches ? this.view.boundedBatches(live.key, afterSeq, undefined, maxBytes) : [];
    const found = batches && (read.at(-1)?.seq ?? afterSeq) < live.conv.head ? undefined : this.view.settled(live, submissionId);
    if (found === undefined) return { batches: read };
    const { settlement } = found;
    return {
      batches: read,
      settled: {
        outcome: settlement.outcome,
        ...(settlement.error === undefined ? {} : { error: settlement.error }),
        // The reply is read from the live fold while it is recent, else from the batches of the response that answered it.
        ...(settlement.outcome === 'completed' ? { reply: { ...found.reply(), submissionId } } : {}),
      },
    };
  }

  // ── The conversation stream (streaming-protocol.md §5–§9) ───────────────────────────────

  /**
   * The history view: the whole transcript, folded from the log a page of batches at a time (the
   * live fold does not hold it). The answer is the transcript, so it grows with the conversation;
   * the records it was folded from are not held.
   */
  history(agentName: string, instanceId: string): FlueConversationSnapshot | null {
    const live = this.addressed(agentName, instanceId);
    if (live.incarnation === undefined) return null;
    // A look at the whole log: what a stream holds and is due is committed first.
    live.follow()();
    return this.view.fold(live.key, live.conv.head + 1).snapshot(live.incarnation, true);
  }

  /**
   * The child conversations `task` calls opened under this instance's conversation (recursively),
   * each with its transcript in the history view's shape; null for a never-contacted instance.
   * Never served over HTTP: an in-process inspection path.
   */
  childConversations(agentName: string, instanceId: string): ChildConversation[] | null {
    const live = this.addressed(agentName, instanceId);
    if (live.incarnation === undefined) return null;
    return childConversations(this.view, live.conv);
  }

  streamHead(agentName: string, instanceId: string): { head: number; incarnation: string } | null {
    const live = this.addressed(agentName, instanceId);
    return live.incarnation === undefined ? null : { head: live.conv.head, incarnation: live.incarnation };
  }

  async updates(agentName: string, instanceId: string, afterSeq: number, options: UpdatesOptions): Promise<UpdatesResult> {
    const live = this.addressed(agentName, instanceId);
    if (live.incarnation === undefined) return { kind: 'not_found' };
    if (afterSeq > live.conv.head) return { kind: 'gone', head: live.conv.head };
    await this.following(live, true, async () => {
      if (afterSeq === live.conv.head && options.waitMs > 0) await this.nextAppend(live, options.waitMs, options.signal);
    });
    // Watchers follow a draining response to its end; one parked across the end of the drain gets
    // a retryable 503, not a failure of the closed store.
    if (this.lifecycle.readsClosed()) throw new RuntimeUnavailableError('draining');
    const batches = this.view.boundedBatches(live.key, afterSeq, options.maxBatches, MAX_ANSWER_BATCH_BYTES);
    const chunks = batches.flatMap((batch) => projectBatch(batch, live.conv.conversationId, (seq) => this.snapshotAfter(live, seq)));
    const nextSeq = batches.at(-1)?.seq ?? afterSeq;
    return { kind: 'ok', incarnation: live.incarnation, chunks, nextSeq, upToDate: nextSeq >= live.conv.head };
  }

  /** The snapshot after one batch, folded from the log (resets are rare: a conversation's birth and its compactions). */
  private snapshotAfter(live: LiveConversation, seq: number): Omit<FlueConversationSnapshot, 'incarnation'> {
    return this.view.fold(live.key, seq + 1).snapshot(undefined, true);
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
    const found = this.view.attachment(live.key, attachmentId);
    if (found === undefined) return null;
    return {
      id: found.ref.id,
      mimeType: found.ref.mimeType,
      size: found.ref.size,
      ...(found.ref.filename === undefined ? {} : { filename: found.ref.filename }),
      bytes: found.bytes,
    };
  }
}

/** What a `read()` still waiting when the drain ends rejects with: the submission stays durable. */
function stoppedBeforeSettlement(submissionId: string): RuntimeUnavailableError {
  return new RuntimeUnavailableError('draining', {
    details: `The runtime stopped before submission ${submissionId} settled. It is kept and continues on the next start(): read it again then.`,
    meta: { submissionId },
  });
}

/** Every child conversation retained under `root`, depth first in the order they were opened. */
function childConversations(view: ConversationView, root: Conversation): ChildConversation[] {
  const out: ChildConversation[] = [];
  const visit = (parent: Conversation) => {
    for (const ref of parent.children) {
      const fold = view.fold(ref.stream);
      const incarnation = view.conversationInfo(ref.stream)?.incarnation;
      out.push({
        conversationId: ref.conversationId,
        parentConversationId: parent.conversationId,
        agent: ref.agent,
        toolCallId: ref.parentToolCallId,
        ...(ref.session === undefined ? {} : { session: ref.session }),
        via: ref.parentAssistantEntryId === undefined ? 'harness' : 'conversation',
        snapshot: fold.snapshot(incarnation, true),
      });
      visit(fold);
    }
  };
  visit(root);
  return out;
}
