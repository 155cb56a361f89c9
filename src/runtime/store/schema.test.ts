import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { PersistedFormatVersionError } from '../common/errors.ts';
import type { SqlDriver } from './sql-driver.ts';
import { createEveryTable, knowTables, lazyRows, lazyUpdate, lazyWrite, migrate, schemaObjects } from './schema.ts';

/** node:sqlite as a driver that records every statement it runs. */
function recorded(db = new DatabaseSync(':memory:')): { db: DatabaseSync; driver: SqlDriver; statements: string[] } {
  const statements: string[] = [];
  const driver: SqlDriver = {
    query: (sql, ...params) => (statements.push(sql), db.prepare(sql).all(...params) as never),
    run: (sql, ...params) => void (statements.push(sql), db.prepare(sql).run(...params)),
    transaction: (fn) => {
      db.exec('SAVEPOINT t');
      try {
        const result = fn();
        db.exec('RELEASE t');
        return result;
      } catch (error) {
        db.exec('ROLLBACK TO t');
        db.exec('RELEASE t');
        throw error;
      }
    },
  };
  return { db, driver, statements };
}

const objects = (db: DatabaseSync) =>
  db
    .prepare(`SELECT name FROM sqlite_master WHERE name LIKE 'flue%' ORDER BY name`)
    .all()
    .map((row) => String(row.name));

const created = (statements: string[]) => statements.filter((sql) => /^\s*(CREATE|ALTER|INSERT)/.test(sql));

describe('schemaObjects', () => {
  it('is empty for a database nothing of the store was written to, holds its tables once migrate() made it, and writes nothing', () => {
    const { db, driver, statements } = recorded();
    db.exec('CREATE TABLE app_notes (body TEXT)');
    expect(schemaObjects(driver).size).toBe(0);
    expect(created(statements)).toEqual([]);
    migrate(driver);
    expect([...schemaObjects(driver).keys()].sort()).toEqual(objects(db));
  });

  it('lets migrate() open a store with the schema its caller read: one read of its own, the stamp', () => {
    const { db, driver } = recorded();
    migrate(driver);
    const again = recorded(db);
    const schema = schemaObjects(again.driver);
    expect(migrate(again.driver, schema)).toBe(false);
    expect(again.statements).toHaveLength(2);
  });
});

describe('migrate', () => {
  it('makes a new store with the tables every conversation writes, and a few pages', () => {
    const { db, driver } = recorded();
    expect(migrate(driver)).toBe(true);
    expect(objects(db)).toEqual(['flue_log', 'flue_meta', 'flue_streams']);
    expect(db.prepare(`SELECT value FROM flue_meta WHERE key = 'format_version'`).get()).toEqual({ value: '5' });
    // One page per table, and the schema's own: the 22 pages of a store with every table were 88 KiB,
    // the 7 of a store made with its ledger 28 KiB.
    expect(Number((db.prepare('PRAGMA page_count').get() as { page_count: number }).page_count)).toBeLessThanOrEqual(4);
  });

  it('makes the ledger, keyed by id and with its open-queue index, with its first row; a store made with it keeps it', () => {
    const { db, driver } = recorded();
    migrate(driver);
    expect(lazyRows(driver, 'SELECT id FROM flue_submissions WHERE settled_at IS NULL')).toEqual([]);
    lazyWrite(
      driver,
      `INSERT INTO flue_submissions (id, ord, stream, kind, payload, accepted_at, status) VALUES ('a', 1, 's', 'dispatch', '{}', 'now', 'queued')`,
    );
    expect(objects(db)).toEqual(['flue_log', 'flue_meta', 'flue_streams', 'flue_submissions', 'flue_submissions_open']);
    expect(String(db.prepare(`SELECT sql FROM sqlite_master WHERE name = 'flue_submissions'`).get()!.sql)).toMatch(/WITHOUT ROWID/);
    const reopened = recorded(db);
    migrate(reopened.driver);
    expect(created(reopened.statements)).toEqual([]);
    expect(lazyRows(reopened.driver, 'SELECT id FROM flue_submissions')).toEqual([{ id: 'a' }]);
  });

  it('makes a new store in one script where the driver takes one', () => {
    const db = new DatabaseSync(':memory:');
    const { driver, statements } = recorded(db);
    const scripts: string[] = [];
    expect(migrate({ ...driver, script: (sql) => (scripts.push(sql), db.exec(sql)) })).toBe(true);
    // The schema's one read, then everything else in one call.
    expect([statements.length, scripts.length]).toEqual([1, 1]);
    expect(objects(db)).toEqual(['flue_log', 'flue_meta', 'flue_streams']);
    expect(db.prepare(`SELECT value FROM flue_meta WHERE key = 'format_version'`).get()).toEqual({ value: '5' });
  });

  it('opens a store it made with two reads and no write', () => {
    const { db, driver } = recorded();
    migrate(driver);
    const again = recorded(db);
    expect(migrate(again.driver)).toBe(false);
    expect(again.statements).toHaveLength(2);
    expect(created(again.statements)).toEqual([]);
  });

  it('opens a store an earlier version made with every table, writing nothing', () => {
    const { db, driver } = recorded();
    migrate(driver);
    createEveryTable(driver);
    lazyWrite(driver, `INSERT INTO flue_timers (stream, name, id, due_at, body) VALUES ('s', 'n', 'i', 1, '{}')`);
    const reopened = recorded(db);
    migrate(reopened.driver);
    expect(created(reopened.statements)).toEqual([]);
    expect(lazyRows(reopened.driver, 'SELECT name FROM flue_timers')).toEqual([{ name: 'n' }]);
  });

  it('adds what a stamped store misses, the settlement column of an older ledger included', () => {
    const db = new DatabaseSync(':memory:');
    db.exec(`CREATE TABLE flue_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO flue_meta VALUES ('format_version', '1')`);
    db.exec(`CREATE TABLE flue_submissions (id TEXT NOT NULL PRIMARY KEY, ord INTEGER NOT NULL, stream TEXT NOT NULL, kind TEXT NOT NULL,
      payload TEXT NOT NULL, accepted_at TEXT NOT NULL, status TEXT NOT NULL, settled_at INTEGER) WITHOUT ROWID`);
    migrate(recorded(db).driver);
    expect(objects(db)).toEqual(['flue_batches', 'flue_meta', 'flue_streams', 'flue_submissions', 'flue_submissions_open']);
    expect(String(db.prepare(`SELECT sql FROM sqlite_master WHERE name = 'flue_submissions'`).get()!.sql)).toMatch(/settlement TEXT/);
  });

  it('keeps a format-1 store in format 1: its log stays in flue_batches, and what it misses is made in that format', () => {
    const db = new DatabaseSync(':memory:');
    db.exec(`CREATE TABLE flue_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO flue_meta VALUES ('format_version', '1')`);
    const { driver, statements } = recorded(db);
    expect(migrate(driver)).toBe(false);
    expect(objects(db)).toEqual(['flue_batches', 'flue_meta', 'flue_streams', 'flue_submissions', 'flue_submissions_open']);
    expect(String(db.prepare(`SELECT sql FROM sqlite_master WHERE name = 'flue_streams'`).get()!.sql)).not.toMatch(/\blog\b/);
    expect(db.prepare(`SELECT value FROM flue_meta WHERE key = 'format_version'`).get()).toEqual({ value: '1' });
    expect(created(statements).some((sql) => /flue_log/.test(sql))).toBe(false);
  });

  it('refuses flue tables without a stamp, and another stamp, before writing anything', () => {
    const unversioned = recorded();
    unversioned.db.exec('CREATE TABLE flue_batches (x INTEGER)');
    expect(() => migrate(unversioned.driver)).toThrow(PersistedFormatVersionError);
    expect(objects(unversioned.db)).toEqual(['flue_batches']);
    const other = recorded();
    other.db.exec(
      `CREATE TABLE flue_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO flue_meta VALUES ('format_version', '6')`,
    );
    expect(() => migrate(other.driver)).toThrow(expect.objectContaining({ meta: { storedVersion: '6', supportedVersion: '5' } }));
    expect(objects(other.db)).toEqual(['flue_meta']);
  });
});

describe('tables made by their first write', () => {
  it('read as no rows, and updates and deletes find nothing, until the first write makes the table with its index', () => {
    const { db, driver } = recorded();
    migrate(driver);
    expect(lazyRows(driver, 'SELECT min(due_at) AS due FROM flue_timers')).toEqual([]);
    expect(lazyRows(driver, `DELETE FROM flue_timers WHERE stream = 's'`)).toEqual([]);
    expect(lazyRows(driver, `UPDATE flue_sandbox_files SET mtime = 1`)).toEqual([]);
    expect(objects(db)).not.toContain('flue_timers');
    lazyWrite(driver, `INSERT INTO flue_timers (stream, name, id, due_at, body) VALUES ('s', 'n', 'i', 5, '{}')`);
    expect(objects(db)).toEqual(expect.arrayContaining(['flue_timers', 'flue_timers_due']));
    expect(lazyRows(driver, 'SELECT min(due_at) AS due FROM flue_timers')).toEqual([{ due: 5 }]);
    // lazyUpdate, what the store changes rows with: nothing to do without the table, its rows changed with it,
    // and any other failure is the caller's.
    lazyUpdate(driver, `UPDATE flue_submissions SET continuation = 1`);
    lazyUpdate(driver, `UPDATE flue_timers SET due_at = 6 WHERE name = 'n'`);
    expect(lazyRows(driver, 'SELECT min(due_at) AS due FROM flue_timers')).toEqual([{ due: 6 }]);
    expect(() => lazyUpdate(driver, `UPDATE flue_timers SET nope = 1`)).toThrow(/no such column/);
    expect(objects(db)).not.toContain('flue_submissions');
  });

  it('a write rolled back leaves no table, and the next write makes it again', () => {
    const { db, driver } = recorded();
    migrate(driver);
    expect(() =>
      driver.transaction(() => {
        lazyWrite(driver, `INSERT INTO flue_state (stream, name, value) VALUES ('s', 'n', '1')`);
        throw new Error('the batch failed');
      }),
    ).toThrow('the batch failed');
    expect(objects(db)).not.toContain('flue_state');
    lazyWrite(driver, `INSERT INTO flue_state (stream, name, value) VALUES ('s', 'n', '2')`);
    expect(lazyRows(driver, 'SELECT value FROM flue_state')).toEqual([{ value: '2' }]);
  });

  it("a database's only writer that knows its tables asks SQLite nothing about a table it lacks, and makes it with its first write", () => {
    const { db, driver, statements } = recorded();
    migrate(driver);
    knowTables(driver, schemaObjects(driver));
    statements.length = 0;
    expect(lazyRows(driver, 'SELECT min(due_at) AS due FROM flue_timers')).toEqual([]);
    lazyUpdate(driver, `DELETE FROM flue_timers WHERE stream = 's'`);
    expect(lazyRows(driver, 'SELECT * FROM flue_submissions WHERE settled_at IS NULL')).toEqual([]);
    expect(statements).toEqual([]);
    lazyWrite(driver, `INSERT INTO flue_timers (stream, name, id, due_at, body) VALUES ('s', 'n', 'i', 5, '{}')`);
    expect(objects(db)).toEqual(expect.arrayContaining(['flue_timers', 'flue_timers_due']));
    expect(lazyRows(driver, 'SELECT min(due_at) AS due FROM flue_timers')).toEqual([{ due: 5 }]);
    // A making rolled back: the table is absent again, which the statements find out and handle.
    expect(() =>
      driver.transaction(() => {
        lazyWrite(driver, `INSERT INTO flue_state (stream, name, value) VALUES ('s', 'n', '1')`);
        throw new Error('the batch failed');
      }),
    ).toThrow('the batch failed');
    expect(lazyRows(driver, 'SELECT value FROM flue_state')).toEqual([]);
    lazyWrite(driver, `INSERT INTO flue_state (stream, name, value) VALUES ('s', 'n', '2')`);
    expect(lazyRows(driver, 'SELECT value FROM flue_state')).toEqual([{ value: '2' }]);
    // Tables it holds are asked as ever.
    statements.length = 0;
    expect(lazyRows(driver, 'SELECT value FROM flue_state')).toEqual([{ value: '2' }]);
    expect(statements).toEqual(['SELECT value FROM flue_state']);
  });

  it('any other failure is thrown: a missing table that is not made lazily, a bad statement', () => {
    const { driver } = recorded();
    migrate(driver);
    expect(() => lazyRows(driver, 'SELECT * FROM flue_nothing')).toThrow(/no such table: flue_nothing/);
    expect(() => lazyWrite(driver, 'INSERT INTO flue_nothing VALUES (1)')).toThrow(/no such table: flue_nothing/);
    expect(() => lazyRows(driver, 'SELEKT 1 FROM flue_state')).toThrow(/syntax error/);
  });
});
