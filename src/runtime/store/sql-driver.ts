/**
 * The synchronous SQL driver every store in the runtime writes through. Durable Object SQLite and
 * node:sqlite both fit it, so the same schema and statements serve both hosts; both drivers refuse
 * a statement Durable Object SQLite would refuse (`guardStatement`).
 */
import { utf8Size } from '../common/limits.ts';

export type SqlValue = string | number | null | Uint8Array;
export type SqlRow = Record<string, SqlValue>;

export interface SqlDriver {
  query(sql: string, ...params: SqlValue[]): SqlRow[];
  run(sql: string, ...params: SqlValue[]): void;
  transaction<T>(fn: () => T): T;
  /** Runs statements without parameters, separated by semicolons, in one call (a driver without it is given them one by one). */
  script?(sql: string): void;
}

/** What Durable Object SQLite accepts in one row, with headroom; both drivers enforce it. */
export const MAX_STATEMENT_BYTES = 2_000_000;

/** Thrown by a driver for a statement whose bound values would not fit one platform row. */
export class RowTooLargeError extends Error {
  constructor(table: string, bytes: number) {
    super(
      `[flue] A statement on ${table} binds ${bytes} bytes, over the ${MAX_STATEMENT_BYTES}-byte row limit of Durable Object SQLite. Large values must be chunked before they are written.`,
    );
    this.name = 'RowTooLargeError';
  }
}

/**
 * Refuses statements Durable Object SQLite would refuse, so local runs fail where production
 * would. Strings count as UTF-8; the length bound avoids encoding anything in the common case.
 */
export function guardStatement(sql: string, params: readonly SqlValue[]): void {
  let bound = 0;
  for (const param of params) {
    if (typeof param === 'string') bound += param.length * 3;
    else if (param instanceof Uint8Array) bound += param.byteLength;
    else bound += 8;
  }
  if (bound <= MAX_STATEMENT_BYTES) return;
  let exact = 0;
  for (const param of params) {
    if (typeof param === 'string') exact += utf8Size(param);
    else if (param instanceof Uint8Array) exact += param.byteLength;
    else exact += 8;
  }
  if (exact > MAX_STATEMENT_BYTES) throw new RowTooLargeError(statementTable(sql), exact);
}

function statementTable(sql: string): string {
  return /\b(?:INTO|UPDATE|FROM)\s+([A-Za-z_][A-Za-z0-9_]*)/i.exec(sql)?.[1] ?? 'an unknown table';
}
