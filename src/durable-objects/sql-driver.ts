/** Durable Object SQLite as a `SqlDriver`: the same store code as node:sqlite (Decision 1). */
import type { SqlDriver, SqlRow, SqlValue } from '../runtime/sql-store.ts';

export function durableObjectSqlDriver(storage: DurableObjectStorage): SqlDriver {
  const sql = storage.sql;
  return {
    query: (query: string, ...params: SqlValue[]) => sql.exec(query, ...params).toArray() as SqlRow[],
    run: (query: string, ...params: SqlValue[]) => {
      sql.exec(query, ...params).toArray();
    },
    transaction: <T>(fn: () => T): T => storage.transactionSync(fn),
  };
}
