/**
 * A conversation as one portable value: what `exportConversation()` writes to a file and what
 * `fork()` carries from one conversation to a new one (on Cloudflare, from one Durable Object to
 * another). The functions here decide, from their inputs alone, where a log may be cut and what
 * persistent state held at that cut; the engine reads the inputs and writes the result.
 *
 * Format `flue.conversation` version 1 (documented in the guide to forks and replay): the root conversation's batches
 * up to `at`, its persistent state as of `at`, the attachments its records name, its
 * `virtualSandbox()` files, and every child conversation a `task` call opened in that prefix.
 */
import { skipUnknown } from '../../shared/exhaustive.ts';
import { deepEqualJson } from '../common/ids.ts';
import type { AttachmentRecordRef, ConversationRecord } from '../store/records.ts';
import type { Batch, StateHistoryEntry } from '../store/sql-store.ts';

export const CONVERSATION_EXPORT_FORMAT = 'flue.conversation';
export const CONVERSATION_EXPORT_VERSION = 1;

/** One conversation of an export (the root, or a `task` child). */
export interface ExportedConversation {
  /** Its key in the exporting store (`agents/<agent>/<id>`, or `tasks/…` for a child). */
  key: string;
  batches: Batch[];
  /** Persistent state as of the export's cut (`usePersistentState` names to values). */
  state: Record<string, unknown>;
  /**
   * The state writes up to the cut, each under the batch that explains it; absent when the store
   * did not keep them (a store written by an earlier version), so the state is known at the cut only.
   */
  history?: StateWrite[];
  /** Attachment bytes (standard base64) for every attachment its records name. */
  attachments: { ref: AttachmentRecordRef; data: string }[];
  /** `virtualSandbox()` files and directories (contents in standard base64). */
  files: ExportedFile[];
}

export interface ExportedFile {
  path: string;
  kind: 'file' | 'dir';
  mtime: number;
  data?: string;
}

export interface ConversationExport {
  format: typeof CONVERSATION_EXPORT_FORMAT;
  version: typeof CONVERSATION_EXPORT_VERSION;
  agent: string;
  instanceId: string;
  /** The last batch included (the cut). */
  at: number;
  /** The conversation's head when it was exported. */
  head: number;
  exportedAt: string;
  /** The root first, then child conversations in the order their parents opened them. */
  conversations: ExportedConversation[];
}

/** Where a log may be cut: after a batch that leaves no submission of the prefix unsettled. */
export function settledCuts(batches: readonly Batch[]): number[] {
  const open = new Set<string>();
  // A settlement is final: a later record naming the submission does not reopen it.
  const settled = new Set<string>();
  const cuts: number[] = [];
  for (const batch of batches) {
    for (const record of batch.records) {
      const id = submissionOf(record);
      if (id === undefined) continue;
      if (record.type === 'submission_settled') {
        open.delete(id);
        settled.add(id);
      } else if (!settled.has(id)) open.add(id);
    }
    if (open.size === 0) cuts.push(batch.seq);
  }
  return cuts;
}

/** The submission a record belongs to, if it names one. */
function submissionOf(record: ConversationRecord): string | undefined {
  switch (record.type) {
    case 'user_message':
    case 'assistant_started':
    case 'assistant_completed':
    case 'tool_results':
    case 'tool_progress':
    case 'model_spend':
    case 'agent_start_run':
    case 'agent_finish_cycle':
    case 'data_write':
    case 'response_metadata':
    case 'submission_settled':
    case 'signal':
    case 'compaction':
      return record.submissionId;
    case 'conversation_created':
    case 'assistant_delta':
    case 'resource_snapshot':
    case 'child_session_retained':
      return undefined;
    default:
      skipUnknown(record);
      return undefined;
  }
}

/**
 * One recorded state write: the value `name` took in the batch `seq`, or, for a value too large
 * for the history, only that it was written (`unkept: true`).
 */
export type StateWrite = StateHistoryEntry;

/**
 * Persistent state as of the cut `at`, or `undefined` when the store cannot say: state is kept as
 * its current values plus the history of writes, each recorded with the batch that explains it.
 * At the head the current values are the answer. Earlier, each name takes its last write at or
 * before `at`; that holds only when the history explains every current value (a store written by
 * an earlier version kept no history, so its values are known at the head alone), and a write
 * kept without its value is known only as the name's last (its value is the current one).
 */
export function stateAt(
  current: ReadonlyMap<string, unknown>,
  history: readonly StateWrite[],
  at: number,
  head: number,
): Map<string, unknown> | undefined {
  if (at >= head) return new Map(current);
  if (!historyExplains(current, history)) return undefined;
  const last = lastWrites(history, Infinity);
  const state = new Map<string, unknown>();
  for (const [name, write] of lastWrites(history, at)) {
    if (write.unkept !== true) state.set(name, write.value);
    else if (last.get(name) === write) state.set(name, current.get(name));
    else return undefined;
  }
  return state;
}

/** Each name's last write at or before `at`. */
function lastWrites(history: readonly StateWrite[], at: number): Map<string, StateWrite> {
  const last = new Map<string, StateWrite>();
  for (const write of history) {
    if (write.seq > at) continue;
    const seen = last.get(write.name);
    if (seen === undefined || write.seq >= seen.seq) last.set(write.name, write);
  }
  return last;
}

/** Whether the history's last write of every current name is its current value (or a write kept without it). */
export function historyExplains(current: ReadonlyMap<string, unknown>, history: readonly StateWrite[]): boolean {
  const last = lastWrites(history, Infinity);
  for (const [name, value] of current) {
    const write = last.get(name);
    if (write === undefined || (write.unkept !== true && !deepEqualJson(write.value, value))) return false;
  }
  return true;
}

/** The allowed cuts nearest to a refused one, for the error that names them. */
export function nearestCuts(cuts: readonly number[], at: number): { before?: number; after?: number } {
  let before: number | undefined;
  let after: number | undefined;
  for (const cut of cuts) {
    if (cut < at) before = cut;
    else if (cut > at && after === undefined) after = cut;
  }
  return { ...(before === undefined ? {} : { before }), ...(after === undefined ? {} : { after }) };
}

/** The root's attachments its records name, by id. */
export function attachmentIds(batches: readonly Batch[]): string[] {
  const ids = new Set<string>();
  for (const batch of batches) {
    for (const record of batch.records) {
      if (record.type === 'user_message') for (const ref of record.attachments ?? []) ids.add(ref.id);
    }
  }
  return [...ids];
}

/** The child conversations the records retain, in order. */
export function retainedChildren(batches: readonly Batch[]): string[] {
  const keys: string[] = [];
  for (const batch of batches) {
    for (const record of batch.records) if (record.type === 'child_session_retained') keys.push(record.child.stream);
  }
  return keys;
}

/**
 * An exported log as a new conversation keeps it: every key under the exporting root moves under
 * the new root, and the birth record takes the new conversation's ids and says where it came from.
 */
export function rebaseBatches(
  batches: readonly Batch[],
  rekey: (key: string) => string,
  birth: { conversationId: string; uid: string; forkedFrom?: { instanceId: string; conversationId: string; at: number } } | undefined,
  parent?: { from: string; to: string },
): Batch[] {
  return batches.map((batch) => ({
    seq: batch.seq,
    records: batch.records.map((record): ConversationRecord => {
      if (record.type === 'child_session_retained') {
        return { ...record, child: { ...record.child, stream: rekey(record.child.stream) as typeof record.child.stream } };
      }
      // A child born of the exported root names the new root as its parent.
      if (record.type === 'conversation_created' && parent !== undefined && record.parentConversationId === parent.from) {
        return { ...record, parentConversationId: parent.to };
      }
      if (record.type === 'conversation_created' && birth !== undefined) {
        return {
          ...record,
          conversationId: birth.conversationId,
          uid: birth.uid,
          ...(birth.forkedFrom === undefined ? {} : { forkedFrom: birth.forkedFrom }),
        };
      }
      return record;
    }),
  }));
}

/** A key under `fromRoot` as the same key under `toRoot` (a child's key holds its root's once). */
export function rekeyUnder(fromRoot: string, toRoot: string): (key: string) => string {
  return (key) => {
    if (key === fromRoot) return toRoot;
    const index = key.indexOf(`${fromRoot}/`);
    if (index === -1) return key;
    return `${key.slice(0, index)}${toRoot}/${key.slice(index + fromRoot.length + 1)}`;
  };
}
