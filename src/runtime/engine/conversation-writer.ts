/**
 * The one writer of every conversation in a store: it alone appends batches, writes persistent
 * state, records durable step memos, joins queued deliveries, gives birth to child conversations
 * and moves submissions through the ledger. The engine (admission, scheduling, settlement), the
 * response loop and task runs decide what to write; this module writes it, each write one
 * transaction with the batch that explains it, and advances the log folds the read view keeps
 * (conversation-view.ts) as its batches commit. It writes only: every read goes through the view.
 *
 * It imports no engine code: everything above it may import it.
 */
import { newId } from '../common/ids.ts';
import { utf8Size } from '../common/limits.ts';
import { ConversationRecordInvariantError } from '../common/errors.ts';
import { type ConversationView, LiveConversation } from './conversation-view.ts';
import { CHECKPOINT_VERSION, checkpointDue, checkpointValue, freshSince } from './conversation-checkpoint.ts';
import { type StoredSettlement, encodeSettlement } from './settled-submission.ts';
import type { ConversationKey } from '../store/conversation-key.ts';
import type { AttachmentRecordRef, ConversationRecord, SubmissionOutcome } from '../store/records.ts';
import type {
  AttemptClaim,
  QueuedDelivery,
  SqlStore,
  StateHistoryEntry,
  SubmissionKind,
  SubmissionPayload,
  SubmissionRow,
  TimerRow,
} from '../store/sql-store.ts';
import type { TimerWrite } from './pending-timers.ts';
import type { DeliveryOrigin } from '../common/types.ts';
import { admittedRow, withoutAdmission } from './log-admission.ts';
import type { AdmissionRecord } from '../store/records.ts';

/** One settlement as stored: its batch, the ids of the ledger rows it settles, their outcome and error message. */
export interface SettlementWrite {
  records: ConversationRecord[];
  settled: readonly string[];
  outcome: SubmissionOutcome;
  error: string | null;
}

/** A durable tool call's step memos: first write wins, a recorded step is never rewritten. */
export interface StepMemo {
  lookup(step: string): { found: true; value: unknown } | { found: false };
  record(step: string, value: unknown): void;
}

/** One conversation of an import, its keys already those of the new conversation. */
export interface ImportedConversation {
  key: ConversationKey;
  batches: readonly { seq: number; records: ConversationRecord[] }[];
  state: ReadonlyMap<string, unknown>;
  history: readonly StateHistoryEntry[];
  attachments: readonly { ref: AttachmentRecordRef; bytes: Uint8Array }[];
  files: readonly ({ path: string; kind: 'dir'; mtime: number } | { path: string; kind: 'file'; mtime: number; bytes: Uint8Array })[];
}

/** A new child conversation's first records, and the record on its parent that says where it lives. */
export interface ChildBirth {
  records: ConversationRecord[];
  retained: ConversationRecord;
}

export class ConversationWriter {
  private readonly store: SqlStore;
  /** Whose folds this writer advances as its batches commit. */
  private readonly view: ConversationView;
  /** Told after a write changed the pending timers, so the host re-arms its one wake-up. */
  private readonly timersChanged: () => void;

  constructor(store: SqlStore, view: ConversationView, timersChanged: () => void = () => {}) {
    this.store = store;
    this.view = view;
    this.timersChanged = timersChanged;
    view.writtenBy();
  }

  /** Whether a model step written whole keeps its text once, in its completed message (SqlStore.writesStepTextOnce). */
  get writesStepTextOnce(): boolean {
    return this.store.writesStepTextOnce;
  }

  // ── Commits ──────────────────────────────────────────────────────────────────────────────

  /**
   * Appends one batch (plus any ledger writes that must land with it) and advances the fold. When
   * a checkpoint is due, the fold as it stands before this batch is stored in the same transaction
   * (conversation-checkpoint.ts): the fold only advances once the batch is committed.
   */
  commit(live: LiveConversation, records: ConversationRecord[], alsoWrite?: () => void): void {
    this.reloadIfAhead(live);
    if (live.held.length > 0 && records.length > 0 && !heldRides(this.store, live, records)) this.commit(live, []);
    // Records the fold holds back (`hold`) open this batch. The fold already has them, so it
    // cannot stand for the log before this batch: the checkpoint waits for the next commit.
    const held = live.held;
    const due = held.length === 0 && checkpointDue(live.sinceCheckpoint);
    let checkpointBytes = 0;
    let appended: { seq: number; bytes: number };
    const write = () => {
      // The fold is this single writer's view of the log, so its head is the store's.
      const sized = this.store.appendSized(live.key, held.length === 0 ? records : [...held, ...records], live.conv.head);
      alsoWrite?.();
      if (due) {
        const value = checkpointValue(live.conv, live.incarnation);
        checkpointBytes = this.store.writeCheckpoint(live.key, live.conv.head, CHECKPOINT_VERSION, { value });
        this.writeSettledPage(live);
      }
      return sized;
    };
    try {
      // A batch alone is atomic on its own (most streamed batches): no transaction around it.
      appended = alsoWrite === undefined && !due ? write() : this.store.transaction(write);
    } catch (error) {
      // Something else may have written the log (which only this writer should): the next look
      // reads the store again instead of trusting the head this process knows, so a retry can succeed.
      this.view.unsure(live.key);
      throw error;
    }
    const { seq, bytes } = appended;
    // The page holds them now; this batch's own settlements go to the next one.
    if (due) live.conv.unpagedWritten();
    live.heldWritten();
    this.view.appended(live.key, seq);
    live.conv.apply({ seq, records });
    if (due) live.sinceCheckpoint = freshSince(checkpointBytes);
    live.sinceCheckpoint.batches++;
    live.sinceCheckpoint.bytes += bytes;
    if (records.some((record) => record.type === 'compaction')) live.sinceCheckpoint.compacted = true;
    live.notify();
  }

  /**
   * Gives the fold `records` now and writes them as the start of the next batch (`commit` or
   * `close`), one row where two would be, unless that row would take an overflow page more than
   * the batch alone (`heldRides`). A reader that starts following the log first has them
   * written at once, in a batch of their own. Until then the store does not have them: a crash
   * loses them, so only records the store can make again belong here (a response's input, which
   * its open submission holds; a turn's resource narration, which the attempt that runs again
   * renders again). When a checkpoint is due they are committed now, carrying it: the
   * batch that would take them may be a response's last (`close`), which carries none, and a
   * conversation whose every turn is one such batch would never be checkpointed.
   */
  hold(live: LiveConversation, records: ConversationRecord[]): void {
    this.reloadIfAhead(live);
    if (checkpointDue(live.sinceCheckpoint)) {
      this.commit(live, records);
      return;
    }
    live.hold(records, () => {
      try {
        if (live.held.length > 0) this.commit(live, []);
      } catch {
        // Still held: the response's next batch writes them (or its attempt fails with that write).
      }
    });
  }

  /** Commits a batch together with the persistent state and timer writes it explains. */
  commitWithState(
    live: LiveConversation,
    records: ConversationRecord[],
    writes: readonly [string, unknown][],
    timers: readonly TimerWrite[] = [],
  ): void {
    this.reloadIfAhead(live);
    // Read before the writes land (a batch that writes no state reads none).
    const state = writes.length > 0 ? this.view.stateOf(live) : undefined;
    // The batch's sequence: the one `commit` appends under (the fold's head is the store's).
    const seq = live.conv.head + 1;
    // Nothing to write beside the batch (most tool results): the batch alone, with no transaction.
    const alsoWrite =
      writes.length === 0 && timers.length === 0
        ? undefined
        : () => {
            for (const [name, value] of writes) this.store.writeState(live.key, name, value, seq);
            for (const [name, timer] of timers) {
              if (timer === null) this.store.deleteTimer(live.key, name);
              else this.store.putTimer(timer);
            }
          };
    this.commit(live, records, alsoWrite);
    for (const [name, value] of writes) state!.set(name, value);
    if (timers.length > 0) {
      this.view.timersWritten();
      this.timersChanged();
    }
  }

  /**
   * A due timer becomes its delivery: the queued submission (unless `submission` is undefined,
   * when one with its id was admitted already) and the timer row's removal, in one transaction,
   * so a crash leaves either the pending timer or its delivery, never both or neither.
   */
  fireTimer(
    timer: TimerRow,
    submission: { id: string; kind: SubmissionKind; payload: SubmissionPayload; acceptedAt: string } | undefined,
  ): void {
    if (submission !== undefined) this.giveRow(timer.conversation);
    const open = this.view.openMaxOrd(timer.conversation);
    this.view.timersWritten();
    const row = this.guarded(timer.conversation, () =>
      this.store.transaction(() => {
        this.store.deleteTimerId(timer.conversation, timer.id);
        return submission === undefined ? undefined : this.store.storeSubmission({ ...submission, conversation: timer.conversation }, open);
      }),
    );
    if (row !== undefined) this.view.admitted(row);
  }

  /** Queued deliveries join the leader's response at a turn boundary: their inputs and marks, in one batch. */
  join(live: LiveConversation, rows: readonly QueuedDelivery[], leaderId: string): void {
    const ts = new Date().toISOString();
    const inputs = rows.map((row) => inputRecord(row, leaderId, ts));
    this.commit(live, inputs, () => {
      this.store.markJoined(
        rows.map((row) => row.id),
        leaderId,
      );
    });
    this.view.joined(
      live.key,
      rows.map((row) => row.id),
      leaderId,
    );
  }

  /**
   * Settles submissions with the batch that says so; the first terminal state of a row wins. Each
   * row keeps what readers need of its settlement (settled-submission.ts), so the live fold can forget it.
   */
  settle(live: LiveConversation, { records, settled, outcome, error }: SettlementWrite): void {
    this.reloadIfAhead(live);
    const stored = live.conv.settlementsToStore(records, live.conv.head + 1);
    const rows = this.ledgerRows(live.key, settled, stored);
    // Only submissions admitted in the log (no row to mark): the batch alone, with no transaction.
    this.commit(live, records, rows.length === 0 ? undefined : () => this.store.markSettled(rows, outcome, error, Date.now()));
    this.view.settledIds(live.key, settled);
  }

  /**
   * A response's last batch and its settlement, written as one batch (one row where two would be).
   * The settlement is made from the fold with the last records applied — its ledger entry counts
   * the last model step, its reply is that step's message — so the fold takes them first, and
   * `settle` (which may throw: the crash probe's settlement point) runs between. A failed write
   * puts the fold back as the store has it. No checkpoint rides on this batch: the fold stands
   * mid-batch while it is written, and the next commit that finds one due writes it. The caller
   * wakes the conversation's readers (`LiveConversation.notify`) once it has announced the settlement.
   */
  close(live: LiveConversation, records: ConversationRecord[], settle: () => SettlementWrite): SettlementWrite {
    this.reloadIfAhead(live);
    if (live.held.length > 0 && !heldRides(this.store, live, records, SETTLEMENT_BYTES)) this.commit(live, []);
    const seq = live.conv.head + 1;
    let write: SettlementWrite;
    let bytes: number;
    try {
      const held = live.held;
      live.conv.apply({ seq, records });
      write = settle();
      const stored = live.conv.settlementsToStore(write.records, seq);
      const rows = this.ledgerRows(live.key, write.settled, stored);
      const append = () => this.store.appendSized(live.key, [...held, ...records, ...write.records], seq - 1).bytes;
      // A submission admitted in the log has no row to mark: the batch alone is atomic on its own.
      bytes =
        rows.length === 0
          ? append()
          : this.store.transaction(() => {
              const appended = append();
              this.store.markSettled(rows, write.outcome, write.error, Date.now());
              return appended;
            });
    } catch (error) {
      live.foldAhead = true;
      this.view.unsure(live.key);
      this.reloadIfAhead(live, error);
      throw error;
    }
    live.heldWritten();
    this.view.appended(live.key, seq);
    live.conv.apply({ seq, records: write.records });
    live.sinceCheckpoint.batches++;
    live.sinceCheckpoint.bytes += bytes;
    this.view.settledIds(live.key, write.settled);
    // Readers are woken once the engine has told observers of the settlement (`announced`), so a
    // read does not resolve before the response's closing events, as after a settlement of its own.
    return write;
  }

  /**
   * The settlements of submissions admitted in the log since the last checkpoint, beside the one
   * being written (in its transaction): what their rows would keep, one row for the interval.
   */
  private writeSettledPage(live: LiveConversation): void {
    const unpaged = live.conv.unpagedSettlements;
    if (unpaged.length === 0) return;
    // A fold rebuilt from the whole log (no checkpoint it could trust) notes again what pages hold.
    const paged = this.store.lastSettledPage(live.key);
    const entries = unpaged.flatMap(({ id, stored }) => (stored.seq > paged ? [{ id, settlement: encodeSettlement(stored) }] : []));
    if (entries.length > 0) this.store.writeSettledPage(live.key, live.conv.head, entries);
  }

  /**
   * The ledger rows a settlement marks, each with what readers need of it (written in the
   * settlement batch's transaction). A submission admitted in the log has no row: its record is
   * its settlement, and the next checkpoint's page keeps what a row would (`writeSettledPage`).
   */
  private ledgerRows(
    key: ConversationKey,
    settled: readonly string[],
    stored: ReadonlyMap<string, StoredSettlement>,
  ): { id: string; settlement: string | null }[] {
    const rowless = this.view.keptInLog(key)?.id;
    return settled
      .filter((id) => id !== rowless)
      .map((id) => {
        const settlement = stored.get(id);
        return { id, settlement: settlement === undefined ? null : encodeSettlement(settlement) };
      });
  }

  /**
   * A fold that took records the store then refused is rebuilt before anything is written after
   * it (a batch appended under its head would leave a gap in the log). When the store refuses the
   * rebuild too, the fold stays marked, and `during` (the failure being handled) is what is thrown.
   */
  private reloadIfAhead(live: LiveConversation, during?: unknown): void {
    if (!live.foldAhead) return;
    try {
      this.view.reload(live);
      live.foldAhead = false;
    } catch (error) {
      if (during === undefined) throw error;
    }
  }

  // ── Admission and the ledger ─────────────────────────────────────────────────────────────

  /**
   * Stores an admitted submission: a new conversation's birth record first when `birth` is set,
   * then the ledger row and its attachment bytes, in one transaction. `claim` is its first attempt,
   * stored with the row when nothing else of the conversation is open; answers whether it was.
   */
  admit(
    live: LiveConversation,
    birth: ConversationRecord | undefined,
    submission: AdmittedSubmission,
    attachments: readonly { ref: AttachmentRecordRef; bytes: Uint8Array }[],
  ): boolean {
    if (this.mayAdmitInLog(live, birth, submission, attachments)) {
      this.admitInLog(live, birth, submission as LogAdmitted);
      return true;
    }
    if (birth === undefined) this.giveRow(live.key);
    // A conversation born now has nothing open (its submissions are stored with it, never before).
    const open = birth === undefined ? this.view.openMaxOrd(live.key) : { maxOrd: undefined };
    const incarnation = newIncarnation();
    let born: CommittedBatch | undefined;
    const write = () => {
      if (birth !== undefined) born = this.bear(live, birth, incarnation);
      const row = this.store.storeSubmission({ ...submission, conversation: live.key }, open);
      for (const attachment of attachments) this.store.putAttachment(live.key, attachment.ref, attachment.bytes);
      return row;
    };
    // The ledger row alone is atomic by itself (`storeSubmission`): a burst's every send skips a
    // transaction around it.
    const row = this.guarded(live.key, () => (birth === undefined && attachments.length === 0 ? write() : this.store.transaction(write)));
    if (born !== undefined) this.foldBirth(live, incarnation, [born]);
    this.view.admitted(row, birth !== undefined);
    return row.status === 'running';
  }

  /** A new conversation's stream row and its birth batch, in the caller's transaction. */
  private bear(live: LiveConversation, birth: ConversationRecord, incarnation: string): CommittedBatch {
    this.store.createConversation({ key: live.key, agent: live.agentName, instanceId: live.instanceId, incarnation });
    // Created in this transaction, so its log is empty: the birth goes at the fold's head (-1).
    return { ...this.store.appendSized(live.key, [birth], live.conv.head), records: [birth] };
  }

  /** The fold of a conversation just born takes its committed batches, as `commit` does: keeping them reads nothing back. */
  private foldBirth(live: LiveConversation, incarnation: string, batches: readonly CommittedBatch[]): void {
    live.incarnation = incarnation;
    for (const { seq, bytes, records } of batches) {
      this.view.appended(live.key, seq);
      live.conv.apply({ seq, records });
      live.sinceCheckpoint.batches++;
      live.sinceCheckpoint.bytes += bytes;
    }
  }

  /**
   * Whether this admission lives in the log alone: on a store that
   * admits in the log, an unkeyed delivery without attachments, its first attempt claimed, to a
   * conversation with nothing open. Anything else needs the ledger: a queue's order, a key's lookup.
   */
  private mayAdmitInLog(
    live: LiveConversation,
    birth: ConversationRecord | undefined,
    submission: AdmittedSubmission,
    attachments: readonly unknown[],
  ): boolean {
    if (!this.store.admitsInLog || submission.claim === undefined || submission.payload.idempotencyKey !== undefined) return false;
    if (attachments.length > 0 || submission.payload.attachments !== undefined) return false;
    return birth !== undefined || this.view.nothingOpen(live.key);
  }

  /**
   * Admits a submission as its input record alone, with what its row would hold besides the
   * message (`LogAdmission`): one batch (after the birth's, for a new conversation) where the
   * ledger took a row and its open-queue entry. The receipt is returned after it commits, so the
   * accepted work is as durable as a row makes it.
   */
  private admitInLog(live: LiveConversation, birth: ConversationRecord | undefined, submission: LogAdmitted): void {
    const { claim } = submission;
    const input: ConversationRecord = {
      ...inputRecord(submission, undefined, submission.acceptedAt),
      admission: {
        acceptedAt: submission.acceptedAt,
        attemptId: claim.attemptId,
        startedAt: claim.now,
        maxAttempts: claim.maxAttempts,
        timeoutMs: claim.timeoutMs,
      },
    };
    if (birth === undefined) {
      this.commit(live, [input]);
    } else {
      const incarnation = newIncarnation();
      // The birth keeps its batch of its own (a fork at offset 0 holds it alone), in the admission's transaction.
      const batches = this.guarded(live.key, () =>
        this.store.transaction(() => {
          const born = this.bear(live, birth, incarnation);
          return [born, { ...this.store.appendSized(live.key, [input], born.seq), records: [input] }];
        }),
      );
      this.foldBirth(live, incarnation, batches);
    }
    this.view.admitted(admittedRow(input as AdmissionRecord, live.key), birth !== undefined);
  }

  /**
   * Gives the conversation's open submission admitted in the log its ledger row, made from its
   * admission, before anything else writes to the conversation's ledger (another admission, a
   * timer's delivery, a claim, a continuation, an abort): from then on every question about it is
   * the ledger's, and later rows come after it in admission order. A crash after it leaves the row
   * and the admission record, which agree (the view reads the row).
   */
  private giveRow(key: ConversationKey): void {
    if (!this.store.admitsInLog) return;
    const logged = this.view.rowlessInLog(key);
    if (logged === undefined) return;
    const { id, conversation, kind, payload, acceptedAt } = logged;
    const claim = { attemptId: logged.attemptId!, now: logged.startedAt!, maxAttempts: logged.maxAttempts!, timeoutMs: logged.timeoutMs! };
    const row = this.guarded(key, () =>
      this.store.storeSubmission({ id, conversation, kind, payload, acceptedAt, claim }, { maxOrd: undefined }),
    );
    this.view.rewritten(row);
  }

  /** Claims the next attempt of submission `row`; answers its row as stored then. */
  claimAttempt(row: Pick<SubmissionRow, 'id' | 'conversation'>, attempt: AttemptClaim): SubmissionRow {
    this.giveRow(row.conversation);
    const { id } = row;
    let claimed: SubmissionRow;
    try {
      claimed = this.store.claimAttempt(id, attempt);
    } catch (error) {
      // Whose row it is is not known here: every kept queue is read again.
      this.view.ledgerUnsure();
      throw error;
    }
    this.view.rewritten(claimed);
    return claimed;
  }

  /** The running attempt of `row` yielded: the next wake continues it without spending an attempt. */
  markContinuation(row: Pick<SubmissionRow, 'id' | 'conversation'>): void {
    this.giveRow(row.conversation);
    this.store.markContinuation(row.id);
  }

  /** Stamps every unsettled submission of the conversation; answers how many there were. */
  requestAbort(live: LiveConversation, now: number): number {
    this.giveRow(live.key);
    const affected = this.guarded(live.key, () => this.store.transaction(() => this.store.requestAbort(live.key, now)));
    this.view.abortRequested(live.key, now);
    return affected;
  }

  /** A ledger write of `key`: when it throws, the view reads what the store holds again. */
  private guarded<T>(key: ConversationKey, write: () => T): T {
    try {
      return write();
    } catch (error) {
      this.view.unsure(key);
      throw error;
    }
  }

  // ── Step memos ───────────────────────────────────────────────────────────────────────────

  /** The memos of one durable tool call, keyed by `key` within the conversation. */
  stepMemo(live: LiveConversation, key: string): StepMemo {
    const { store } = this;
    return {
      lookup: (step) => store.readStep(live.key, key, step),
      record: (step, value) => store.writeStep(live.key, key, step, value),
    };
  }

  // ── Imported conversations ───────────────────────────────────────────────────────────────

  /**
   * Writes a whole conversation (and the child conversations its records retain) as one
   * transaction: a `fork()` or an imported export. `live` is the new root, not yet created.
   */
  importConversation(live: LiveConversation, conversations: readonly ImportedConversation[]): void {
    this.store.transaction(() => {
      for (const conversation of conversations) {
        const { key } = conversation;
        this.store.createConversation({ key, agent: live.agentName, instanceId: live.instanceId, incarnation: newIncarnation() });
        for (const batch of conversation.batches) {
          if (this.store.append(key, batch.records.map(withoutAdmission)) !== batch.seq) {
            throw new ConversationRecordInvariantError(key, 'imported batch', `batch ${batch.seq} is out of sequence`);
          }
        }
        for (const [name, value] of conversation.state) this.store.writeState(key, name, value, null);
        for (const write of conversation.history) {
          this.store.writeStateHistory(key, write.seq, write.name, write.unkept === true ? undefined : JSON.stringify(write.value));
        }
        for (const attachment of conversation.attachments) this.store.putAttachment(key, attachment.ref, attachment.bytes);
        const files = this.store.sandboxFiles(key);
        for (const file of conversation.files) {
          if (file.kind === 'dir') files.putDir(file.path, file.mtime);
          else files.putFile(file.path, file.bytes, file.mtime);
        }
      }
    });
  }

  // ── Child conversations ──────────────────────────────────────────────────────────────────

  /**
   * A child conversation's fold. One that does not exist yet is born from `birth()` (its records),
   * in the same transaction as `retained` on the parent: the record that says where it lives.
   */
  openChild({ parent, key, birth }: { parent: LiveConversation; key: ConversationKey; birth: () => ChildBirth }): LiveConversation {
    const info = this.view.conversationInfo(key);
    if (info !== undefined) {
      const existing = this.view.wake(key, parent.agentName, parent.instanceId, info.incarnation);
      if (existing.conv.created) return existing;
    }
    const child = new LiveConversation(key, parent.agentName, parent.instanceId);
    const { records, retained } = birth();
    const incarnation = newIncarnation();
    let seq = -1;
    this.commit(parent, [retained], () => {
      this.store.createConversation({ key, agent: parent.agentName, instanceId: parent.instanceId, incarnation });
      seq = this.store.append(key, records);
    });
    child.incarnation = incarnation;
    this.view.appended(key, seq);
    child.conv.apply({ seq, records });
    return child;
  }
}

/** A batch the store just committed, with its records: what a fold takes without reading it back. */
type CommittedBatch = { seq: number; bytes: number; records: ConversationRecord[] };

/** An admission as the engine hands it over. */
type AdmittedSubmission = { id: string; kind: SubmissionKind; payload: SubmissionPayload; acceptedAt: string; claim?: AttemptClaim };
/** One that may be admitted in the log: its first attempt claimed. */
type LogAdmitted = AdmittedSubmission & { claim: AttemptClaim };

/** About what a settlement adds to a response's last batch (its record, with its ledger entry). */
const SETTLEMENT_BYTES = 400;
/** Past this much JSON a batch is not sized exactly: it spans pages anyway, and packing it to size it would cost a second copy. */
const SIZED_BATCH_CHARS = 64 * 1024;

/**
 * Whether held records ride in the batch `records` opens (`more` bytes still to come with it):
 * unless the one row would take an overflow page more than the batch alone, since a page of
 * storage is kept every month while a row is written once (inline-rows.ts).
 */
function heldRides(store: SqlStore, live: LiveConversation, records: readonly ConversationRecord[], more = 0): boolean {
  // Measured by JSON.stringify, which is native, not by a walk in JavaScript that a process's first
  // responses run unoptimized. Held records wait only for a response's first batch (its first step,
  // or that step's first deltas), whose JSON is at most what one model call returned.
  const text = JSON.stringify(records);
  if (text.length > SIZED_BATCH_CHARS) return true;
  const seq = live.conv.head + 1;
  const pages = (bytes: number) => store.logRowOverflowPages(live.key, seq, bytes);
  const heldText = JSON.stringify(live.held);
  const heldBytes = utf8Size(heldText);
  // The two arrays' JSON joined as one: their brackets once, and a comma between. Plain JSON is at
  // least what the store writes (it only leaves out what reading derives): when even that fits
  // the row's page, so does the one row, with no packing to size it (most first steps).
  if (pages(utf8Size(text) + heldBytes - 1 + more) === 0) return true;
  const alone = store.storedSize(records) + more;
  // Held records past the sized length take pages of their own with the batch or without it: their
  // plain size decides as well as their stored one, which would cost a second copy of them.
  const together = alone + (heldText.length > SIZED_BATCH_CHARS ? heldBytes : store.storedSize(live.held)) - 1;
  return pages(together) <= pages(alone);
}

function newIncarnation(): string {
  return newId('inc');
}

/** The canonical input record of a delivery; deterministic ids make re-application detectable. */
export function inputRecord(
  row: Pick<SubmissionRow, 'id' | 'kind' | 'payload'>,
  joinedInto?: string,
  ts = new Date().toISOString(),
): Extract<ConversationRecord, { type: 'user_message' | 'signal' }> {
  const message = row.payload.message;
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
function submissionOrigin(row: Pick<SubmissionRow, 'kind' | 'payload'>): DeliveryOrigin {
  if (row.kind === 'http') return 'http';
  return row.payload.fromAgent === true ? 'agent' : 'app';
}
