/**
 * The persistence adapter contract. It lives here, free of `node:*`
 * imports, so `@flue/runtime` can export the type on every target; `sqlite()` in
 * `@flue/runtime/node` is one implementation.
 */
import type { SqlDriver } from './sql-store.ts';

export interface PersistenceAdapter {
  /** Creates or verifies the schema and its format-version stamp. */
  migrate(): void | Promise<void>;
  connect(): SqlDriver | Promise<SqlDriver>;
  close(): void | Promise<void>;
}
