/** Durable Object SQLite as a `SqlDriver`: the same store code as node:sqlite. */
import { type SqlDriver, type SqlRow, type SqlValue, guardStatement } from '../runtime/store/sql-store.ts';

export function durableObjectSqlDriver(storage: DurableObjectStorage): SqlDriver {
  const sql = storage.sql;
  return {
    query: (query: string, ...params: SqlValue[]) => {
      guardStatement(query, params);
      return sql.exec(query, ...params.map(bindable)).toArray() as SqlRow[];
    },
    run: (query: string, ...params: SqlValue[]) => {
      guardStatement(query, params);
      sql.exec(query, ...params.map(bindable)).toArray();
    },
    transaction: <T>(fn: () => T): T => storage.transactionSync(fn),
  };
}

/** Durable Object SQL binds BLOBs as ArrayBuffer. */
function bindable(value: SqlValue): string | number | null | ArrayBuffer {
  if (!(value instanceof Uint8Array)) return value;
  return value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength) as ArrayBuffer;
}
