/**
 * Loaded with `--import` into a side-by-side child by side-by-side-statements.ts: counts every
 * statement node:sqlite runs (prepared statements by their SQL, `exec()` calls as `EXEC <sql>`)
 * and writes the counts as JSON to the file named by FLUE_BENCH_STATEMENTS when the process exits.
 */
import { writeFileSync } from 'node:fs';
import { DatabaseSync, type StatementSync } from 'node:sqlite';

const counts = new Map<string, number>();
const count = (sql: string) => {
  const key = sql.replace(/\s+/g, ' ').trim();
  counts.set(key, (counts.get(key) ?? 0) + 1);
};

const prepare = DatabaseSync.prototype.prepare;
DatabaseSync.prototype.prepare = function (this: DatabaseSync, sql: string): StatementSync {
  const statement = prepare.call(this, sql);
  for (const method of ['all', 'get', 'run', 'iterate'] as const) {
    const run = statement[method] as (...params: unknown[]) => unknown;
    (statement as unknown as Record<string, unknown>)[method] = (...params: unknown[]) => {
      count(sql);
      return run.apply(statement, params);
    };
  }
  return statement;
};
const exec = DatabaseSync.prototype.exec;
DatabaseSync.prototype.exec = function (this: DatabaseSync, sql: string): void {
  count(`EXEC ${sql}`);
  exec.call(this, sql);
};

process.on('exit', () => {
  const out = process.env.FLUE_BENCH_STATEMENTS;
  if (out !== undefined) writeFileSync(out, JSON.stringify([...counts]));
});
