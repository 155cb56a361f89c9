/**
 * The one store: conversation log, submission ledger, persistent state and durable step memos in
 * synchronous SQLite. Durable Object SQLite and node:sqlite both fit the tiny `SqlDriver`, so the
 * same schema and statements serve both hosts (architecture.md, Decision 1).
 *
 * Cost model: an append is one row; persistent state and step memos are one row each and are
 * written in the same transaction as the batch that explains them. A value over SPILL_BYTES moves
 * to `flue_spill` chunks in that same transaction, because Durable Object SQLite refuses a row
 * over 2 MB (cloudflare.md §5); the row keeps a marker that names the chunks. A batch or a
 * submission payload holding a string over SPILL_BYTES keeps that string apart instead, as its raw
 * UTF-8 chunks, and names them (value-parts.ts): a committed message names its submission's.
 */
import { ConversationRecordInvariantError } from '../common/errors.ts';
import { type AttachmentRecordRef, type ConversationRecord, type SubmissionOutcome, isAdmissionRecord } from './records.ts';
import { utf8Size } from '../common/limits.ts';
import type { SqlDriver, SqlRow, SqlValue } from './sql-driver.ts';
import { SqlSandboxFiles } from './sql-sandbox-files.ts';
import { packRecordValues, packRecords, unpackRecordValues } from './record-packing.ts';
import {
  MAX_SKELETON_CHARS,
  PARTS_MARKER,
  type PartPath,
  type StoredPart,
  type TakenString,
  parsePartsColumn,
  partsColumn,
  restoreValue,
  takeLargeStrings,
} from './value-parts.ts';
import { type ConversationKey, storedConversationKey } from './conversation-key.ts';
import { type ConversationInfo, type LogTable, logTableOf, newLogTable } from './log-table.ts';
import { lazyRows, lazyUpdate, lazyWrite } from './schema.ts';
import { encodeInChunks } from './utf8-chunks.ts';

export { FLUE_FORMAT_VERSION, knowTables, migrate, schemaObjects } from './schema.ts';
export { MAX_STATEMENT_BYTES, RowTooLargeError, type SqlDriver, type SqlRow, type SqlValue, guardStatement } from './sql-driver.ts';

/** Below Durable Object SQLite's 2 MB value limit. */
const ATTACHMENT_CHUNK_BYTES = 1024 * 1024;

/** Values whose UTF-8 size exceeds this are stored as chunks of at most this size. */
export const SPILL_BYTES = 1024 * 1024;

const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** A marker can never be JSON: no JSON text starts with `~`. */
const SPILL_MARKER = '~spill:';

/** The state history keeps values up to this size; a larger one is kept as a marker only. */
export const STATE_HISTORY_BYTES = 64 * 1024;
const UNKEPT_MARKER = '~unkept';

/** One persistent state write in the history: its value, or only that it happened (`unkept`). */
export type StateHistoryEntry = { seq: number; name: string } & ({ value: unknown; unkept?: never } | { unkept: true; value?: never });

/** BLOBs come back as Uint8Array from node:sqlite and as ArrayBuffer from Durable Objects. */
function toBytes(value: SqlValue | ArrayBuffer): Uint8Array {
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  throw new TypeError('expected a BLOB value');
}

/** How a submission was admitted: `dispatch()` (in process, or over a Worker's RPC) or a POST to the agent router. */
export type SubmissionKind = 'dispatch' | 'http';

/**
 * The kind where its name is frozen, as it was spelled before HTTP submissions were called
 * `'http'`: the ledger's `kind` column (so a store stays readable by the version before, after a
 * rollback, and needs no rewrite), the `kind` of the `submission_queued` and `submission_running`
 * events (public, typed `'dispatch' | 'direct'`), the `kind` attribute of the advisory signal a
 * failed or aborted submission leaves in the log (the model and clients read it), and the segment
 * of attachment ids (`att_<segment>_<submission id>_<n>`), which a keyed replay compares with the
 * ids its original stored.
 */
export const FROZEN_KIND_NAMES = { dispatch: 'dispatch', http: 'direct' } as const satisfies Record<SubmissionKind, string>;
export type SubmissionStatus = 'queued' | 'running' | 'joined' | 'settled';

export interface SubmissionPayload {
  /** The delivered message; attachment bytes are stored separately (see `attachments`). */
  message: import('../common/types.ts').DeliveredMessage;
  attachments?: AttachmentRecordRef[];
  initialData?: unknown;
  /** Present only on keyed submissions; part of the identity compared on replay. */
  idempotencyKey?: string;
  /**
   * Set on `useDispatchMessage()` deliveries, whose origin is `'agent'`; the kind alone tells
   * `'app'` from `'http'`. Absent otherwise, so payloads stored before it compare equal on replay.
   */
  fromAgent?: true;
}

/** An attempt as a claim starts it: its id, when, and the durability bounds it runs under. */
export interface AttemptClaim {
  attemptId: string;
  now: number;
  maxAttempts: number;
  timeoutMs: number;
}

/** An admitted submission as it is stored; `claim` its first attempt, when it may be claimed at once. */
export interface SubmissionInsert {
  id: string;
  conversation: ConversationKey;
  kind: SubmissionKind;
  payload: SubmissionPayload;
  acceptedAt: string;
  claim?: AttemptClaim;
}

export interface SubmissionRow {
  ord: number;
  id: string;
  /** The conversation the submission was delivered to. */
  conversation: ConversationKey;
  kind: SubmissionKind;
  payload: SubmissionPayload;
  acceptedAt: string;
  status: SubmissionStatus;
  attemptId: string | null;
  attemptCount: number;
  maxAttempts: number | null;
  timeoutMs: number | null;
  startedAt: number | null;
  abortRequestedAt: number | null;
  joinedInto: string | null;
  outcome: SubmissionOutcome | null;
  error: string | null;
  /** Admitted in the log and not given its ledger row yet (`SqlStore.admitsInLog`): its `ord` is 0 until then. */
  inLog?: true;
}

/** What joining a queued delivery into a response reads of its row. */
export type QueuedDelivery = Pick<SubmissionRow, 'id' | 'kind' | 'payload' | 'status' | 'abortRequestedAt'>;

/** At most this many characters of settlements in one row of a settlement page: far below a row's limit. */
const PAGE_PART_CHARS = 256 * 1024;

/** A settlement page's entries (`writeSettledPage`). */
function pageEntries(column: SqlValue): { id: string; settlement: string }[] {
  return JSON.parse(String(column)) as { id: string; settlement: string }[];
}

function submissionKind(column: SqlValue): SubmissionKind {
  return column === FROZEN_KIND_NAMES.http ? 'http' : 'dispatch';
}

function toSubmission(row: SqlRow, payload: SubmissionPayload): SubmissionRow {
  return {
    ord: Number(row.ord),
    id: String(row.id),
    conversation: storedConversationKey(row.stream),
    kind: submissionKind(row.kind),
    payload,
    acceptedAt: String(row.accepted_at),
    status: row.status as SubmissionStatus,
    attemptId: row.attempt_id === null ? null : String(row.attempt_id),
    attemptCount: Number(row.attempt_count),
    maxAttempts: row.max_attempts === null ? null : Number(row.max_attempts),
    timeoutMs: row.timeout_ms === null ? null : Number(row.timeout_ms),
    startedAt: row.started_at === null ? null : Number(row.started_at),
    abortRequestedAt: row.abort_requested_at === null ? null : Number(row.abort_requested_at),
    joinedInto: row.joined_into === null ? null : String(row.joined_into),
    outcome: row.outcome === null ? null : (row.outcome as SubmissionOutcome),
    error: row.error === null ? null : String(row.error),
  };
}

type SpillKind = 'batch' | 'submission' | 'state' | 'step' | 'checkpoint';

/** Spill keys derive from the row's identity (and a string kept apart, from its path); JSON keeps the parts unambiguous. */
function spillKey(kind: SpillKind, ...parts: (string | number)[]): string {
  return JSON.stringify([kind, ...parts]);
}

/** Text too short ever to spill, known without sizing it: a UTF-16 unit is at most 3 bytes of UTF-8. */
function neverSpills(text: string): boolean {
  return text.length * 3 <= SPILL_BYTES;
}

/**
 * Strings kept apart from their value (value-parts.ts): over SPILL_BYTES of UTF-8, and well formed,
 * because raw UTF-8 cannot carry a lone surrogate (JSON escapes it, so such a string stays inside).
 */
function keptApart(text: string): boolean {
  if (neverSpills(text)) return false;
  if (text.length <= SPILL_BYTES && utf8Size(text) <= SPILL_BYTES) return false;
  const wellFormed = (text as unknown as { isWellFormed?: () => boolean }).isWellFormed;
  return wellFormed !== undefined && wellFormed.call(text);
}

/** A string kept apart that this store wrote or read, so a later row can name its chunks and a later read skips them. */
interface KnownPart {
  key: string;
  /** The conversation whose row owns the chunks: only rows of the same conversation may name them. */
  conversation: string;
  text: string;
  chunks: number;
  bytes: number;
}

/**
 * How many such strings the store keeps (an admitted message and what its commit and wake read), and
 * their characters together beyond the newest: most often the engine holds the same strings anyway
 * (a fold shares its records' strings), and this bounds what the store alone keeps alive.
 */
const KNOWN_PARTS = 2;
const KNOWN_PARTS_CHARS = 32 * 1024 * 1024;

/**
 * Ids one statement names at most: Durable Object SQLite binds at most 100 parameters per
 * statement, and a statement also binds its other values.
 */
const IDS_PER_STATEMENT = 90;
/** Settled rows one statement writes at most: two parameters each, and the outcome's three. */
const SETTLEMENTS_PER_STATEMENT = 48;

/** `?, ?, …`: `count` parameter placeholders. */
function placeholders(count: number): string {
  return Array.from({ length: count }, () => '?').join(', ');
}

/** How every checkpoint's chunk key starts (`spillKey('checkpoint', ...)`). */
const CHECKPOINT_KEYS = '["checkpoint",';

/** A pending `useTimer()` timer: at most one per name in a conversation. */
export interface TimerRow {
  conversation: ConversationKey;
  name: string;
  /** New for every schedule; the delivery's submission id derives from it (`sub_<id>`). */
  id: string;
  /** When it is due, in epoch milliseconds. */
  dueAt: number;
  body: string;
}

function toTimer(row: SqlRow): TimerRow {
  return {
    conversation: storedConversationKey(row.stream),
    name: String(row.name),
    id: String(row.id),
    dueAt: Number(row.due_at),
    body: String(row.body),
  };
}

export type { ConversationInfo } from './log-table.ts';

export interface Batch {
  seq: number;
  records: ConversationRecord[];
}

/** What a store is made for, beyond its database. */
export interface SqlStoreOptions {
  /**
   * The store is one Durable Object's: its host finds open work by reading its one conversation's
   * log (`newestAdmissionOrSettlement`), so from format 4 on a submission admitted to an idle conversation
   * lives in the log alone (`admitsInLog`). A Node store holds many conversations, which its start
   * finds through the ledger's open-queue index.
   */
  admitsInLog?: boolean;
  /**
   * The database holds none of the store's tables yet (`schemaObjects()` found none), and this
   * store's host makes them (`migrate()`) before its first write: the log's format is this
   * version's and no conversation is stored until this store creates one, known without a read.
   */
  empty?: boolean;
}

export class SqlStore {
  readonly driver: SqlDriver;
  private readonly logAdmissions: boolean;

  /** No conversation is stored (`SqlStoreOptions.empty`) until this store creates one. */
  private noConversations: boolean;

  constructor(driver: SqlDriver, options: SqlStoreOptions = {}) {
    this.driver = driver;
    this.logAdmissions = options.admitsInLog === true;
    this.noConversations = options.empty === true;
    if (this.noConversations) this.logTable = newLogTable(driver);
  }

  transaction<T>(fn: () => T): T {
    return this.driver.transaction(fn);
  }

  // ── Streams and batches ──────────────────────────────────────────────────────────────────

  getConversation(key: ConversationKey): ConversationInfo | undefined {
    if (this.noConversations) return undefined;
    const row = this.driver.query('SELECT * FROM flue_streams WHERE stream = ?', key)[0];
    if (row === undefined) return undefined;
    return {
      key,
      agent: String(row.agent),
      instanceId: String(row.instance_id),
      incarnation: String(row.incarnation),
    };
  }

  createConversation(info: ConversationInfo): void {
    // Asked from now on, whether this creation commits or rolls back.
    this.noConversations = false;
    this.log.create(info);
  }

  /** The table the log is kept in, by the store's format (log-table.ts): read on first use. */
  private logTable: LogTable | undefined;
  private get log(): LogTable {
    return (this.logTable ??= logTableOf(this.driver));
  }

  /** Sequence of the last batch, or -1 for an empty stream. */
  head(key: ConversationKey): number {
    return this.log.head(key);
  }

  /**
   * Whether a model step written whole in one batch keeps its text once, in its completed message
   * (format 3 on: schema.ts). Stores of earlier formats, which earlier versions read too, keep the
   * deltas as well.
   */
  get writesStepTextOnce(): boolean {
    return Number(this.log.format) >= 3;
  }

  /** Whether rows leave out what reading derives exactly (format 5 on: record-packing.ts). */
  private get compactsRecords(): boolean {
    return Number(this.log.format) >= 5;
  }

  /**
   * Whether a submission admitted to an idle conversation, unkeyed, lives in the log alone until
   * something needs its ledger row: a Durable Object's store, in
   * format 4 on.
   */
  get admitsInLog(): boolean {
    return this.logAdmissions && Number(this.log.format) >= 4;
  }

  /**
   * The newest batch of `key` holding an admission record (`LogAdmission`) or a settlement: what a
   * wake reads to learn whether a submission admitted in the log is open. Only one can be, and
   * nothing is admitted after it without its row, so every batch after it is its own response's:
   * the read goes back at most one response, however long the history.
   */
  newestAdmissionOrSettlement(key: ConversationKey): Batch | undefined {
    const page = 8;
    // A sequence is below 2^32: the rowid log packs it into the low half of its key.
    for (let before = 2 ** 32; ; ) {
      const rows = this.log.rowsBackward(key, before, page, ['"admission":', '"submission_settled"'], SPILL_MARKER);
      for (const row of rows) {
        const seq = Number(row.seq);
        const { records } = unpackRecordValues(this.readValue(row.records, key, false).value, false);
        if (records.some((record) => record.type === 'submission_settled' || isAdmissionRecord(record))) return { seq, records };
        before = seq;
      }
      if (rows.length < page) return undefined;
    }
  }

  /** The overflow pages batch `seq` of `key` takes with `textBytes` of records (store/inline-rows.ts). */
  logRowOverflowPages(key: ConversationKey, seq: number, textBytes: number): number {
    return this.log.overflowPages(key, seq, textBytes);
  }

  /** Appends one batch under the next sequence; callers hold the conversation's single writer. */
  append(key: ConversationKey, records: readonly ConversationRecord[]): number {
    // The head read and the insert that depends on it stay in one transaction.
    return this.transaction(() => this.appendSized(key, records).seq);
  }

  /**
   * `append`, also answering the UTF-8 size of the stored batch (for the conversation's size).
   * A writer that keeps the log's fold passes the head it knows, saving a `max(seq)` read per
   * append; a stale head cannot overwrite anything: the insert then fails on the primary key.
   * Atomic on its own: a batch kept in chunks is written with its row in one transaction; a row
   * alone is one statement, which needs none (a caller writing more with it wraps both).
   */
  appendSized(key: ConversationKey, records: readonly ConversationRecord[], head = this.head(key)): { seq: number; bytes: number } {
    if (records.length === 0) {
      throw new ConversationRecordInvariantError('-', '-', 'an appended batch must hold at least one record');
    }
    const seq = head + 1;
    const insert = (column: string) => this.log.insert(key, seq, column);
    const compact = this.compactsRecords;
    const apart = packRecordValues(records, keptApart, compact);
    const parted = this.prepareParts(key, apart.stored, (path) => spillKey('batch', key, seq, ...path));
    if (parted !== undefined) {
      return this.transaction(() => {
        insert(parted.column);
        parted.write();
        return { seq, bytes: parted.bytes + apart.derivedBytes };
      });
    }
    // An outcome stored without its output needs its content apart: pack again for the whole-value layout.
    const packed = apart.outputFromContent ? packRecordValues(records, undefined, compact) : apart;
    const text = JSON.stringify(packed.stored);
    const write = () => {
      const value = this.spill(() => spillKey('batch', key, seq), text);
      insert(value.column);
      return { seq, bytes: value.bytes + packed.derivedBytes };
    };
    // Text that never spills is one statement.
    return neverSpills(text) ? write() : this.transaction(write);
  }

  /** The UTF-8 size of `records` as this store's log row holds them (no value kept apart): what sizes its pages. */
  storedSize(records: readonly ConversationRecord[]): number {
    return utf8Size(packRecords(records, this.compactsRecords).text);
  }

  /** Batches with sequence greater than `after`, in order. */
  readBatches(key: ConversationKey, after: number, limit = 1_000_000): Batch[] {
    return this.batchRows(key, after, limit, Infinity, false).map(({ batch }) => batch);
  }

  /**
   * Batches with their stored UTF-8 size. With `maxBytes`, reading stops once the batches read
   * reach it (always at least one), so one answer stays bounded however large the batches are.
   */
  readBatchesSized(key: ConversationKey, after: number, limit = 1_000_000, maxBytes = Infinity): { batch: Batch; bytes: number }[] {
    return this.batchRows(key, after, limit, maxBytes, true);
  }

  private batchRows(
    key: ConversationKey,
    after: number,
    limit: number,
    maxBytes: number,
    sized: boolean,
  ): { batch: Batch; bytes: number }[] {
    const out: { batch: Batch; bytes: number }[] = [];
    let total = 0;
    let cursor = after;
    // Pages, so a byte budget does not load batches it will not return.
    const page = Number.isFinite(maxBytes) ? 16 : limit;
    while (out.length < limit && total < maxBytes) {
      const want = Math.min(page, limit - out.length);
      const rows = this.log.rows(key, cursor, want);
      for (const row of rows) {
        if (out.length > 0 && total >= maxBytes) break;
        const stored = this.readValue(row.records, key, sized);
        const { records, derivedBytes } = unpackRecordValues(stored.value, sized);
        const bytes = stored.bytes + derivedBytes;
        if (sized) total += bytes;
        cursor = Number(row.seq);
        out.push({ batch: { seq: cursor, records }, bytes });
      }
      if (rows.length < want) break;
    }
    return out;
  }

  firstBatch(key: ConversationKey): Batch | undefined {
    return this.readBatches(key, -1, 1)[0];
  }

  keysWithOpenWork(): ConversationKey[] {
    return lazyRows(this.driver, `SELECT DISTINCT stream FROM flue_submissions WHERE settled_at IS NULL`).map((row) =>
      storedConversationKey(row.stream),
    );
  }

  conversationKeys(): ConversationKey[] {
    return this.driver.query('SELECT stream FROM flue_streams').map((row) => storedConversationKey(row.stream));
  }

  // ── Submissions ──────────────────────────────────────────────────────────────────────────

  getSubmission(id: string): SubmissionRow | undefined {
    const row = lazyRows(this.driver, 'SELECT * FROM flue_submissions WHERE id = ?', id)[0];
    return row === undefined ? undefined : this.toSubmission(row);
  }

  /**
   * Stores an admitted submission, queued. With `claim`, a submission admitted to a conversation
   * with nothing else open is stored with its first attempt already claimed (the engine runs it
   * next, nothing is ahead of it), which saves the claim's own write. Answers the row as stored
   * (what `getSubmission` would read; `running` when it was claimed). A caller that keeps the
   * conversation's open rows passes the highest `ord` among them (undefined: none open), saving
   * the read of it. Atomic on its own: a payload kept in chunks, or an order read from the store,
   * is written with its row in one transaction; a row alone is one statement, which needs none.
   */
  storeSubmission(input: SubmissionInsert, open?: { maxOrd: number | undefined }): SubmissionRow {
    const { ord, idle } = this.nextOrd(input.conversation, open);
    const claim = idle ? input.claim : undefined;
    const parted = this.prepareParts(input.conversation, input.payload, (path) => spillKey('submission', input.id, ...path));
    const text = parted === undefined ? JSON.stringify(input.payload) : undefined;
    const status: SubmissionStatus = claim === undefined ? 'queued' : 'running';
    const write = (): number => {
      lazyWrite(
        this.driver,
        `INSERT INTO flue_submissions (id, ord, stream, kind, payload, accepted_at, status, attempt_id, attempt_count, started_at, max_attempts, timeout_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        input.id,
        ord,
        input.conversation,
        FROZEN_KIND_NAMES[input.kind],
        parted?.column ?? this.spill(() => spillKey('submission', input.id), text!).column,
        input.acceptedAt,
        status,
        claim?.attemptId ?? null,
        claim === undefined ? 0 : 1,
        claim?.now ?? null,
        claim?.maxAttempts ?? null,
        claim?.timeoutMs ?? null,
      );
      // A rowid ledger numbers the row itself (read before the chunks' inserts move the last rowid).
      const stored = ord ?? Number(this.driver.query('SELECT last_insert_rowid() AS ord')[0]!.ord);
      // After the row: a second insert of the same id fails on its key before touching the first one's chunks.
      parted?.write();
      return stored;
    };
    // One statement needs no transaction: a payload that never spills, and an order the caller knew
    // was not read first (a read and the insert that depends on it stay in one transaction).
    const alone = open !== undefined && text !== undefined && neverSpills(text);
    const stored = alone ? write() : this.transaction(write);
    return {
      ord: stored,
      id: input.id,
      conversation: input.conversation,
      kind: input.kind,
      payload: input.payload,
      acceptedAt: input.acceptedAt,
      status,
      attemptId: claim?.attemptId ?? null,
      attemptCount: claim === undefined ? 0 : 1,
      maxAttempts: claim?.maxAttempts ?? null,
      timeoutMs: claim?.timeoutMs ?? null,
      startedAt: claim?.now ?? null,
      abortRequestedAt: null,
      joinedInto: null,
      outcome: null,
      error: null,
    };
  }

  /** Whether this store keeps submissions in a rowid table (created before the keyed-by-id layout). */
  private rowidLedger: boolean | undefined;
  /** The last `ord` this store handed out. */
  private lastOrd = 0;

  /**
   * The admission order of a new submission, and whether the conversation has nothing else open. A
   * rowid ledger numbers its rows itself (NULL asks it to) and is never called idle. The keyed-by-id
   * ledger has no index over every `ord`, so the next one is found without a scan: past the clock in
   * microsecond-sized steps (so a later start continues above what an earlier one handed out), past
   * every `ord` this store handed out, and past the conversation's open submissions (read through
   * the open-queue index), which is what FIFO order needs.
   */
  private nextOrd(key: ConversationKey, known?: { maxOrd: number | undefined }): { ord: number | null; idle: boolean } {
    if (this.rowidLedger === undefined) {
      const table = this.driver.query(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'flue_submissions'`)[0];
      // A ledger not made yet is made in the keyed layout.
      this.rowidLedger = table !== undefined && !/WITHOUT\s+ROWID/i.test(String(table.sql));
    }
    if (this.rowidLedger) return { ord: null, idle: false };
    const openMax = known === undefined ? this.openMaxOrd(key) : known.maxOrd;
    this.lastOrd = Math.max(Date.now() * 1000, this.lastOrd + 1, (openMax ?? 0) + 1);
    return { ord: this.lastOrd, idle: openMax === undefined };
  }

  private openMaxOrd(key: ConversationKey): number | undefined {
    const open = lazyRows(this.driver, `SELECT max(ord) AS ord FROM flue_submissions WHERE stream = ? AND settled_at IS NULL`, key)[0];
    return open === undefined || open.ord === null ? undefined : Number(open.ord);
  }

  /** Every submission of every conversation, settled ones included, in admission order. */
  listSubmissions(): SubmissionRow[] {
    return lazyRows(this.driver, 'SELECT * FROM flue_submissions ORDER BY ord').map((row) => this.toSubmission(row));
  }

  /** Unsettled submissions of one conversation in admission order (the first `limit` of them, when given). */
  openSubmissions(key: ConversationKey, limit?: number): SubmissionRow[] {
    const rows =
      limit === undefined
        ? lazyRows(this.driver, `SELECT * FROM flue_submissions WHERE stream = ? AND settled_at IS NULL ORDER BY ord`, key)
        : lazyRows(this.driver, `SELECT * FROM flue_submissions WHERE stream = ? AND settled_at IS NULL ORDER BY ord LIMIT ?`, key, limit);
    return rows.map((row) => this.toSubmission(row));
  }

  /** The ids of one conversation's unsettled submissions, in admission order (no payload is read). */
  openSubmissionIds(key: ConversationKey): string[] {
    return lazyRows(this.driver, `SELECT id FROM flue_submissions WHERE stream = ? AND settled_at IS NULL ORDER BY ord`, key).map((row) =>
      String(row.id),
    );
  }

  /** The submission a conversation's queue runs next: its first unsettled one not joined into a response. */
  queueHead(key: ConversationKey): SubmissionRow | undefined {
    const row = lazyRows(
      this.driver,
      `SELECT * FROM flue_submissions WHERE stream = ? AND settled_at IS NULL AND status != 'joined' ORDER BY ord LIMIT 1`,
      key,
    )[0];
    return row === undefined ? undefined : this.toSubmission(row);
  }

  /**
   * Unsettled submissions of one conversation that are not joined into a response, in admission
   * order, with only what a turn boundary needs to join them. A joined delivery waits for its
   * leader's settlement and is never acted on again, so a boundary after a burst's join reads none of it.
   */
  unjoinedDeliveries(key: ConversationKey): QueuedDelivery[] {
    return lazyRows(
      this.driver,
      `SELECT id, kind, payload, status, abort_requested_at FROM flue_submissions WHERE stream = ? AND settled_at IS NULL AND status != 'joined' ORDER BY ord`,
      key,
    ).map((row) => ({
      id: String(row.id),
      kind: submissionKind(row.kind),
      payload: this.readValue(row.payload, key, false).value as SubmissionPayload,
      status: row.status as SubmissionStatus,
      abortRequestedAt: row.abort_requested_at === null ? null : Number(row.abort_requested_at),
    }));
  }

  claimAttempt(id: string, attempt: AttemptClaim): SubmissionRow {
    lazyUpdate(
      this.driver,
      `UPDATE flue_submissions
          SET status = 'running', attempt_id = ?,
              attempt_count = attempt_count + (CASE WHEN continuation = 1 THEN 0 ELSE 1 END), continuation = 0,
              started_at = coalesce(started_at, ?), max_attempts = ?, timeout_ms = ?
        WHERE id = ? AND status IN ('queued', 'running')`,
      attempt.attemptId,
      attempt.now,
      attempt.maxAttempts,
      attempt.timeoutMs,
      id,
    );
    return this.getSubmission(id)!;
  }

  /** A response that yielded at a turn boundary continues in the same attempt (no attempt spent). */
  markContinuation(id: string): void {
    lazyUpdate(this.driver, `UPDATE flue_submissions SET continuation = 1 WHERE id = ? AND status = 'running'`, id);
  }

  /** Marks queued deliveries joined into `leaderId`'s response: a statement per {@link IDS_PER_STATEMENT} rows, not per row. */
  markJoined(ids: readonly string[], leaderId: string): void {
    for (let at = 0; at < ids.length; at += IDS_PER_STATEMENT) {
      const chunk = ids.slice(at, at + IDS_PER_STATEMENT);
      lazyUpdate(
        this.driver,
        `UPDATE flue_submissions SET status = 'joined', joined_into = ? WHERE id IN (${placeholders(chunk.length)}) AND status = 'queued'`,
        leaderId,
        ...chunk,
      );
    }
  }

  /**
   * The ids of a leader's joined deliveries (the submission whose response answers them) that are still
   * waiting for its outcome. They are unsettled rows of the leader's conversation, so the
   * open-submissions index finds them without a scan.
   */
  joinedIds(leader: { id: string; conversation: ConversationKey }): string[] {
    return lazyRows(
      this.driver,
      `SELECT id FROM flue_submissions WHERE stream = ? AND settled_at IS NULL AND joined_into = ? AND status = 'joined' ORDER BY ord`,
      leader.conversation,
      leader.id,
    ).map((row) => String(row.id));
  }

  /**
   * First terminal state wins: settled rows are never rewritten. `settlement` is what readers need
   * of the settlement without reading the log (settled-submission.ts), stored as given.
   */
  markSettled(
    rows: readonly { id: string; settlement: string | null }[],
    outcome: SubmissionOutcome,
    error: string | null,
    now: number,
  ): void {
    const [only] = rows;
    if (rows.length === 1) {
      lazyUpdate(
        this.driver,
        `UPDATE flue_submissions SET status = 'settled', outcome = ?, error = ?, settled_at = ?, settlement = ? WHERE id = ? AND settled_at IS NULL`,
        outcome,
        error,
        now,
        only!.settlement,
        only!.id,
      );
      return;
    }
    // A leader and its joined deliveries settle together: a statement per chunk of rows, each row
    // with its own settlement, not a statement per row.
    for (let at = 0; at < rows.length; at += SETTLEMENTS_PER_STATEMENT) {
      const chunk = rows.slice(at, at + SETTLEMENTS_PER_STATEMENT);
      lazyUpdate(
        this.driver,
        `WITH settled (id, settlement) AS (VALUES ${chunk.map(() => '(?, ?)').join(', ')})
         UPDATE flue_submissions SET status = 'settled', outcome = ?, error = ?, settled_at = ?, settlement = settled.settlement
         FROM settled WHERE flue_submissions.id = settled.id AND flue_submissions.settled_at IS NULL`,
        ...chunk.flatMap((row) => [row.id, row.settlement]),
        outcome,
        error,
        now,
      );
    }
  }

  /** One submission of one conversation as its settlement left it: undefined when unknown or unsettled. */
  settlementOf(key: ConversationKey, id: string): { settlement: string | null } | undefined {
    const row = lazyRows(
      this.driver,
      'SELECT settlement FROM flue_submissions WHERE id = ? AND stream = ? AND settled_at IS NOT NULL',
      id,
      key,
    )[0];
    return row === undefined ? undefined : { settlement: row.settlement === null ? null : String(row.settlement) };
  }

  /** Every settled submission of one conversation with its stored settlement (NULL: settled before they were stored). */
  settlementsOf(key: ConversationKey): { id: string; settlement: string | null }[] {
    return lazyRows(this.driver, 'SELECT id, settlement FROM flue_submissions WHERE stream = ? AND settled_at IS NOT NULL', key).map(
      (row) => ({ id: String(row.id), settlement: row.settlement === null ? null : String(row.settlement) }),
    );
  }

  // ── Settlements of submissions admitted in the log ───────────────────────────────────────

  /**
   * The settlements of submissions admitted in the log whose batches a checkpoint at `seq` covers,
   * as their rows would keep them (settled-submission.ts): one row for the interval, or a row per
   * `PAGE_PART_CHARS` of them (a fold rebuilt from a long log without pages notes many at once).
   */
  writeSettledPage(key: ConversationKey, seq: number, entries: readonly { id: string; settlement: string }[]): void {
    let part = 0;
    let chunk: { id: string; settlement: string }[] = [];
    let chars = 0;
    const write = () => {
      const sql = 'INSERT OR REPLACE INTO flue_settled (stream, seq, part, entries) VALUES (?, ?, ?, ?)';
      lazyWrite(this.driver, sql, key, seq, part++, JSON.stringify(chunk));
      chunk = [];
      chars = 0;
    };
    for (const entry of entries) {
      const size = entry.id.length + entry.settlement.length + 32;
      if (chunk.length > 0 && chars + size > PAGE_PART_CHARS) write();
      chunk.push(entry);
      chars += size;
    }
    if (chunk.length > 0) write();
  }

  /** The checkpoint sequence of the newest settlement page of `key`, or -1: the settlements up to it are paged. */
  lastSettledPage(key: ConversationKey): number {
    const row = lazyRows(this.driver, 'SELECT max(seq) AS seq FROM flue_settled WHERE stream = ?', key)[0];
    return row === undefined || row.seq === null ? -1 : Number(row.seq);
  }

  /** The stored settlement of a submission admitted in the log, from the pages: undefined when none holds it. */
  settledPageEntry(key: ConversationKey, id: string): string | undefined {
    const rows = lazyRows(
      this.driver,
      'SELECT entries FROM flue_settled WHERE stream = ? AND instr(entries, ?) > 0 ORDER BY seq DESC, part DESC',
      key,
      `"id":${JSON.stringify(id)}`,
    );
    for (const row of rows) {
      const found = pageEntries(row.entries).find((entry) => entry.id === id);
      if (found !== undefined) return found.settlement;
    }
    return undefined;
  }

  /** Every settlement the pages of `key` hold. */
  settledPageEntries(key: ConversationKey): { id: string; settlement: string }[] {
    return lazyRows(this.driver, 'SELECT entries FROM flue_settled WHERE stream = ? ORDER BY seq, part', key).flatMap((row) =>
      pageEntries(row.entries),
    );
  }

  /** Stamps every unsettled submission of the conversation; the first stamp wins. */
  requestAbort(key: ConversationKey, now: number): number {
    const open = this.openSubmissionIds(key);
    lazyUpdate(
      this.driver,
      `UPDATE flue_submissions SET abort_requested_at = coalesce(abort_requested_at, ?) WHERE stream = ? AND settled_at IS NULL`,
      now,
      key,
    );
    return open.length;
  }

  // ── Attachments ────────────────────────────────────────────────────────────────────────

  /** Idempotent: an attachment id is written once (ids are deterministic per submission). */
  putAttachment(key: ConversationKey, ref: AttachmentRecordRef, bytes: Uint8Array): void {
    if (lazyRows(this.driver, 'SELECT id FROM flue_attachments WHERE stream = ? AND id = ?', key, ref.id).length > 0) return;
    const chunks = Math.max(1, Math.ceil(bytes.length / ATTACHMENT_CHUNK_BYTES));
    lazyWrite(
      this.driver,
      'INSERT INTO flue_attachments (stream, id, ref, chunks) VALUES (?, ?, ?, ?)',
      key,
      ref.id,
      JSON.stringify(ref),
      chunks,
    );
    for (let idx = 0; idx < chunks; idx++) {
      const part = bytes.subarray(idx * ATTACHMENT_CHUNK_BYTES, (idx + 1) * ATTACHMENT_CHUNK_BYTES);
      lazyWrite(this.driver, 'INSERT INTO flue_attachment_chunks (stream, id, idx, data) VALUES (?, ?, ?, ?)', key, ref.id, idx, part);
    }
  }

  readAttachment(key: ConversationKey, id: string): { ref: AttachmentRecordRef; bytes: Uint8Array<ArrayBuffer> } | undefined {
    const row = lazyRows(this.driver, 'SELECT ref, chunks FROM flue_attachments WHERE stream = ? AND id = ?', key, id)[0];
    if (row === undefined) return undefined;
    const ref = JSON.parse(String(row.ref)) as AttachmentRecordRef;
    const parts = lazyRows(this.driver, 'SELECT data FROM flue_attachment_chunks WHERE stream = ? AND id = ? ORDER BY idx', key, id).map(
      (chunk) => toBytes(chunk.data),
    );
    if (parts.length !== Number(row.chunks)) {
      throw new ConversationRecordInvariantError(id, 'attachment', `expected ${row.chunks} chunks, found ${parts.length}`);
    }
    const bytes = new Uint8Array(ref.size);
    let offset = 0;
    for (const part of parts) {
      bytes.set(part, offset);
      offset += part.length;
    }
    return { ref, bytes };
  }

  // ── Persistent state and durable steps ───────────────────────────────────────────────────

  readState(key: ConversationKey): Map<string, unknown> {
    const state = new Map<string, unknown>();
    for (const row of lazyRows(this.driver, 'SELECT name, value FROM flue_state WHERE stream = ?', key)) {
      state.set(String(row.name), JSON.parse(this.unspill(row.value).text));
    }
    return state;
  }

  /**
   * `seq` is the batch that explains the write (committed in the same transaction); `null` writes
   * no history (an imported value whose history was not kept).
   */
  writeState(key: ConversationKey, name: string, value: unknown, seq: number | null): void {
    const spilled = spillKey('state', key, name);
    const text = JSON.stringify(value);
    // An overwrite must not leave the previous value's chunks behind.
    lazyUpdate(this.driver, 'DELETE FROM flue_spill WHERE key = ?', spilled);
    lazyWrite(
      this.driver,
      'INSERT INTO flue_state (stream, name, value) VALUES (?, ?, ?) ON CONFLICT (stream, name) DO UPDATE SET value = excluded.value',
      key,
      name,
      this.spill(spilled, text).column,
    );
    if (seq !== null) this.writeStateHistory(key, seq, name, text);
  }

  /**
   * One history entry: the value (as JSON text) `name` took in the batch `seq`. A value over
   * STATE_HISTORY_BYTES, or one not known (`undefined`), is kept as a marker only, so the history
   * costs at most that much per write: the value is then known from that batch on only while it
   * is the name's last write (then it is the current value).
   */
  writeStateHistory(key: ConversationKey, seq: number, name: string, text: string | undefined): void {
    const kept = text !== undefined && (text.length * 3 <= STATE_HISTORY_BYTES || utf8Size(text) <= STATE_HISTORY_BYTES);
    lazyWrite(
      this.driver,
      'INSERT INTO flue_state_history (stream, seq, name, value) VALUES (?, ?, ?, ?) ON CONFLICT (stream, seq, name) DO UPDATE SET value = excluded.value',
      key,
      seq,
      name,
      kept ? text : UNKEPT_MARKER,
    );
  }

  /** Every recorded state write of the conversation, in batch order. */
  readStateHistory(key: ConversationKey): StateHistoryEntry[] {
    return lazyRows(this.driver, 'SELECT seq, name, value FROM flue_state_history WHERE stream = ? ORDER BY seq', key).map((row) => {
      const entry = { seq: Number(row.seq), name: String(row.name) };
      return row.value === UNKEPT_MARKER ? { ...entry, unkept: true as const } : { ...entry, value: JSON.parse(String(row.value)) };
    });
  }

  // ── Timers ───────────────────────────────────────────────────────────────────────────────

  timers(key: ConversationKey): TimerRow[] {
    return lazyRows(this.driver, 'SELECT * FROM flue_timers WHERE stream = ? ORDER BY due_at, name', key).map(toTimer);
  }

  /** Schedules or replaces the conversation's timer of that name. */
  putTimer(timer: TimerRow): void {
    lazyWrite(
      this.driver,
      `INSERT INTO flue_timers (stream, name, id, due_at, body) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (stream, name) DO UPDATE SET id = excluded.id, due_at = excluded.due_at, body = excluded.body`,
      timer.conversation,
      timer.name,
      timer.id,
      timer.dueAt,
      timer.body,
    );
  }

  deleteTimer(key: ConversationKey, name: string): void {
    lazyUpdate(this.driver, 'DELETE FROM flue_timers WHERE stream = ? AND name = ?', key, name);
  }

  /** Removes the timer only if it is still the schedule `id` (not a later one of the same name). */
  deleteTimerId(key: ConversationKey, id: string): void {
    lazyUpdate(this.driver, 'DELETE FROM flue_timers WHERE stream = ? AND id = ?', key, id);
  }

  /** Timers due at `now`, earliest first, across every conversation of the store. */
  dueTimers(now: number): TimerRow[] {
    return lazyRows(this.driver, 'SELECT * FROM flue_timers WHERE due_at <= ? ORDER BY due_at, stream, name', now).map(toTimer);
  }

  /** The earliest due time across the store, if any timer is pending. */
  nextTimerDue(): number | undefined {
    const row = lazyRows(this.driver, 'SELECT min(due_at) AS due FROM flue_timers')[0];
    return row === undefined || row.due === null ? undefined : Number(row.due);
  }

  readStep(key: ConversationKey, toolCallId: string, step: string): { found: true; value: unknown } | { found: false } {
    const row = lazyRows(
      this.driver,
      'SELECT value FROM flue_steps WHERE stream = ? AND tool_call_id = ? AND step = ?',
      key,
      toolCallId,
      step,
    )[0];
    return row === undefined ? { found: false } : { found: true, value: JSON.parse(this.unspill(row.value).text) };
  }

  /** First write wins: a recorded step is never rewritten. */
  writeStep(key: ConversationKey, toolCallId: string, step: string, value: unknown): void {
    this.driver.transaction(() => {
      const exists = lazyRows(
        this.driver,
        'SELECT 1 AS found FROM flue_steps WHERE stream = ? AND tool_call_id = ? AND step = ?',
        key,
        toolCallId,
        step,
      );
      if (exists.length > 0) return;
      lazyWrite(
        this.driver,
        'INSERT INTO flue_steps (stream, tool_call_id, step, value) VALUES (?, ?, ?, ?)',
        key,
        toolCallId,
        step,
        this.spill(() => spillKey('step', key, toolCallId, step), JSON.stringify(value)).column,
      );
    });
  }

  // ── Checkpoints ──────────────────────────────────────────────────────────────────────────

  /**
   * Replaces the conversation's checkpoint: the fold after batch `seq`, as JSON text or as the value
   * (whose large strings are then kept apart, naming the log's or ledger's chunks where this store
   * knows them); answers its stored size.
   */
  writeCheckpoint(key: ConversationKey, seq: number, version: number, body: string | { value: unknown }): number {
    const spilled = spillKey('checkpoint', key);
    // The previous body's chunks go, whether or not the new one spills: the whole spill's key and
    // every string it kept apart (the keys below it). Never chunks it only named.
    lazyUpdate(this.driver, 'DELETE FROM flue_spill WHERE key = ?', spilled);
    const below = `${spilled.slice(0, -1)},`;
    const past = `${spilled.slice(0, -1)}-`; // ',' + 1: every key starting with `below` sorts before it
    lazyUpdate(this.driver, 'DELETE FROM flue_spill WHERE key >= ? AND key < ?', below, past);
    this.known = this.known.filter((part) => !part.key.startsWith(below));
    const parted =
      typeof body === 'string' ? undefined : this.prepareParts(key, body.value, (path) => spillKey('checkpoint', key, ...path));
    const value = parted ?? this.spill(spilled, typeof body === 'string' ? body : JSON.stringify(body.value));
    lazyWrite(
      this.driver,
      `INSERT INTO flue_checkpoints (stream, seq, version, body) VALUES (?, ?, ?, ?)
         ON CONFLICT (stream) DO UPDATE SET seq = excluded.seq, version = excluded.version, body = excluded.body`,
      key,
      seq,
      version,
      value.column,
    );
    parted?.write();
    return value.bytes;
  }

  /**
   * The conversation's checkpoint as stored, if any: its JSON text, or its value when its large
   * strings are kept apart. Throws `ConversationRecordInvariantError` when its spilled chunks are
   * damaged; the caller decides what a checkpoint is worth.
   */
  readCheckpoint(
    key: ConversationKey,
  ): ({ seq: number; version: number; bytes: number } & ({ body: string; value?: never } | { value: unknown; body?: never })) | undefined {
    const row = lazyRows(this.driver, 'SELECT seq, version, body FROM flue_checkpoints WHERE stream = ?', key)[0];
    if (row === undefined) return undefined;
    const at = { seq: Number(row.seq), version: Number(row.version) };
    if (String(row.body).startsWith(PARTS_MARKER)) {
      const { value, bytes } = this.readValue(row.body, key, true);
      return { ...at, value, bytes };
    }
    const { text, bytes } = this.unspill(row.body, true);
    return { ...at, body: text, bytes };
  }

  // ── Spilled values ───────────────────────────────────────────────────────────────────────

  /**
   * The column value for `text`: the text itself when it fits a row, else a marker after the
   * chunks are written (callers are inside the row's transaction). Chunks split the UTF-8 bytes
   * anywhere; they are joined before decoding.
   */
  private spill(keyOf: string | (() => string), text: string): { column: string; bytes: number } {
    const bytes = utf8Size(text);
    if (bytes <= SPILL_BYTES) return { column: text, bytes };
    // A key is built only for a value that spills (most rows never do: an admission's row did each time).
    const key = typeof keyOf === 'string' ? keyOf : keyOf();
    const chunks = this.writeChunks(key, text, bytes);
    return { column: `${SPILL_MARKER}${chunks}:${key}`, bytes };
  }

  /**
   * Writes the UTF-8 of `text` (`bytes` of it, as sized) as the chunks of `key`, replacing any it
   * had; answers how many. Each chunk is encoded as it is written (utf8-chunks.ts), so a large
   * value is never held encoded whole; both drivers copy a bound BLOB.
   */
  private writeChunks(key: string, text: string, bytes: number): number {
    // Chunks of a write that never committed its row would collide with this one's. Only the
    // writer of a row deletes the chunks its key names: a row that names another row's chunks
    // (a part of a value, below) never writes or deletes them.
    lazyUpdate(this.driver, 'DELETE FROM flue_spill WHERE key = ?', key);
    const written = encodeInChunks(text, SPILL_BYTES, (chunk, idx) =>
      lazyWrite(this.driver, 'INSERT INTO flue_spill (key, idx, data) VALUES (?, ?, ?)', key, idx, chunk),
    );
    // The row names `bytes` in chunks; a size that disagreed with the encoding would name the wrong
    // count, so the transaction fails instead of committing it.
    if (written !== bytes) {
      throw new ConversationRecordInvariantError(key, 'spilled value', `encoded to ${written} bytes where it was sized at ${bytes}`);
    }
    return Math.ceil(bytes / SPILL_BYTES);
  }

  /** The text a column stands for, reassembled from its chunks when it is a marker. */
  private unspill(column: SqlValue, sized = false): { text: string; bytes: number } {
    const value = String(column);
    // Sizing an inline value costs an encode, so only callers that count bytes pay for it.
    if (!value.startsWith(SPILL_MARKER)) return { text: value, bytes: sized ? utf8Size(value) : Number.NaN };
    const rest = value.slice(SPILL_MARKER.length);
    const colon = rest.indexOf(':');
    return this.readChunks(rest.slice(colon + 1), Number(rest.slice(0, colon)));
  }

  /** The text of `chunks` chunks under `key`; throws `ConversationRecordInvariantError` when they are damaged. */
  private readChunks(key: string, chunks: number): { text: string; bytes: number } {
    const parts = lazyRows(this.driver, 'SELECT data FROM flue_spill WHERE key = ? ORDER BY idx', key).map((row) => toBytes(row.data));
    const damaged = (reason: string) => new ConversationRecordInvariantError(key, 'spilled value', reason);
    if (parts.length !== chunks) throw damaged(`expected ${chunks} chunks, found ${parts.length}`);
    // spill() fills every chunk but the last, so a shorter one was cut and the value would be too.
    const short = parts.findIndex((part, idx) => idx < chunks - 1 && part.byteLength !== SPILL_BYTES);
    if (short !== -1) throw damaged(`chunk ${short} holds ${parts[short]!.byteLength} bytes, expected ${SPILL_BYTES}`);
    let size = 0;
    for (const part of parts) size += part.byteLength;
    const bytes = new Uint8Array(size);
    let offset = 0;
    for (const part of parts) {
      bytes.set(part, offset);
      offset += part.byteLength;
    }
    try {
      return { text: decoder.decode(bytes), bytes: size };
    } catch {
      throw damaged('its chunks are not UTF-8 text');
    }
  }

  // ── Values with strings apart (value-parts.ts) ──────────────────────────────────────────

  /** Strings kept apart this store wrote or read lately, the most recent first. */
  private known: KnownPart[] = [];

  private remember(part: KnownPart): void {
    const known = [part];
    let chars = part.text.length;
    for (const older of this.known) {
      if (older.key === part.key) continue;
      if (known.length === KNOWN_PARTS || chars + older.text.length > KNOWN_PARTS_CHARS) break;
      known.push(older);
      chars += older.text.length;
    }
    this.known = known;
  }

  /**
   * The row column for `value` with its large strings apart, and the write of their chunks (call it
   * after the row's insert, in the same transaction); undefined when the value has no such string or
   * too large a rest, for the whole-value layout. A string this conversation already stored (an
   * admitted message, now committed) is named, not written again.
   */
  private prepareParts(
    conversation: ConversationKey,
    value: unknown,
    ownKey: (path: PartPath) => string,
  ): { column: string; bytes: number; write: () => void } | undefined {
    const { skeleton, taken } = takeLargeStrings(value, keptApart);
    if (taken.length === 0) return undefined;
    const skeletonText = JSON.stringify(skeleton);
    if (skeletonText.length > MAX_SKELETON_CHARS) return undefined;
    const parts: StoredPart[] = [];
    const writes: { part: StoredPart; text: string }[] = [];
    let bytes = utf8Size(skeletonText);
    for (const { path, text } of taken) {
      const same = writes.find((write) => write.text === text)?.part ?? this.storedPart(conversation, text);
      if (same !== undefined) {
        parts.push({ path, key: same.key, chunks: same.chunks, bytes: same.bytes });
      } else {
        const size = utf8Size(text);
        const part = { path, key: ownKey(path), chunks: Math.ceil(size / SPILL_BYTES), bytes: size };
        parts.push(part);
        writes.push({ part, text });
      }
      bytes += parts[parts.length - 1]!.bytes;
    }
    const write = () => {
      for (const { part, text } of writes) {
        this.writeChunks(part.key, text, part.bytes);
        this.remember({ key: part.key, conversation, text, chunks: part.chunks, bytes: part.bytes });
      }
    };
    return { column: partsColumn(parts, skeletonText), bytes, write };
  }

  /**
   * The chunks of `text` if this conversation stored it lately and they are still there (a write
   * remembered in a transaction that rolled back left none).
   */
  private storedPart(conversation: ConversationKey, text: string): KnownPart | undefined {
    // A checkpoint's own chunks go when the next one replaces it: nothing may name them.
    const known = this.known.find(
      (part) =>
        part.conversation === conversation &&
        part.text.length === text.length &&
        part.text === text &&
        !part.key.startsWith(CHECKPOINT_KEYS),
    );
    if (known === undefined) return undefined;
    const found = Number(lazyRows(this.driver, 'SELECT count(*) AS n FROM flue_spill WHERE key = ?', known.key)[0]?.n ?? 0);
    return found === known.chunks ? known : undefined;
  }

  /** The value a row's column stands for, in either layout, with its stored size when `sized`. */
  private readValue(column: SqlValue, conversation: string, sized: boolean): { value: unknown; bytes: number } {
    const text = String(column);
    let layout: ReturnType<typeof parsePartsColumn>;
    try {
      layout = parsePartsColumn(text);
    } catch (error) {
      throw new ConversationRecordInvariantError(conversation, 'value with parts', (error as Error).message);
    }
    if (layout === undefined) {
      const whole = this.unspill(text, sized);
      return { value: JSON.parse(whole.text), bytes: whole.bytes };
    }
    let bytes = sized ? utf8Size(layout.skeletonText) : Number.NaN;
    const strings: TakenString[] = layout.parts.map((part) => {
      bytes += part.bytes;
      return { path: part.path, text: this.partText(conversation, part) };
    });
    const { value, misplaced } = restoreValue(JSON.parse(layout.skeletonText), strings);
    if (misplaced !== undefined) {
      throw new ConversationRecordInvariantError(conversation, 'value with parts', `no place for a part at ${JSON.stringify(misplaced)}`);
    }
    return { value, bytes };
  }

  /** One part's text: remembered when this store wrote or read it lately, else read from its chunks. */
  private partText(conversation: string, part: StoredPart): string {
    const known = this.known.find((entry) => entry.key === part.key && entry.chunks === part.chunks && entry.bytes === part.bytes);
    if (known !== undefined) {
      this.remember(known);
      return known.text;
    }
    const { text, bytes } = this.readChunks(part.key, part.chunks);
    if (bytes !== part.bytes)
      throw new ConversationRecordInvariantError(part.key, 'spilled value', `holds ${bytes} bytes, expected ${part.bytes}`);
    this.remember({ key: part.key, conversation, text, chunks: part.chunks, bytes });
    return text;
  }

  private toSubmission(row: SqlRow): SubmissionRow {
    return toSubmission(row, this.readValue(row.payload, String(row.stream), false).value as SubmissionPayload);
  }

  // ── Sandbox files ────────────────────────────────────────────────────────────────────────

  /** The conversation's durable `virtualSandbox()` files. */
  sandboxFiles(key: ConversationKey): SqlSandboxFiles {
    return new SqlSandboxFiles(this.driver, key);
  }
}
