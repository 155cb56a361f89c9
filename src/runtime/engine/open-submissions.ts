/**
 * The unsettled submissions of the conversations this process drives, in admission order: what
 * each queue step and turn boundary asks of the ledger (the queue's head, the deliveries that may
 * join, the ones joined into a response). The read view (conversation-view.ts) reads a
 * conversation's rows from the store once; the writer (conversation-writer.ts) then reports every
 * change it commits to them (admission, claim, join, abort stamp, settlement), so the same
 * questions cost no query. One process owns its store (a Node database file, a Durable Object's
 * storage), and every ledger write goes through that writer, so the rows kept here are the
 * store's. A queue longer than `MAX_KEPT` is not kept (its payloads would stay in memory), unless
 * admissions lengthened it with small payloads only (a burst of chat messages), up to
 * `MAX_KEPT_SMALL`: a kept queue past `MAX_KEPT` holds at most `MAX_KEPT_SMALL` payloads of at most
 * `SMALL_PAYLOAD_BYTES` each. Otherwise it is marked `many` and its questions go to the store until
 * a settlement shortens it; only its highest admission order is kept, from the admissions that
 * lengthened it, so a burst of admissions to a long queue asks the store nothing before each insert.
 */
import { jsonBytesAtMost } from '../common/json-length.ts';
import type { ConversationKey } from '../store/conversation-key.ts';
import type { SubmissionRow } from '../store/sql-store.ts';

/** The longest open queue whose rows (payloads included) are kept in memory, whatever their size. */
export const MAX_KEPT = 64;
/** The longest queue kept while every payload in it is small (a burst's admissions): 2 MiB of payloads at most. */
export const MAX_KEPT_SMALL = 1024;
/** A payload whose JSON is at most this is small. */
export const SMALL_PAYLOAD_BYTES = 2048;

/** A conversation's open rows as kept, or `many`: past `MAX_KEPT` (`MAX_KEPT_SMALL` for small payloads only), not kept. */
export type KeptRows = readonly SubmissionRow[] | 'many';

export class OpenSubmissions {
  private readonly byKey = new Map<ConversationKey, SubmissionRow[] | 'many'>();
  /** The highest admission order of a `many` queue, when an admission this process made told it. */
  private readonly manyMax = new Map<ConversationKey, number>();

  /** What is kept of the conversation's open rows (undefined: not read yet, or forgotten). */
  rows(key: ConversationKey): KeptRows | undefined {
    return this.byKey.get(key);
  }

  /**
   * The highest admission order among the conversation's open rows, when known (undefined: ask the
   * store), as `{ maxOrd }` with `maxOrd` undefined when none is open.
   */
  maxOrd(key: ConversationKey): { maxOrd: number | undefined } | undefined {
    const rows = this.byKey.get(key);
    if (rows === undefined) return undefined;
    if (rows !== 'many') return { maxOrd: rows.at(-1)?.ord };
    const max = this.manyMax.get(key);
    return max === undefined ? undefined : { maxOrd: max };
  }

  /**
   * The conversation's open rows as the store answered them, read with a limit of `MAX_KEPT + 1`
   * (a longer answer says the queue is longer than is kept).
   */
  fill(key: ConversationKey, rows: readonly SubmissionRow[]): KeptRows {
    const kept = rows.length > MAX_KEPT ? 'many' : [...rows];
    this.byKey.set(key, kept);
    this.manyMax.delete(key);
    return kept;
  }

  /**
   * A submission was admitted (it is the last in admission order). `fresh`: its conversation was
   * born with it, so it is the conversation's only open row, whether or not any were kept.
   */
  admitted(row: SubmissionRow, fresh: boolean): void {
    const rows = fresh ? [] : this.byKey.get(row.conversation);
    if (rows === undefined) return;
    // The store gives each admission an order above every open one: it is the queue's highest.
    if (rows !== 'many' && keepsAnother(rows, row)) {
      // Appended in place (a copy per admission would make a burst's queue quadratic): the array is
      // this class's own, and `rows()`'s callers read it at once.
      rows.push(row);
      this.byKey.set(row.conversation, rows);
    } else {
      this.byKey.set(row.conversation, 'many');
      this.manyMax.set(row.conversation, row.ord);
    }
  }

  /** A row as the store holds it after a write to it (a claimed attempt). */
  replaced(row: SubmissionRow): void {
    this.update(row.conversation, (rows) =>
      row.status === 'settled' ? rows.filter((open) => open.id !== row.id) : rows.map((open) => (open.id === row.id ? row : open)),
    );
  }

  /** Queued deliveries joined the leader's response (a row no longer queued is left as it is, as the store leaves it). */
  joined(key: ConversationKey, ids: readonly string[], leaderId: string): void {
    const joining = new Set(ids);
    this.update(key, (rows) =>
      rows.map((row) => (joining.has(row.id) && row.status === 'queued' ? { ...row, status: 'joined', joinedInto: leaderId } : row)),
    );
  }

  /** Every open row of the conversation was stamped: the first stamp wins. */
  abortRequested(key: ConversationKey, now: number): void {
    this.update(key, (rows) => rows.map((row) => (row.abortRequestedAt === null ? { ...row, abortRequestedAt: now } : row)));
  }

  /** These rows settled. A queue too long to keep is read again once it has shortened. */
  settled(key: ConversationKey, ids: readonly string[]): void {
    if (this.byKey.get(key) === 'many') this.forget(key);
    const gone = new Set(ids);
    this.update(key, (rows) => rows.filter((row) => !gone.has(row.id)));
  }

  /** A write whose outcome is not known (it threw): the next question reads the store. */
  forget(key: ConversationKey): void {
    this.byKey.delete(key);
    this.manyMax.delete(key);
  }

  /** Every kept queue is read again. */
  clear(): void {
    this.byKey.clear();
    this.manyMax.clear();
  }

  private update(key: ConversationKey, change: (rows: readonly SubmissionRow[]) => SubmissionRow[]): void {
    const rows = this.byKey.get(key);
    if (rows !== undefined && rows !== 'many') this.byKey.set(key, change(rows));
  }
}

/**
 * Whether a kept queue keeps one more row: always below `MAX_KEPT`; past it, while every row is
 * small. Each row kept past `MAX_KEPT` was checked as it came, so only the crossing checks them all.
 */
function keepsAnother(rows: readonly SubmissionRow[], row: SubmissionRow): boolean {
  if (rows.length < MAX_KEPT) return true;
  if (rows.length >= MAX_KEPT_SMALL || !small(row)) return false;
  return rows.length > MAX_KEPT || rows.every(small);
}

function small(row: SubmissionRow): boolean {
  return jsonBytesAtMost(row.payload, SMALL_PAYLOAD_BYTES);
}
