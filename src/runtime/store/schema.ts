/**
 * The store's tables and how a database gains them. Every conversation writes its log and its
 * stream row, so those tables are made when the store is: `migrate()`. The others hold what only
 * some conversations use (the ledger, which a Durable Object's conversation admitted in its log
 * never needs; state, steps, timers, attachments, large values, sandbox files, checkpoints of long
 * logs): each is made by the first write that needs it. An empty table still
 * costs a page of storage (4 KiB, billed per conversation on Durable Objects) and its creation
 * costs CPU in every new object; a read of a table not made yet finds nothing.
 *
 * Stores made before tables were made lazily hold them all; versions before this one create any
 * that are missing when they open the store, so both directions keep working.
 */
import { PersistedFormatVersionError } from '../common/errors.ts';
import type { SqlDriver, SqlRow, SqlValue } from './sql-driver.ts';

/**
 * The format a new store is made in. Version 2 keeps the log in a rowid table (`flue_log`, below);
 * stores of version 1 keep their `flue_batches` and are read and written as they are. Version 3 has
 * version 2's tables, and a model step written whole in one batch keeps its text once, in its
 * completed message, with no deltas (turn-stream.ts): a version before 3 would read such a step as
 * saying nothing, so it refuses the store (its stamp), as a version before 2 refuses a version-2
 * store, where it would find no log. Stores of versions 1 and 2 go on writing the deltas. Version 4
 * has version 3's tables, and a Durable Object admits a submission to an idle conversation in its
 * log alone, with no ledger row: a version before 4 would not see
 * that open work, nor find the settlements kept in `flue_settled`, so it refuses the store.
 * Version 5 has version 4's tables, and its rows leave out what reading derives exactly (a step's
 * start written with its completion, ids a record already holds: record-packing.ts): a version
 * before 5 would read a step that never started, so it refuses the store.
 */
export const FLUE_FORMAT_VERSION = '5';
/** The formats this version reads and writes: its own, and the ones before it. */
export const READABLE_FORMATS = ['1', '2', '3', '4', FLUE_FORMAT_VERSION] as const;
export type StoreFormat = (typeof READABLE_FORMATS)[number];

/** The ledger: every format keeps it alike. */
const LEDGER = {
  // Keyed by id in one b-tree, so an admission writes two entries (the row and its open-queue
  // entry) where a rowid table with a UNIQUE id wrote three. `ord` is the admission order, assigned
  // by the store (SqlStore.nextOrd). Stores created before this layout keep their rowid table
  // (`ord INTEGER PRIMARY KEY`, `id UNIQUE`): every statement reads and writes both layouts.
  flue_submissions: `CREATE TABLE IF NOT EXISTS flue_submissions (
     id TEXT NOT NULL PRIMARY KEY,
     ord INTEGER NOT NULL,
     stream TEXT NOT NULL,
     kind TEXT NOT NULL,
     payload TEXT NOT NULL,
     accepted_at TEXT NOT NULL,
     status TEXT NOT NULL,
     attempt_id TEXT,
     attempt_count INTEGER NOT NULL DEFAULT 0,
     max_attempts INTEGER,
     timeout_ms INTEGER,
     started_at INTEGER,
     abort_requested_at INTEGER,
     continuation INTEGER NOT NULL DEFAULT 0,
     joined_into TEXT,
     outcome TEXT,
     error TEXT,
     settled_at INTEGER,
     settlement TEXT
   ) WITHOUT ROWID`,
  // Only unsettled rows are indexed, so the queue lookup stays small however long the history.
  // The predicate is on settled_at, which changes once, so status changes rewrite no index entry.
  flue_submissions_open: `CREATE INDEX IF NOT EXISTS flue_submissions_open ON flue_submissions (stream, ord) WHERE settled_at IS NULL`,
};

/** Versions 2 on: the log in a rowid table. */
const ROWID_LOG_OBJECTS: Record<string, string> = {
  // `log` numbers the conversation's log in this database (1, 2, …; one per conversation).
  flue_streams: `CREATE TABLE IF NOT EXISTS flue_streams (
     stream TEXT PRIMARY KEY, agent TEXT NOT NULL, instance_id TEXT NOT NULL, incarnation TEXT NOT NULL, log INTEGER NOT NULL
   ) WITHOUT ROWID`,
  // One row per batch, keyed by `(log << 32) + seq`: a rowid table keeps a row of up to 4,061
  // bytes in its page (a WITHOUT ROWID table spills past 1,002 into a 4 KiB overflow page of its
  // own), and the one integer key needs no second index (store/inline-rows.ts).
  flue_log: `CREATE TABLE IF NOT EXISTS flue_log (pos INTEGER PRIMARY KEY, records TEXT NOT NULL)`,
};

/** Made by `migrate()`: every conversation writes them. Format → name → statement, in creation order. */
const CORE_OBJECTS: Record<StoreFormat, Record<string, string>> = {
  '1': {
    flue_streams: `CREATE TABLE IF NOT EXISTS flue_streams (
       stream TEXT PRIMARY KEY, agent TEXT NOT NULL, instance_id TEXT NOT NULL, incarnation TEXT NOT NULL
     ) WITHOUT ROWID`,
    flue_batches: `CREATE TABLE IF NOT EXISTS flue_batches (
       stream TEXT NOT NULL, seq INTEGER NOT NULL, records TEXT NOT NULL, PRIMARY KEY (stream, seq)
     ) WITHOUT ROWID`,
    ...LEDGER,
  },
  '2': { ...ROWID_LOG_OBJECTS, ...LEDGER },
  '3': { ...ROWID_LOG_OBJECTS, ...LEDGER },
  // A Durable Object's conversation whose every message was admitted in its log never needs the
  // ledger: from format 4 on its table and index (two pages, and two statements in every new
  // object) are made by the first row (LAZY_TABLES). Earlier formats made them with the store.
  '4': ROWID_LOG_OBJECTS,
  '5': ROWID_LOG_OBJECTS,
};

/** Made by the first write to each: table → its statements (the table, then its indexes). */
const LAZY_TABLES = {
  // The ledger of a store of format 4 on (CORE_OBJECTS); earlier formats hold it from the start.
  flue_submissions: [LEDGER.flue_submissions, LEDGER.flue_submissions_open],
  flue_state: [
    `CREATE TABLE IF NOT EXISTS flue_state (
       stream TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (stream, name)
     ) WITHOUT ROWID`,
  ],
  flue_attachments: [
    `CREATE TABLE IF NOT EXISTS flue_attachments (
       stream TEXT NOT NULL, id TEXT NOT NULL, ref TEXT NOT NULL, chunks INTEGER NOT NULL, PRIMARY KEY (stream, id)
     ) WITHOUT ROWID`,
  ],
  flue_attachment_chunks: [
    `CREATE TABLE IF NOT EXISTS flue_attachment_chunks (
       stream TEXT NOT NULL, id TEXT NOT NULL, idx INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (stream, id, idx)
     ) WITHOUT ROWID`,
  ],
  flue_steps: [
    `CREATE TABLE IF NOT EXISTS flue_steps (
       stream TEXT NOT NULL, tool_call_id TEXT NOT NULL, step TEXT NOT NULL, value TEXT NOT NULL,
       PRIMARY KEY (stream, tool_call_id, step)
     ) WITHOUT ROWID`,
  ],
  // Chunks of values too large for one row. A rowid table: the rows carry large values.
  flue_spill: [
    `CREATE TABLE IF NOT EXISTS flue_spill (
       key TEXT NOT NULL, idx INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (key, idx)
     )`,
  ],
  // virtualSandbox() files (sql-sandbox-files.ts). Rowid tables: the rows carry file contents.
  flue_sandbox_files: [
    `CREATE TABLE IF NOT EXISTS flue_sandbox_files (
       stream TEXT NOT NULL, path TEXT NOT NULL, kind TEXT NOT NULL, mode INTEGER NOT NULL, size INTEGER NOT NULL,
       mtime INTEGER NOT NULL, chunks INTEGER NOT NULL, data BLOB, PRIMARY KEY (stream, path)
     )`,
  ],
  flue_sandbox_chunks: [
    `CREATE TABLE IF NOT EXISTS flue_sandbox_chunks (
       stream TEXT NOT NULL, path TEXT NOT NULL, idx INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (stream, path, idx)
     )`,
  ],
  // Each persistent state write, under the batch that explains it, so `fork()` can tell the state
  // as of an earlier offset. Stores made before it hold none: their state is known at the head only.
  flue_state_history: [
    `CREATE TABLE IF NOT EXISTS flue_state_history (
       stream TEXT NOT NULL, seq INTEGER NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (stream, seq, name)
     ) WITHOUT ROWID`,
  ],
  // useTimer(): one row per pending timer, deleted in the transaction that admits its delivery.
  // The host's one wake-up (an alarm, a Node timeout) is the earliest due time across the store.
  flue_timers: [
    `CREATE TABLE IF NOT EXISTS flue_timers (
       stream TEXT NOT NULL, name TEXT NOT NULL, id TEXT NOT NULL, due_at INTEGER NOT NULL, body TEXT NOT NULL,
       PRIMARY KEY (stream, name)
     ) WITHOUT ROWID`,
    `CREATE INDEX IF NOT EXISTS flue_timers_due ON flue_timers (due_at)`,
  ],
  // The settlements of submissions admitted in the log (format 4), a page with each checkpoint
  // (`seq`, in parts of at most 256 KiB): what a ledger row would keep of them (settled-submission.ts),
  // for receipts and the usage ledger.
  flue_settled: [
    `CREATE TABLE IF NOT EXISTS flue_settled (
       stream TEXT NOT NULL, seq INTEGER NOT NULL, part INTEGER NOT NULL, entries TEXT NOT NULL, PRIMARY KEY (stream, seq, part)
     ) WITHOUT ROWID`,
  ],
  // The newest checkpoint of each conversation's fold: derived data, rewritten in the transaction of
  // a later batch, read (and distrusted when it does not check out) when a fold is rebuilt. A rowid
  // table: the body can be large (over SPILL_BYTES it is spilled).
  flue_checkpoints: [
    `CREATE TABLE IF NOT EXISTS flue_checkpoints (
       stream TEXT NOT NULL PRIMARY KEY, seq INTEGER NOT NULL, version INTEGER NOT NULL, body TEXT NOT NULL
     )`,
  ],
} as const satisfies Record<string, readonly string[]>;

export type LazyTable = keyof typeof LAZY_TABLES;

/**
 * The store's tables and indexes the database holds, name → statement: one read. Empty for a
 * database nothing of the store was written to yet.
 */
export function schemaObjects(driver: SqlDriver): Map<string, string> {
  return new Map(
    driver.query(`SELECT name, sql FROM sqlite_master WHERE name LIKE 'flue%'`).map((row) => [String(row.name), String(row.sql ?? '')]),
  );
}

/**
 * Creates or verifies the store: only what is missing from `objects` (the schema as read by
 * `schemaObjects()`, read here unless the caller just did). Stamp first, then create, so a crash
 * mid-migration leaves a versioned store. True when it made the store just now: nothing is in it yet.
 */
export function migrate(driver: SqlDriver, objects: Map<string, string> = schemaObjects(driver)): boolean {
  const stamp = objects.has('flue_meta') ? driver.query(`SELECT value FROM flue_meta WHERE key = 'format_version'`)[0] : undefined;
  const created = stamp === undefined;
  const statements: string[] = [];
  if (created) {
    if ([...objects.keys()].some((name) => name !== 'flue_meta')) throw new PersistedFormatVersionError('unversioned', FLUE_FORMAT_VERSION);
    statements.push(
      // WITHOUT ROWID: one b-tree, where a rowid table with a TEXT key takes two (a page each).
      'CREATE TABLE IF NOT EXISTS flue_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID',
      `INSERT INTO flue_meta (key, value) VALUES ('format_version', '${FLUE_FORMAT_VERSION}')`,
    );
  } else if (!(READABLE_FORMATS as readonly string[]).includes(String(stamp.value))) {
    throw new PersistedFormatVersionError(String(stamp.value), FLUE_FORMAT_VERSION);
  }
  const format = created ? FLUE_FORMAT_VERSION : (String(stamp.value) as StoreFormat);
  for (const [name, statement] of Object.entries(CORE_OBJECTS[format])) if (!objects.has(name)) statements.push(statement);
  runAll(driver, statements);
  // Stores made before settlements were kept beside their rows gain the column (NULL in the rows
  // settled until then: readers fall back to the log for those). Versions before it ignore it.
  const submissions = objects.get('flue_submissions');
  if (submissions !== undefined && !/\bsettlement\s+TEXT\b/i.test(submissions)) {
    driver.run('ALTER TABLE flue_submissions ADD COLUMN settlement TEXT');
  }
  return created;
}

/**
 * Statements without parameters, in order: in one call where the driver takes a script (a new
 * Durable Object's schema went from 7 calls into SQLite to 2, about half of its cost).
 */
function runAll(driver: SqlDriver, statements: readonly string[]): void {
  if (statements.length === 0) return;
  if (driver.script === undefined) for (const statement of statements) driver.run(statement);
  else driver.script(statements.join(';\n'));
}

/** Makes every table a store makes at its first write, now: for inspecting a store's whole layout (its query plans). */
export function createEveryTable(driver: SqlDriver): void {
  for (const table of Object.keys(LAZY_TABLES) as LazyTable[]) makeTable(driver, table);
}

/** A lazy table with its indexes. */
function makeTable(driver: SqlDriver, table: LazyTable): void {
  for (const statement of LAZY_TABLES[table]) driver.run(statement);
  knownAbsent.get(driver)?.delete(table);
}

/**
 * Per driver, the lazy tables its database is known to lack: told by a store that is the only
 * writer of its database (`knowTables`), so a read of such a table finds nothing without asking
 * SQLite (a statement on a missing table fails, and a failure costs more than a read: four at each
 * wake of a Durable Object whose conversation never needed the ledger, timers or checkpoints).
 * A table this module makes leaves the set; one whose making rolled back is absent again, which
 * the statements find out as before (they fail, and the failure is handled).
 */
const knownAbsent = new WeakMap<SqlDriver, Set<string>>();

/** `present`: the store's objects the database holds (`schemaObjects()`), read by the database's only writer. */
export function knowTables(driver: SqlDriver, present: ReadonlyMap<string, string>): void {
  knownAbsent.set(driver, new Set(Object.keys(LAZY_TABLES).filter((table) => !present.has(table))));
}

/** The lazy table a statement reads or writes (its first `FROM`, `INTO` or `UPDATE`), by statement text. */
const tableOfStatement = new Map<string, string | undefined>();
function tableOf(sql: string): string | undefined {
  let table = tableOfStatement.get(sql);
  if (table === undefined && !tableOfStatement.has(sql)) {
    table = /\b(?:FROM|INTO|UPDATE)\s+(flue_\w+)/i.exec(sql)?.[1];
    tableOfStatement.set(sql, table);
  }
  return table;
}

/** Whether `sql`'s table is known to be missing: then it is not asked. */
function knownMissing(driver: SqlDriver, sql: string): boolean {
  const absent = knownAbsent.get(driver);
  if (absent === undefined || absent.size === 0) return false;
  const table = tableOf(sql);
  return table !== undefined && absent.has(table);
}

/** The lazy table a failed statement found missing, if that is why it failed. */
function missingTable(error: unknown): LazyTable | undefined {
  // node:sqlite says "no such table: flue_x", Durable Object SQLite "no such table: flue_x: SQLITE_ERROR".
  const name = /no such table: (?:main\.)?(flue_\w+)/.exec(error instanceof Error ? error.message : '')?.[1];
  return name !== undefined && Object.hasOwn(LAZY_TABLES, name) ? (name as LazyTable) : undefined;
}

/** A read of a lazy table: no rows while the table is not made yet (its changes go through `lazyUpdate`). */
export function lazyRows(driver: SqlDriver, sql: string, ...params: SqlValue[]): SqlRow[] {
  if (knownMissing(driver, sql)) return [];
  try {
    return driver.query(sql, ...params);
  } catch (error) {
    if (missingTable(error) !== undefined) return [];
    throw error;
  }
}

/** An update or delete of a lazy table's rows: nothing to change while the table is not made yet. */
export function lazyUpdate(driver: SqlDriver, sql: string, ...params: SqlValue[]): void {
  if (knownMissing(driver, sql)) return;
  try {
    driver.run(sql, ...params);
  } catch (error) {
    if (missingTable(error) === undefined) throw error;
  }
}

/**
 * A write to a lazy table: makes the table first when it is missing, in the caller's transaction
 * (a rolled-back write leaves no table; the next write makes it again).
 */
export function lazyWrite(driver: SqlDriver, sql: string, ...params: SqlValue[]): void {
  if (knownMissing(driver, sql)) makeTable(driver, tableOf(sql) as LazyTable);
  try {
    driver.run(sql, ...params);
  } catch (error) {
    const table = missingTable(error);
    if (table === undefined) throw error;
    makeTable(driver, table);
    driver.run(sql, ...params);
  }
}
