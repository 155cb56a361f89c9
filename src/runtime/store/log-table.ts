/**
 * Where a store keeps its conversations' logs, as SQL: one row per batch, in one of two layouts.
 *
 * - `flue_log` (formats 2 and 3): a rowid table keyed by `(log << 32) + seq`, where `log` numbers the
 *   conversation in the database (`flue_streams.log`). A rowid table keeps a row of up to 4,061
 *   bytes in its b-tree page; the one integer key needs no second index, so a batch is still one
 *   row written.
 * - `flue_batches` (format 1): a WITHOUT ROWID table keyed by `(stream, seq)`, whose rows spill
 *   past 1,002 bytes into overflow pages. Stores made in format 1 keep it.
 *
 * The store reads which one a database has once (`logTableOf`, by the format its stamp names), and
 * asks it for every log statement and for what a row of it costs in pages (inline-rows.ts).
 */
import { ConversationRecordInvariantError } from '../common/errors.ts';
import type { ConversationKey } from './conversation-key.ts';
import { logRowPayload, overflowPages, rowidLogRowPayload } from './inline-rows.ts';
import type { SqlDriver, SqlRow } from './sql-driver.ts';
import { FLUE_FORMAT_VERSION, type StoreFormat } from './schema.ts';

/** A conversation's `flue_streams` row. */
export interface ConversationInfo {
  key: ConversationKey;
  agent: string;
  instanceId: string;
  incarnation: string;
}

export interface LogTable {
  /** The store's format, by its stamp (schema.ts). */
  readonly format: StoreFormat;
  /** Adds the conversation's `flue_streams` row. */
  create(info: ConversationInfo): void;
  /** The sequence of the conversation's last batch, or -1 for none. */
  head(key: ConversationKey): number;
  /** Inserts batch `seq`; fails on the primary key when it exists. */
  insert(key: ConversationKey, seq: number, column: string): void;
  /** Up to `limit` batches after `after`, in order: `{ seq, records }` rows. */
  rows(key: ConversationKey, after: number, limit: number): SqlRow[];
  /**
   * Up to `limit` batches before `before`, newest first, whose stored text holds one of `needles`
   * or starts with `spilled` (a batch kept whole in chunks, whose text the column does not hold).
   */
  rowsBackward(key: ConversationKey, before: number, limit: number, needles: readonly [string, string], spilled: string): SqlRow[];
  /** The overflow pages a row of batch `seq` with `textBytes` of records takes (inline-rows.ts). */
  overflowPages(key: ConversationKey, seq: number, textBytes: number): number;
}

/** The log table a migrated store's database holds, by the format its stamp names. */
export function logTableOf(driver: SqlDriver): LogTable {
  const stamp = driver.query(`SELECT value FROM flue_meta WHERE key = 'format_version'`)[0];
  const format = String(stamp?.value) as StoreFormat;
  return format === '1' ? batchesTable(driver) : rowidLog(driver, format);
}

/** The log table of a store made in this version's format and holding no conversation yet: known without a read. */
export function newLogTable(driver: SqlDriver): LogTable {
  return rowidLog(driver, FLUE_FORMAT_VERSION, 0);
}

function batchesTable(driver: SqlDriver): LogTable {
  return {
    format: '1',
    create: ({ key, agent, instanceId, incarnation }) =>
      driver.run(
        'INSERT INTO flue_streams (stream, agent, instance_id, incarnation) VALUES (?, ?, ?, ?)',
        key,
        agent,
        instanceId,
        incarnation,
      ),
    head(key) {
      const row = driver.query('SELECT max(seq) AS seq FROM flue_batches WHERE stream = ?', key)[0];
      return row === undefined || row.seq === null ? -1 : Number(row.seq);
    },
    insert: (key, seq, column) => driver.run('INSERT INTO flue_batches (stream, seq, records) VALUES (?, ?, ?)', key, seq, column),
    rows: (key, after, limit) =>
      driver.query('SELECT seq, records FROM flue_batches WHERE stream = ? AND seq > ? ORDER BY seq LIMIT ?', key, after, limit),
    // Only a store of format 4 on admits submissions in its log (SqlStore.admitsInLog): none to find here.
    rowsBackward: () => [],
    overflowPages: (key, seq, textBytes) => overflowPages(logRowPayload(key, seq, textBytes), 'index'),
  };
}

function rowidLog(driver: SqlDriver, format: StoreFormat, lastLog?: number): LogTable {
  /**
   * Each conversation's log number, as read or assigned, and the last one assigned. A database has
   * one writer (durability.md §3: one process per database on Node, its object on Cloudflare), so
   * the highest number is read once and counted on from there; a creation overwrites what a
   * rolled-back one left.
   */
  const numbers = new Map<ConversationKey, number>();
  let last = lastLog;
  const numberOf = (key: ConversationKey): number | undefined => {
    let log = numbers.get(key);
    if (log === undefined) {
      const row = driver.query('SELECT log FROM flue_streams WHERE stream = ?', key)[0];
      if (row === undefined) return undefined;
      log = Number(row.log);
      numbers.set(key, log);
    }
    return log;
  };
  return {
    format,
    create({ key, agent, instanceId, incarnation }) {
      last ??= Number(driver.query('SELECT coalesce(max(log), 0) AS log FROM flue_streams')[0]!.log);
      const log = last + 1;
      driver.run(
        'INSERT INTO flue_streams (stream, agent, instance_id, incarnation, log) VALUES (?, ?, ?, ?, ?)',
        key,
        agent,
        instanceId,
        incarnation,
        log,
      );
      last = log;
      numbers.set(key, log);
    },
    head(key) {
      const log = numberOf(key);
      if (log === undefined) return -1;
      const row = driver.query(
        'SELECT max(pos) - (? << 32) AS seq FROM flue_log WHERE pos >= (? << 32) AND pos < ((? + 1) << 32)',
        log,
        log,
        log,
      )[0];
      return row === undefined || row.seq === null ? -1 : Number(row.seq);
    },
    insert(key, seq, column) {
      const log = numberOf(key);
      // Every conversation is created before its first batch (its birth), in the same transaction.
      if (log === undefined)
        throw new ConversationRecordInvariantError(key, 'log', 'the conversation has no stream row to append a batch under');
      driver.run('INSERT INTO flue_log (pos, records) VALUES ((? << 32) + ?, ?)', log, seq, column);
    },
    rows(key, after, limit) {
      const log = numberOf(key);
      if (log === undefined) return [];
      return driver.query(
        'SELECT pos - (? << 32) AS seq, records FROM flue_log WHERE pos > (? << 32) + ? AND pos < ((? + 1) << 32) ORDER BY pos LIMIT ?',
        log,
        log,
        after,
        log,
        limit,
      );
    },
    rowsBackward(key, before, limit, [first, second], spilled) {
      const log = numberOf(key);
      if (log === undefined) return [];
      return driver.query(
        `SELECT pos - (? << 32) AS seq, records FROM flue_log WHERE pos >= (? << 32) AND pos < (? << 32) + ?
           AND (instr(records, ?) > 0 OR instr(records, ?) > 0 OR substr(records, 1, ?) = ?) ORDER BY pos DESC LIMIT ?`,
        log,
        log,
        log,
        before,
        first,
        second,
        spilled.length,
        spilled,
        limit,
      );
    },
    overflowPages: (_key, _seq, textBytes) => overflowPages(rowidLogRowPayload(textBytes), 'table'),
  };
}
