/**
 * Reading a Flue store's SQLite file from outside, as the tests inspect it: tables an agent never
 * wrote (state, steps, timers, large values, ...) are made by their first write, so a table that
 * does not exist yet reads as no rows.
 */
import type { DatabaseSync, SQLInputValue } from 'node:sqlite';

export function storeRows(db: DatabaseSync, sql: string, ...params: SQLInputValue[]): Record<string, unknown>[] {
  try {
    return db.prepare(sql).all(...params);
  } catch (error) {
    if (/no such table: flue_/.test((error as Error).message)) return [];
    throw error;
  }
}
