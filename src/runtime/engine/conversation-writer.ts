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
import { type ConversationView, LiveConversation } from './conversation-view.ts';
import { CHECKPOINT_VERSION, checkpointDue, encodeCheckpoint, freshSince } from './conversation-checkpoint.ts';
import type { ConversationKey } from '../store/conversation-key.ts';
import type { AttachmentRecordRef, ConversationRecord, SubmissionOutcome } from '../store/records.ts';
import type { SqlStore, SubmissionKind, SubmissionPayload, SubmissionRow } from '../store/sql-store.ts';
import type { DeliveryOrigin } from '../common/types.ts';

/** One settlement as stored: its batch, the ledger rows it settles, their outcome and error message. */
export interface SettlementWrite {
  records: ConversationRecord[];
  settled: readonly SubmissionRow[];
  outcome: SubmissionOutcome;
  error: string | null;
}

/** A durable tool call's step memos: first write wins, a recorded step is never rewritten. */
export interface StepMemo {
  lookup(step: string): { found: true; value: unknown } | { found: false };
  record(step: string, value: unknown): void;
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

  constructor(store: SqlStore, view: ConversationView) {
    this.store = store;
    this.view = view;
  }

  // ── Commits ──────────────────────────────────────────────────────────────────────────────

  /**
   * Appends one batch (plus any ledger writes that must land with it) and advances the fold. When
   * a checkpoint is due, the fold as it stands before this batch is stored in the same transaction
   * (conversation-checkpoint.ts): the fold only advances once the batch is committed.
   */
  commit(live: LiveConversation, records: ConversationRecord[], alsoWrite?: () => void): void {
    const due = checkpointDue(live.sinceCheckpoint);
    let checkpointBytes = 0;
    const { seq, bytes } = this.store.transaction(() => {
      // The fold is this single writer's view of the log, so its head is the store's.
      const appended = this.store.appendSized(live.key, records, live.conv.head);
      alsoWrite?.();
      if (due) {
        const body = encodeCheckpoint(live.conv, live.incarnation);
        checkpointBytes = this.store.writeCheckpoint(live.key, live.conv.head, CHECKPOINT_VERSION, body);
      }
      return appended;
    });
    live.conv.apply({ seq, records });
    if (due) live.sinceCheckpoint = freshSince(checkpointBytes);
    live.sinceCheckpoint.batches++;
    live.sinceCheckpoint.bytes += bytes;
    if (records.some((record) => record.type === 'compaction')) live.sinceCheckpoint.compacted = true;
    live.notify();
  }

  /** Commits a batch together with the persistent state writes it explains. */
  commitWithState(live: LiveConversation, records: ConversationRecord[], writes: readonly [string, unknown][]): void {
    const state = this.view.stateOf(live);
    this.commit(live, records, () => {
      for (const [name, value] of writes) this.store.writeState(live.key, name, value);
    });
    for (const [name, value] of writes) state.set(name, value);
  }

  /** A queued delivery joins the leader's response at a turn boundary: its input and the mark, at once. */
  join(live: LiveConversation, row: SubmissionRow, leaderId: string): void {
    this.commit(live, [inputRecord(row, leaderId)], () => this.store.markJoined(row.id, leaderId));
  }

  /** Settles submissions with the batch that says so; the first terminal state of a row wins. */
  settle(live: LiveConversation, { records, settled, outcome, error }: SettlementWrite): void {
    const now = Date.now();
    this.commit(live, records, () => {
      for (const row of settled) this.store.markSettled(row.id, outcome, error, now);
    });
  }

  // ── Admission and the ledger ─────────────────────────────────────────────────────────────

  /**
   * Stores an admitted submission: a new conversation's birth record first when `birth` is set,
   * then the ledger row and its attachment bytes, in one transaction.
   */
  admit(
    live: LiveConversation,
    birth: ConversationRecord | undefined,
    submission: { id: string; kind: SubmissionKind; payload: SubmissionPayload; acceptedAt: string },
    attachments: readonly { ref: AttachmentRecordRef; bytes: Uint8Array }[],
  ): void {
    this.store.transaction(() => {
      if (birth !== undefined) {
        this.store.createConversation({ key: live.key, agent: live.agentName, instanceId: live.instanceId, incarnation: newIncarnation() });
        this.store.append(live.key, [birth]);
      }
      this.store.insertSubmission({ ...submission, conversation: live.key });
      for (const attachment of attachments) this.store.putAttachment(live.key, attachment.ref, attachment.bytes);
    });
  }

  claimAttempt(id: string, attempt: { attemptId: string; now: number; maxAttempts: number; timeoutMs: number }): SubmissionRow {
    return this.store.claimAttempt(id, attempt);
  }

  markContinuation(id: string): void {
    this.store.markContinuation(id);
  }

  /** Stamps every unsettled submission of the conversation; answers how many there were. */
  requestAbort(live: LiveConversation, now: number): number {
    return this.store.transaction(() => this.store.requestAbort(live.key, now));
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
    child.conv.apply({ seq, records });
    return child;
  }
}

function newIncarnation(): string {
  return newId('inc');
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
  if (row.kind === 'http') return 'http';
  return row.payload.fromAgent === true ? 'agent' : 'app';
}
