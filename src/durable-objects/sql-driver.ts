/** Durable Object SQLite as a `SqlDriver`: the same store code as node:sqlite. */
import { type SqlDriver, type SqlRow, type SqlValue, guardStatement } from '../runtime/store/sql-store.ts';

/** `onRowsWritten` hears each statement's rows written, once its cursor is consumed (the object's meter). */
export function durableObjectSqlDriver(storage: DurableObjectStorage, onRowsWritten?: (rows: number) => void): SqlDriver {
  const sql = storage.sql;
  const exec = (query: string, params: SqlValue[]): SqlRow[] => {
    guardStatement(query, params);
    const cursor = sql.exec(query, ...params.map(bindable));
    const rows = cursor.toArray() as SqlRow[];
    if (cursor.rowsWritten > 0) onRowsWritten?.(cursor.rowsWritten);
    return rows;
  };
  return {
    query: (query: string, ...params: SqlValue[]) => exec(query, params),
    run: (query: string, ...params: SqlValue[]) => {
      exec(query, params);
    },
    transaction: <T>(fn: () => T): T => storage.transactionSync(fn),
    // Durable Object SQLite runs every statement of a multi-statement query (and meters its rows).
    script: (statements: string) => {
      exec(statements, []);
    },
  };
}

/** Durable Object SQL binds BLOBs as ArrayBuffer. */
function bindable(value: SqlValue): string | number | null | ArrayBuffer {
  if (!(value instanceof Uint8Array)) return value;
  return value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength) as ArrayBuffer;
}
