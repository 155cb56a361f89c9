/**
 * The one way the runtime reads its store: every conversation's log fold (kept in memory and
 * caught up with the log on each look), persistent state, the ledger, attachments and child
 * conversations. The engine, the response loop, the reader and both hosts read through it; the
 * conversation writer (conversation-writer.ts) is the one way to write, and advances the folds
 * this view keeps as its batches commit.
 *
 * It imports no engine code: everything above it may import it.
 */
import { Conversation } from './conversation.ts';
import type { AttachmentRecordRef } from '../store/records.ts';
import type { SqlSandboxFiles } from '../store/sql-sandbox-files.ts';
import type { Batch, SqlStore, StreamInfo, SubmissionRow } from '../store/sql-store.ts';

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

export function streamKey(agentName: string, instanceId: string): string {
  return `agents/${agentName}/${instanceId}`;
}

/**
 * The stream of a `task` call's child conversation, keyed deterministically by the delegating
 * stream, the step that issued the call and the call id.
 */
export function childConversationStream(parentStream: string, stepId: string, toolCallId: string): string {
  return `tasks/${parentStream}/${stepId}/${toolCallId}`;
}

export class ConversationView {
  private readonly store: SqlStore;
  private readonly lives = new Map<string, LiveConversation>();

  constructor(store: SqlStore) {
    this.store = store;
  }

  // ── Folds ────────────────────────────────────────────────────────────────────────────────

  /** The conversation's fold, caught up with its log. */
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

  liveByStream(stream: string): LiveConversation {
    const info = this.store.getStream(stream);
    if (info === undefined) throw new Error(`[flue] No conversation stream "${stream}".`);
    return this.live(info.agent, info.instanceId);
  }

  /** After a birth: the conversation is kept, its fold caught up and its waiters told. */
  keep(live: LiveConversation): void {
    this.lives.set(live.stream, live);
    this.live(live.agentName, live.instanceId);
    live.notify();
  }

  /** Every conversation whose fold is kept in memory. */
  conversations(): IterableIterator<LiveConversation> {
    return this.lives.values();
  }

  /** A fresh fold of a stream's first `limit` batches (all by default); child conversations are not kept in memory. */
  fold(stream: string, limit?: number): Conversation {
    const fold = new Conversation();
    for (const batch of this.store.readBatches(stream, -1, limit)) fold.apply(batch);
    return fold;
  }

  /** Committed persistent state of the conversation (read once, then kept current by writes). */
  stateOf(live: LiveConversation): Map<string, unknown> {
    if (live.state === undefined) live.state = this.store.readState(live.stream);
    return live.state;
  }

  // ── The log ──────────────────────────────────────────────────────────────────────────────

  batches(stream: string, after: number, limit?: number): Batch[] {
    return this.store.readBatches(stream, after, limit);
  }

  /** Batches after `after`, at most `limit` of them, stopping once `maxBytes` is passed (always at least one). */
  boundedBatches(stream: string, after: number, limit: number | undefined, maxBytes: number): Batch[] {
    return this.store.readBatchesSized(stream, after, limit, maxBytes).map(({ batch }) => batch);
  }

  streamInfo(stream: string): StreamInfo | undefined {
    return this.store.getStream(stream);
  }

  /** Every stream in the store, child conversations' included. */
  streams(): string[] {
    return this.store.listStreams();
  }

  /** The conversation id of a child conversation, once it exists. */
  childConversationId(stream: string): string | undefined {
    const birth = this.store.firstBatch(stream)?.records[0];
    return birth?.type === 'conversation_created' ? birth.conversationId : undefined;
  }

  // ── The ledger ───────────────────────────────────────────────────────────────────────────

  submission(id: string): SubmissionRow | undefined {
    return this.store.getSubmission(id);
  }

  /** Unsettled submissions of the stream, in admission order (joined ones included). */
  openSubmissions(stream: string): SubmissionRow[] {
    return this.store.openSubmissions(stream);
  }

  joinedInto(leader: { id: string; stream: string }): SubmissionRow[] {
    return this.store.joinedInto(leader);
  }

  /** Streams with unsettled submissions: what a host drives on start (recovery). */
  streamsWithOpenWork(): string[] {
    return this.store.listStreamsWithOpenWork();
  }

  /** Every submission, settled ones included, in admission order: what a post-mortem counts. */
  submissions(): SubmissionRow[] {
    return this.store.listSubmissions();
  }

  // ── Attachments and files ────────────────────────────────────────────────────────────────

  attachment(stream: string, id: string): { ref: AttachmentRecordRef; bytes: Uint8Array<ArrayBuffer> } | undefined {
    return this.store.readAttachment(stream, id);
  }

  /** The conversation's durable `virtualSandbox()` files (the sandbox reads and writes them itself). */
  sandboxFiles(live: LiveConversation): SqlSandboxFiles {
    return this.store.sandboxFiles(live.stream);
  }
}
