/**
 * Reading a Flue store's SQLite file from outside, as the tests inspect it: tables an agent never
 * wrote (state, steps, timers, large values, ...) are made by their first write, so one that does
 * not exist yet reads as no rows, as the store itself reads it (`lazyRows`).
 */
import type { DatabaseSync } from 'node:sqlite';
import type { SqlRow, SqlValue } from '../../src/runtime/store/sql-driver.ts';
import { lazyRows } from '../../src/runtime/store/schema.ts';

export function storeRows(db: DatabaseSync, sql: string, ...params: SqlValue[]): SqlRow[] {
  const reader = {
    query: (query: string, ...bound: SqlValue[]) => db.prepare(query).all(...bound) as SqlRow[],
    run: () => {
      throw new Error('storeRows only reads');
    },
    transaction: <T>(fn: () => T) => fn(),
  };
  return lazyRows(reader, sql, ...params);
}
