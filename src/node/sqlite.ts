/**
 * `sqlite(path?)`: the Node persistence adapter over the built-in `node:sqlite`. The same schema
 * and store serve Durable Object SQLite; this file only adapts `DatabaseSync` to `SqlDriver`.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { type SqlDriver, type SqlRow, type SqlValue, guardStatement, migrate } from '../runtime/store/sql-store.ts';

import type { PersistenceAdapter } from '../runtime/store/persistence.ts';

export type { PersistenceAdapter };

class NodeSqliteDriver implements SqlDriver {
  private readonly db: DatabaseSync;
  private readonly statements = new Map<string, StatementSync>();
  private depth = 0;

  constructor(db: DatabaseSync) {
    this.db = db;
  }

  private prepare(sql: string): StatementSync {
    let statement = this.statements.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  query(sql: string, ...params: SqlValue[]): SqlRow[] {
    guardStatement(sql, params);
    return this.prepare(sql).all(...params) as SqlRow[];
  }

  run(sql: string, ...params: SqlValue[]): void {
    guardStatement(sql, params);
    this.prepare(sql).run(...params);
  }

  script(sql: string): void {
    this.db.exec(sql);
  }

  transaction<T>(fn: () => T): T {
    if (this.depth > 0) return fn();
    this.db.exec('BEGIN IMMEDIATE');
    this.depth++;
    try {
      const result = fn();
      this.db.exec('COMMIT');
      return result;
    } catch (error) {
      this.db.exec('ROLLBACK');
      throw error;
    } finally {
      this.depth--;
    }
  }
}

/**
 * How long a statement waits for a lock another connection holds before failing with "database is
 * locked". Without it, any other connection to the file fails our writes at once: a restarted
 * process rebuilding the WAL index after a crash, a backup, the sqlite3 shell. The driver is
 * synchronous, so a wait blocks this process; locks are held for one transaction at a time.
 */
const BUSY_TIMEOUT_MS = 5_000;

/**
 * `node:sqlite` without the "SQLite is an experimental feature" warning Node 22 prints when it
 * loads: the store is the runtime's choice, not the application's, so the warning would only be
 * noise in every start's output and test run (and printing it costs a cold start about 3 ms).
 * Node emits it synchronously as the module loads; every other warning passes through.
 */
function loadNodeSqlite(): typeof import('node:sqlite') {
  const emitWarning = process.emitWarning;
  process.emitWarning = function (this: NodeJS.Process, warning: string | Error, ...rest: unknown[]): void {
    const text = typeof warning === 'string' ? warning : warning?.message;
    if (typeof text === 'string' && text.startsWith('SQLite is an experimental feature')) return;
    Reflect.apply(emitWarning, this, [warning, ...rest]);
  } as typeof process.emitWarning;
  let loaded: typeof import('node:sqlite') | undefined;
  try {
    loaded = process.getBuiltinModule?.('node:sqlite') as typeof import('node:sqlite') | undefined;
  } finally {
    process.emitWarning = emitWarning;
  }
  // An older Node (often the machine's own, where a project's scripts run the node@22 it installs).
  if (loaded === undefined) {
    throw new Error(`[flue] sqlite() needs Node.js 22.19 or newer, where node:sqlite is built in (this is ${process.version}).`);
  }
  return loaded;
}

export function sqlite(path: string = ':memory:'): PersistenceAdapter {
  let db: DatabaseSync | undefined;
  const open = (): DatabaseSync => {
    if (db !== undefined) return db;
    // Loaded when a database opens, not with the module: `@flue/runtime` and `@flue/runtime/node`
    // share their files, and a process that opens no database needs none of it. Before the
    // folder is made: a Node that cannot open the database leaves nothing behind.
    const { DatabaseSync } = loadNodeSqlite();
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    db = new DatabaseSync(path, { timeout: BUSY_TIMEOUT_MS });
    if (path !== ':memory:') db.exec('PRAGMA journal_mode = WAL');
    // WAL with NORMAL sync survives a killed process; only power loss could drop the last commits.
    db.exec('PRAGMA synchronous = NORMAL');
    return db;
  };
  return {
    migrate() {
      const driver = new NodeSqliteDriver(open());
      driver.transaction(() => migrate(driver));
    },
    connect() {
      return new NodeSqliteDriver(open());
    },
    close() {
      db?.close();
      db = undefined;
    },
  };
}
