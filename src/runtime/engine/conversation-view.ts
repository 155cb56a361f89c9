/**
 * The one way the runtime reads its store: every conversation's log fold (kept in memory and
 * caught up with the log as the writer reports its appends), persistent state, the ledger, attachments and child
 * conversations. The engine, the response loop, the reader and both hosts read through it; the
 * conversation writer (conversation-writer.ts) is the one way to write, and advances the folds
 * this view keeps as its batches commit.
 *
 * It imports no engine code: everything above it may import it.
 */
import { Conversation, type FlueConversationSettlement, type ReplySource, type SubmissionReply } from './conversation.ts';
import { type StoredSettlement, decodeSettlement, ledgerOrder } from './settled-submission.ts';
import type { ConversationUsage } from '../common/types.ts';
import { type SinceCheckpoint, freshSince, restoreCheckpoint } from './conversation-checkpoint.ts';
import type { AttachmentRecordRef, ConversationRecord } from '../store/records.ts';
import type { SqlSandboxFiles } from '../store/sql-sandbox-files.ts';
import { type ConversationKey, conversationKey, isRootConversation } from '../store/conversation-key.ts';
import { type KeptRows, MAX_KEPT, OpenSubmissions } from './open-submissions.ts';
import { admittedRow, openAdmission } from './log-admission.ts';
import type { Batch, ConversationInfo, QueuedDelivery, SqlStore, StateHistoryEntry, SubmissionRow, TimerRow } from '../store/sql-store.ts';

/** One conversation's in-memory side: its log fold and who is waiting on it. */
export class LiveConversation {
  /** Where its log lives in the store. */
  readonly key: ConversationKey;
  readonly agentName: string;
  readonly instanceId: string;
  /** The live fold: what the next response needs, not the transcript (conversation.ts). */
  private fold: Conversation;
  readonly listeners = new Set<() => void>();
  /** Committed persistent state (a read cache of the state table). */
  state: Map<string, unknown> | undefined;
  incarnation: string | undefined;
  /** What was written since the last checkpoint: when the writer writes the next one. */
  sinceCheckpoint: SinceCheckpoint = freshSince(0);
  /** The fold holds records the store refused (a failed `ConversationWriter.close`): rebuild it before the next write. */
  foldAhead = false;

  constructor(key: ConversationKey, agentName: string, instanceId: string, conv = new Conversation('live')) {
    this.key = key;
    this.agentName = agentName;
    this.instanceId = instanceId;
    this.fold = conv;
  }

  get conv(): Conversation {
    return this.fold;
  }

  /**
   * The fold replaced by one rebuilt from the store (`ConversationView.reload`). Held records are
   * not in the store (the refused write carried them), so the new fold takes them again and the
   * next batch still writes them.
   */
  replaceFold(from: LiveConversation): void {
    this.fold = from.fold;
    this.sinceCheckpoint = from.sinceCheckpoint;
    if (this.heldBack.length > 0) this.fold.hold(this.heldBack);
  }

  /** Records the fold took that the store does not have yet: they open the next batch written (`hold`). */
  private heldBack: ConversationRecord[] = [];
  private unfollowHeld: (() => void) | undefined;

  get held(): readonly ConversationRecord[] {
    return this.heldBack;
  }

  /**
   * The fold takes `records` now and the store with the next batch written; a reader that starts
   * following the log meanwhile has them written at once (`write`).
   */
  hold(records: readonly ConversationRecord[], write: () => void): void {
    this.fold.hold(records);
    this.heldBack = [...this.heldBack, ...records];
    this.unfollowHeld ??= this.onFollow(write);
  }

  /** The held records were written. */
  heldWritten(): void {
    this.heldBack = [];
    this.unfollowHeld?.();
    this.unfollowHeld = undefined;
  }

  notify(): void {
    for (const listener of [...this.listeners]) listener();
  }

  /** Readers following the log as it grows now (flush-policy.ts's `Following`). */
  private followers = 0;
  /** Streams holding content back, told when a reader arrives. */
  private readonly holders = new Set<() => void>();

  get followed(): boolean {
    return this.followers > 0;
  }

  /** Someone holds this fold: a reader waits on it or follows it, a stream holds content back, or records wait to be written. */
  get attended(): boolean {
    return this.listeners.size > 0 || this.followers > 0 || this.holders.size > 0 || this.heldBack.length > 0 || this.foldAhead;
  }

  onFollow(arrived: () => void): () => void {
    this.holders.add(arrived);
    return () => this.holders.delete(arrived);
  }

  /**
   * A reader starts following the log (the updates view, a read with `onEvent`): streams commit
   * what they hold if it is due, and keep the followed schedule until every reader released.
   */
  follow(): () => void {
    this.followers++;
    for (const arrived of [...this.holders]) arrived();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.followers--;
    };
  }
}

/** A settled submission as readers answer it: its settlement, and its reply read when asked for (in the same task). */
export interface SettledSubmission {
  settlement: FlueConversationSettlement;
  reply(): SubmissionReply;
}

/** Batches read per query when folding a log: the fold holds one page of records at a time. */
const FOLD_PAGE = 64;

/**
 * Idle folds a view keeps: past this many, the oldest idle ones are dropped (`dropIdleFolds`). A
 * Durable Object hosts one conversation and never reaches it; a Node process serving conversation
 * after conversation would otherwise keep every fold it ever woke. A dropped fold comes back from
 * its checkpoint and the log's tail when its conversation is next asked for.
 */
export const IDLE_FOLDS_KEPT = 256;

export class ConversationView {
  private readonly store: SqlStore;
  private readonly lives = new Map<ConversationKey, LiveConversation>();
  /**
   * The newest batch each kept conversation's log holds, as far as this process wrote or read it.
   * Every append goes through the writer, which reports it here, so a kept fold at this head is
   * current without asking the store (a look at a busy conversation is otherwise a query).
   */
  private readonly heads = new Map<ConversationKey, number>();
  /**
   * Submissions this process admitted and has not settled. Every admission and settlement goes
   * through the writer, which reports them here after they commit, so a reader waiting on one of
   * these (a burst's every `read()`) learns it is unsettled without asking the store.
   */
  private readonly unsettled = new Set<string>();
  /**
   * The open submissions of the conversations this process drives, read once and then kept
   * current by the writer's reports (open-submissions.ts): a queue step or a turn boundary asks no query.
   */
  private readonly open = new OpenSubmissions();
  /**
   * The conversations with open submissions, once a host asked (it asks at every wake), then kept
   * by the writer's reports; undefined: the store is asked.
   */
  private openKeys: Set<ConversationKey> | undefined;
  /**
   * The earliest due time of any pending timer (undefined: none), once a host asked (a Durable
   * Object asks at every alarm); `unknown` after any timer write or failed write: the store is asked.
   */
  private nextDue: number | undefined | 'unknown' = 'unknown';
  /**
   * A writer writes this view's store and reports to it (`ConversationWriter` says so as it is
   * made): only then is what the view keeps of the ledger the store's. A view without one (the
   * crash harness's, over a file other processes write) asks the store every time.
   */
  private written = false;
  /** Whether the engine is driving the conversation's queue: its fold is in use even between writes. */
  private readonly driving: (key: ConversationKey) => boolean;
  /** Kept folds past which idle ones are dropped: raised after each drop, so a drop's scan is paid for by the folds kept after it. */
  private dropAbove = IDLE_FOLDS_KEPT;

  constructor(store: SqlStore, driving: (key: ConversationKey) => boolean = () => false) {
    this.store = store;
    this.driving = driving;
  }

  // ── Folds ────────────────────────────────────────────────────────────────────────────────

  /** The conversation's fold, caught up with its log. */
  live(agentName: string, instanceId: string): LiveConversation {
    const key = conversationKey(agentName, instanceId);
    let live = this.lives.get(key);
    if (live === undefined) {
      const info = this.store.getConversation(key);
      // A conversation is created in the transaction of its first batch: without it there is no log to fold.
      if (info === undefined) return new LiveConversation(key, agentName, instanceId);
      live = this.wake(key, agentName, instanceId, info.incarnation);
      // Only conversations that exist are kept: reads of random ids must not grow memory.
      this.kept(live);
    }
    if (live.incarnation === undefined) live.incarnation = this.store.getConversation(key)?.incarnation;
    // The writer reports every batch it appends: a kept fold at that head asks the store nothing.
    const known = this.heads.get(key);
    if (known !== undefined && live.conv.head >= known) return live;
    this.catchUp(live);
    if (this.lives.get(key) === live) this.heads.set(key, live.conv.head);
    return live;
  }

  /** The one writer of this view's store reports to it from now on. */
  writtenBy(): void {
    this.written = true;
  }

  /**
   * The store was made just now (`migrate()` said so) and this view's writer is its only one:
   * no conversation has open work and no timer is pending, known without asking (a new Durable
   * Object would otherwise read both at its start, the timers from a table not made yet).
   */
  storeIsNew(): void {
    if (!this.written) return;
    this.openKeys = new Set();
    this.nextDue = undefined;
  }

  /** The writer committed the admission of `row`; `fresh`: its conversation was born with it. */
  admitted(row: SubmissionRow, fresh = false): void {
    this.unsettled.add(row.id);
    this.open.admitted(row, fresh);
    this.openKeys?.add(row.conversation);
  }

  /** The writer committed the settlement of these submissions of `key`. */
  settledIds(key: ConversationKey, ids: readonly string[]): void {
    for (const id of ids) this.unsettled.delete(id);
    this.open.settled(key, ids);
    this.settledOpenKey(key);
  }

  /** The writer committed a write to a submission's row (a claim): the row as stored now. */
  rewritten(row: SubmissionRow): void {
    this.open.replaced(row);
    if (row.status === 'settled') this.settledOpenKey(row.conversation);
  }

  /** A settlement may have emptied the queue of `key`: known when its rows are kept, else the store is asked next time. */
  private settledOpenKey(key: ConversationKey): void {
    const rows = this.open.rows(key);
    if (rows === undefined || rows === 'many') this.openKeys = undefined;
    else if (rows.length === 0) this.openKeys?.delete(key);
  }

  /** The writer committed the join of these queued deliveries into `leaderId`'s response. */
  joined(key: ConversationKey, ids: readonly string[], leaderId: string): void {
    this.open.joined(key, ids, leaderId);
  }

  /** The writer stamped every open submission of `key` with an abort request at `now`. */
  abortRequested(key: ConversationKey, now: number): void {
    this.open.abortRequested(key, now);
  }

  /**
   * A write to `key` failed: the next look asks the store for its head and its open submissions
   * again (the transaction rolled back, but what the store holds is the store's to say).
   */
  unsure(key: ConversationKey): void {
    this.heads.delete(key);
    this.open.forget(key);
    this.openKeys = undefined;
    this.nextDue = 'unknown';
  }

  /** A ledger write of an unknown conversation failed: every kept queue is read again. */
  ledgerUnsure(): void {
    this.open.clear();
    this.openKeys = undefined;
  }

  /** The highest admission order among the open submissions of `key`, when known (undefined: the store is asked; `maxOrd` undefined: none open). */
  openMaxOrd(key: ConversationKey): { maxOrd: number | undefined } | undefined {
    return this.open.maxOrd(key);
  }

  /**
   * The fold took records whose write then failed: it is rebuilt from the store (its checkpoint,
   * then the log), in place, so everyone holding the conversation sees the log as stored.
   */
  reload(live: LiveConversation): void {
    this.heads.delete(live.key);
    live.replaceFold(this.wake(live.key, live.agentName, live.instanceId, live.incarnation ?? ''));
  }

  /** The writer appended batch `seq` to the log of `key` (any fold of it, kept or not, may be behind now). */
  appended(key: ConversationKey, seq: number): void {
    if (seq > (this.heads.get(key) ?? -1)) this.heads.set(key, seq);
  }

  /**
   * A conversation's live fold, not kept: from its checkpoint when one checks out, else from the
   * start of its log, caught up with the log's head (child conversations open through this).
   */
  wake(key: ConversationKey, agentName: string, instanceId: string, incarnation: string): LiveConversation {
    const restored = this.checkpointOf(key, incarnation);
    const live = new LiveConversation(key, agentName, instanceId, restored?.conv);
    live.incarnation = incarnation;
    live.sinceCheckpoint = freshSince(restored?.bytes ?? 0);
    this.catchUp(live);
    return live;
  }

  /** The stored checkpoint's fold, or undefined when there is none or it does not check out (the log is folded instead). */
  private checkpointOf(key: ConversationKey, incarnation: string): { conv: Conversation; bytes: number } | undefined {
    let stored: ReturnType<SqlStore['readCheckpoint']>;
    try {
      stored = this.store.readCheckpoint(key);
    } catch {
      // Damaged chunks: derived data only, so the log decides.
      return undefined;
    }
    if (stored === undefined) return undefined;
    const restored = restoreCheckpoint(stored, { head: this.store.head(key), incarnation });
    return 'conv' in restored ? { conv: restored.conv, bytes: stored.bytes } : undefined;
  }

  /** Folds the batches after the fold's head, a page at a time, counting them towards the next checkpoint. */
  private catchUp(live: LiveConversation): void {
    for (;;) {
      const page = this.store.readBatchesSized(live.key, live.conv.head, FOLD_PAGE);
      for (const { batch, bytes } of page) {
        live.conv.apply(batch);
        live.sinceCheckpoint.batches++;
        live.sinceCheckpoint.bytes += bytes;
      }
      if (page.length < FOLD_PAGE) return;
    }
  }

  liveByKey(key: ConversationKey): LiveConversation {
    const kept = this.lives.get(key);
    if (kept !== undefined) return this.live(kept.agentName, kept.instanceId);
    const info = this.store.getConversation(key);
    if (info === undefined) throw new Error(`[flue] No conversation is stored under "${key}".`);
    return this.live(info.agent, info.instanceId);
  }

  /** After a birth: the conversation is kept, its fold caught up and its waiters told. */
  keep(live: LiveConversation): void {
    this.kept(live);
    this.live(live.agentName, live.instanceId);
    live.notify();
  }

  /** A fold is kept from now on, after the oldest idle ones are dropped if there are too many. */
  private kept(live: LiveConversation): void {
    if (this.lives.size >= this.dropAbove) this.dropIdleFolds();
    this.lives.set(live.key, live);
  }

  /**
   * Drops the oldest idle folds, down to half the bound. Only a fold nobody holds is idle: one
   * with open work, a queue being driven, a reader waiting or following, or records to write
   * stays, since a second fold of the same conversation would take its writes while the first
   * kept its waiters.
   */
  private dropIdleFolds(): void {
    const idle = [...this.lives.values()].filter((live) => !live.attended && !this.driving(live.key) && this.nothingOpen(live.key));
    for (const live of idle.slice(0, Math.max(0, idle.length - IDLE_FOLDS_KEPT / 2))) {
      this.lives.delete(live.key);
      this.heads.delete(live.key);
      this.open.forget(live.key);
    }
    this.dropAbove = Math.max(IDLE_FOLDS_KEPT, this.lives.size + IDLE_FOLDS_KEPT / 2);
  }

  /** Every conversation whose fold is kept in memory. */
  conversations(): IterableIterator<LiveConversation> {
    return this.lives.values();
  }

  /**
   * A fresh transcript fold of a conversation's first `limit` batches (all by default), read a
   * page at a time: what readers of the history answer from. Not kept in memory.
   */
  fold(key: ConversationKey, limit = Infinity): Conversation {
    return this.foldRange(key, -1, limit - 1);
  }

  /** A fresh transcript fold of the batches after `after`, through `through` (a reply's response). */
  foldRange(key: ConversationKey, after: number, through: number): Conversation {
    const fold = new Conversation();
    for (let head = after; head < through; ) {
      const page = this.store.readBatches(key, head, Math.min(FOLD_PAGE, through - head));
      for (const batch of page) fold.apply(batch);
      if (page.length === 0) break;
      head = page.at(-1)!.seq;
    }
    return fold;
  }

  /** Committed persistent state of the conversation (read once, then kept current by writes). */
  stateOf(live: LiveConversation): Map<string, unknown> {
    if (live.state === undefined) live.state = this.store.readState(live.key);
    return live.state;
  }

  /** Committed persistent state of any conversation, read from the store (a child's, an export's). */
  storedState(key: ConversationKey): Map<string, unknown> {
    return this.store.readState(key);
  }

  /** Every recorded persistent state write, with the batch that explains it. */
  stateHistory(key: ConversationKey): StateHistoryEntry[] {
    return this.store.readStateHistory(key);
  }

  // ── Timers ───────────────────────────────────────────────────────────────────────────────

  /** The conversation's pending `useTimer()` timers, earliest first. */
  timers(live: LiveConversation): TimerRow[] {
    return this.store.timers(live.key);
  }

  /** Timers due at `now` across the store, earliest first. */
  dueTimers(now: number): TimerRow[] {
    // None is due before the earliest one this view knows of.
    if (this.written && this.nextDue !== 'unknown' && (this.nextDue === undefined || this.nextDue > now)) return [];
    return this.store.dueTimers(now);
  }

  /** The earliest due time of any pending timer: when the host must wake next. */
  nextTimerDue(): number | undefined {
    if (!this.written) return this.store.nextTimerDue();
    if (this.nextDue === 'unknown') this.nextDue = this.store.nextTimerDue();
    return this.nextDue;
  }

  /** The writer wrote timers (scheduled, replaced, cancelled or delivered): the next look asks the store. */
  timersWritten(): void {
    this.nextDue = 'unknown';
  }

  // ── The log ──────────────────────────────────────────────────────────────────────────────

  batches(key: ConversationKey, after: number, limit?: number): Batch[] {
    return this.store.readBatches(key, after, limit);
  }

  /** Batches after `after`, at most `limit` of them, stopping once `maxBytes` is passed (always at least one). */
  boundedBatches(key: ConversationKey, after: number, limit: number | undefined, maxBytes: number): Batch[] {
    return this.store.readBatchesSized(key, after, limit, maxBytes).map(({ batch }) => batch);
  }

  conversationInfo(key: ConversationKey): ConversationInfo | undefined {
    // A kept conversation is the stored one: its key names its agent and instance, and the fold
    // holds its incarnation (a host asks at every wake which instance a key is).
    const kept = this.written ? this.lives.get(key) : undefined;
    if (kept?.incarnation !== undefined) return { key, agent: kept.agentName, instanceId: kept.instanceId, incarnation: kept.incarnation };
    return this.store.getConversation(key);
  }

  /** Every conversation in the store, child conversations included. */
  conversationKeys(): ConversationKey[] {
    return this.store.conversationKeys();
  }

  /** The conversation id of a child conversation, once it exists. */
  childConversationId(key: ConversationKey): string | undefined {
    const birth = this.store.firstBatch(key)?.records[0];
    return birth?.type === 'conversation_created' ? birth.conversationId : undefined;
  }

  // ── Settlements and the usage ledger ─────────────────────────────────────────────────────

  /**
   * A settled submission of the conversation; undefined while it is not settled, or is none of
   * this conversation's. From the live fold while it is recent, else from its row
   * (settled-submission.ts); a row settled before rows kept their settlements, from the log.
   */
  settled(live: LiveConversation, submissionId: string): SettledSubmission | undefined {
    const recent = live.conv.settlements.get(submissionId);
    if (recent !== undefined) {
      // Asked for in the same task (the fold forgets older settlements as batches land).
      const source = live.conv.replySource(submissionId);
      const reply = () => (source === undefined ? live.conv.reply(submissionId) : this.replyInLog(live.key, source));
      return { settlement: recent, reply };
    }
    if (this.unsettled.has(submissionId)) return undefined;
    const row = this.store.settlementOf(live.key, submissionId);
    const found =
      row === undefined
        ? this.settledInLog(live, submissionId)
        : { stored: row.settlement === null ? undefined : decodeSettlement(row.settlement) };
    if (found === undefined) return undefined;
    const { stored } = found;
    if (stored === undefined) {
      const fold = this.fold(live.key, live.conv.head + 1);
      const settlement = fold.settlements.get(submissionId);
      return settlement === undefined ? undefined : { settlement, reply: () => fold.reply(submissionId) };
    }
    const { reply } = stored;
    const replyOf = () => (reply === undefined ? { text: '', data: {} } : this.replyInLog(live.key, { ...reply, through: stored.seq }));
    return { settlement: settlementOf(submissionId, stored), reply: replyOf };
  }

  /**
   * The settlement of a submission admitted in the log and settled with no row (`SqlStore.admitsInLog`):
   * from the live fold since its last checkpoint, else from the page a checkpoint wrote.
   */
  private settledInLog(live: LiveConversation, submissionId: string): { stored: StoredSettlement | undefined } | undefined {
    if (!this.store.admitsInLog) return undefined;
    const recent = live.conv.unpagedSettlement(submissionId);
    if (recent !== undefined) return { stored: recent };
    const paged = this.store.settledPageEntry(live.key, submissionId);
    return paged === undefined ? undefined : { stored: decodeSettlement(paged) };
  }

  /** A settled submission's reply, folded from the batches of the response that holds it. */
  private replyInLog(key: ConversationKey, source: ReplySource): SubmissionReply {
    return this.foldRange(key, source.after, source.through).reply(source.of);
  }

  /**
   * The conversation's usage ledger as `getUsage()` answers it: the sum from the live fold, the
   * entries from the submissions' rows. Settlements the rows do not keep (settled before they
   * did, or copied by a fork) are read from the log: the whole log when some row lacks its
   * settlement, else the batches before the first one a row keeps.
   */
  usage(live: LiveConversation): ConversationUsage {
    const rows = this.store.settlementsOf(live.key);
    const kept = rows.map(({ id, settlement }) => ({ id, stored: settlement === null ? undefined : decodeSettlement(settlement) }));
    if (this.store.admitsInLog) kept.push(...this.settlementsInLog(live, rows));
    const stored = kept.flatMap(({ id, stored }) => (stored === undefined ? [] : [{ id, stored }]));
    let submissions = ledgerOrder(stored);
    if (live.conv.settledCount > stored.length) {
      const whole = stored.length < kept.length || stored.length === 0;
      const before = whole ? live.conv.head + 1 : stored.reduce((first, entry) => Math.min(first, entry.stored.seq), Infinity);
      const logged = this.fold(live.key, before).ledger;
      submissions = whole ? logged : [...logged, ...submissions];
    }
    return { total: structuredClone(live.conv.ledgerTotal), submissions };
  }

  /** The settlements of submissions admitted in the log that no row keeps: the pages', then the live fold's since them. */
  private settlementsInLog(
    live: LiveConversation,
    rows: readonly { id: string }[],
  ): { id: string; stored: StoredSettlement | undefined }[] {
    const paged = this.store.settledPageEntries(live.key).map(({ id, settlement }) => ({ id, stored: decodeSettlement(settlement) }));
    // Each id once: a row made for one after its admission (conversation-writer.ts) keeps the same
    // settlement, and a fold rebuilt from the whole log notes again what a page holds.
    const seen = new Set(rows.map((row) => row.id));
    const fresh: { id: string; stored: StoredSettlement | undefined }[] = [];
    for (const entry of [...paged, ...live.conv.unpagedSettlements]) {
      if (seen.has(entry.id)) continue;
      seen.add(entry.id);
      fresh.push(entry);
    }
    return fresh;
  }

  submission(id: string): SubmissionRow | undefined {
    return this.store.getSubmission(id);
  }

  /** Unsettled submissions of the conversation, in admission order (joined ones included). */
  openSubmissions(key: ConversationKey): SubmissionRow[] {
    const rows = this.openRows(key);
    return rows === 'many' ? this.store.openSubmissions(key) : [...rows];
  }

  /** The ids of the conversation's unsettled submissions, in admission order. */
  openSubmissionIds(key: ConversationKey): string[] {
    const rows = this.openRows(key);
    return rows === 'many' ? this.store.openSubmissionIds(key) : rows.map((row) => row.id);
  }

  /** The submission the conversation's queue runs next: its first unsettled one not joined into a response. */
  queueHead(key: ConversationKey): SubmissionRow | undefined {
    const rows = this.openRows(key);
    return rows === 'many' ? this.store.queueHead(key) : rows.find((row) => row.status !== 'joined');
  }

  /**
   * Unsettled submissions not joined into a response, in admission order: the leader and what may
   * join it. A queue too long to keep is read from the store, which leaves the joined ones out.
   */
  unjoinedDeliveries(key: ConversationKey): QueuedDelivery[] {
    const rows = this.openRows(key);
    return rows === 'many' ? this.store.unjoinedDeliveries(key) : rows.filter((row) => row.status !== 'joined');
  }

  /** The ids of the deliveries joined into the leader's response that wait for its settlement, in admission order. */
  joinedIds(leader: { id: string; conversation: ConversationKey }): string[] {
    const rows = this.openRows(leader.conversation);
    if (rows === 'many') return this.store.joinedIds(leader);
    return rows.flatMap((row) => (row.status === 'joined' && row.joinedInto === leader.id ? [row.id] : []));
  }

  /** The conversation's open rows as kept, read from the store (at most one more than is kept) when they are not. */
  private openRows(key: ConversationKey): KeptRows {
    // Without a writer reporting to this view, only the store knows: every question goes to it.
    if (!this.written) return 'many';
    return this.open.rows(key) ?? this.open.fill(key, this.storedOpenRows(key));
  }

  /**
   * The conversation's open rows as the store holds them (at most one more than is kept): the
   * ledger's, after the submission admitted in the log that is open, if one is (it was admitted
   * when nothing else was open, so it is first; once it has its row, the ledger's row stands for it).
   */
  private storedOpenRows(key: ConversationKey): SubmissionRow[] {
    const rows = this.store.openSubmissions(key, MAX_KEPT + 1);
    const logged = this.openInLog(key);
    return logged === undefined || rows.some((row) => row.id === logged.id) ? rows : [logged, ...rows];
  }

  /** The conversation's open submission admitted in the log, read from its log's tail (none on a store that admits none). */
  private openInLog(key: ConversationKey): SubmissionRow | undefined {
    // Only an instance's root conversation takes deliveries: a task's child conversation has none.
    if (!this.store.admitsInLog || !isRootConversation(key)) return undefined;
    const admission = openAdmission(this.store.newestAdmissionOrSettlement(key)?.records);
    return admission === undefined ? undefined : admittedRow(admission, key);
  }

  /** Whether the conversation has no open submission (its rows are read once, then kept: a burst's admissions ask no query). */
  nothingOpen(key: ConversationKey): boolean {
    const rows = this.openRows(key);
    return rows !== 'many' && rows.length === 0;
  }

  /** The open submission of `key` admitted in the log and still without a row, as kept (no query: none when the rows are not kept). */
  keptInLog(key: ConversationKey): SubmissionRow | undefined {
    const rows = this.open.rows(key);
    return rows === undefined || rows === 'many' ? undefined : firstInLog(rows);
  }

  /** The open submission of `key` admitted in the log and still without a row, reading the store when the rows are not kept. */
  rowlessInLog(key: ConversationKey): SubmissionRow | undefined {
    const rows = this.openRows(key);
    return rows === 'many' ? undefined : firstInLog(rows);
  }

  /** Conversations with unsettled submissions: what a host drives on start (recovery) and at every wake. */
  keysWithOpenWork(): ConversationKey[] {
    if (!this.written) return this.storedOpenKeys();
    this.openKeys ??= new Set(this.storedOpenKeys());
    return [...this.openKeys];
  }

  /** The conversations with open submissions as the store holds them: open rows, or an open admission in the log. */
  private storedOpenKeys(): ConversationKey[] {
    const keys = this.store.keysWithOpenWork();
    if (!this.store.admitsInLog) return keys;
    const open = new Set(keys);
    for (const key of this.store.conversationKeys()) if (!open.has(key) && this.openInLog(key) !== undefined) keys.push(key);
    return keys;
  }

  /** Every submission, settled ones included, in admission order: what a post-mortem counts. */
  submissions(): SubmissionRow[] {
    return this.store.listSubmissions();
  }

  // ── Attachments and files ────────────────────────────────────────────────────────────────

  attachment(key: ConversationKey, id: string): { ref: AttachmentRecordRef; bytes: Uint8Array<ArrayBuffer> } | undefined {
    return this.store.readAttachment(key, id);
  }

  /** The conversation's durable `virtualSandbox()` files (the sandbox reads and writes them itself). */
  sandboxFiles(live: LiveConversation | ConversationKey): SqlSandboxFiles {
    return this.store.sandboxFiles(typeof live === 'string' ? live : live.key);
  }
}

function settlementOf(submissionId: string, stored: StoredSettlement): FlueConversationSettlement {
  return {
    submissionId,
    outcome: stored.outcome,
    ...(stored.error === undefined ? {} : { error: stored.error }),
    ...(stored.answeredBySubmissionId === undefined ? {} : { answeredBySubmissionId: stored.answeredBySubmissionId }),
  };
}

/**
 * The open submission admitted in the log, when one is: it was admitted with nothing else open and
 * keeps its place when it gets its row, so it is the first open row or none (no scan: a burst asks
 * at every admission).
 */
function firstInLog(rows: readonly SubmissionRow[]): SubmissionRow | undefined {
  const first = rows[0];
  return first?.inLog === true ? first : undefined;
}
