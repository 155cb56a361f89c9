/**
 * The conversation's `virtualSandbox()` files in the store's SQLite (its tables are made by the
 * first write, schema.ts): one row per file or directory, keyed (stream, path). Contents up to
 * 1 MiB sit in the row itself; larger files are split into 1 MiB chunks (Durable Object SQLite
 * caps a value at 2 MB). A write is one row (plus its chunks), a rename one UPDATE per table.
 */
import type { ConversationKey } from './conversation-key.ts';
import type { SandboxFileStore, StoredSandboxEntry } from '../sandbox/file-store.ts';
import type { SqlDriver, SqlValue } from './sql-driver.ts';
import { lazyRows, lazyUpdate, lazyWrite } from './schema.ts';

const CHUNK_BYTES = 1024 * 1024;
const FILE_MODE = 0o644;
const DIR_MODE = 0o755;

/** BLOBs come back as Uint8Array from node:sqlite and as ArrayBuffer from Durable Objects. */
function bytesOf(value: SqlValue | ArrayBuffer): Uint8Array {
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (value === null) return new Uint8Array();
  throw new TypeError('expected a BLOB value');
}

/** `path` and everything under it, as a range on the primary key (`/` sorts right before `0`). */
function subtree(path: string): { where: string; params: SqlValue[] } {
  if (path === '/') return { where: `path != '/'`, params: [] };
  return { where: '(path = ? OR (path >= ? AND path < ?))', params: [path, `${path}/`, `${path}0`] };
}

export class SqlSandboxFiles implements SandboxFileStore {
  private readonly driver: SqlDriver;
  private readonly key: ConversationKey;
  private depth = 0;

  constructor(driver: SqlDriver, key: ConversationKey) {
    this.driver = driver;
    this.key = key;
  }

  list(): StoredSandboxEntry[] | undefined {
    const rows = lazyRows(this.driver, 'SELECT path, kind, size, mtime FROM flue_sandbox_files WHERE stream = ? ORDER BY path', this.key);
    if (rows[0]?.path !== '/') return undefined;
    return rows.map((row) => ({
      path: String(row.path),
      kind: row.kind === 'dir' ? 'dir' : 'file',
      size: Number(row.size),
      mtime: Number(row.mtime),
    }));
  }

  read(path: string): Uint8Array {
    const row = lazyRows(
      this.driver,
      `SELECT data, size, chunks FROM flue_sandbox_files WHERE stream = ? AND path = ? AND kind = 'file'`,
      this.key,
      path,
    )[0];
    if (row === undefined) throw new Error(`[flue] The sandbox file ${path} is missing from the conversation's store.`);
    if (Number(row.chunks) === 0) return bytesOf(row.data ?? null);
    const bytes = new Uint8Array(Number(row.size));
    let offset = 0;
    for (const chunk of lazyRows(
      this.driver,
      'SELECT data FROM flue_sandbox_chunks WHERE stream = ? AND path = ? ORDER BY idx',
      this.key,
      path,
    )) {
      const part = bytesOf(chunk.data ?? null);
      bytes.set(part, offset);
      offset += part.length;
    }
    return bytes;
  }

  transaction<T>(fn: () => T): T {
    if (this.depth > 0) return fn();
    return this.driver.transaction(() => {
      this.depth++;
      try {
        return fn();
      } finally {
        this.depth--;
      }
    });
  }

  putFile(path: string, data: Uint8Array, mtime: number): void {
    const chunks = data.byteLength > CHUNK_BYTES ? Math.ceil(data.byteLength / CHUNK_BYTES) : 0;
    this.transaction(() => {
      lazyWrite(
        this.driver,
        `INSERT INTO flue_sandbox_files (stream, path, kind, mode, size, mtime, chunks, data) VALUES (?, ?, 'file', ?, ?, ?, ?, ?)
           ON CONFLICT (stream, path) DO UPDATE SET kind = 'file', size = excluded.size, mtime = excluded.mtime,
             chunks = excluded.chunks, data = excluded.data`,
        this.key,
        path,
        FILE_MODE,
        data.byteLength,
        mtime,
        chunks,
        chunks === 0 ? data : null,
      );
      lazyUpdate(this.driver, 'DELETE FROM flue_sandbox_chunks WHERE stream = ? AND path = ?', this.key, path);
      for (let idx = 0; idx < chunks; idx++) {
        lazyWrite(
          this.driver,
          'INSERT INTO flue_sandbox_chunks (stream, path, idx, data) VALUES (?, ?, ?, ?)',
          this.key,
          path,
          idx,
          data.subarray(idx * CHUNK_BYTES, (idx + 1) * CHUNK_BYTES),
        );
      }
    });
  }

  putDir(path: string, mtime: number): void {
    lazyWrite(
      this.driver,
      `INSERT INTO flue_sandbox_files (stream, path, kind, mode, size, mtime, chunks, data) VALUES (?, ?, 'dir', ?, 0, ?, 0, NULL)
         ON CONFLICT (stream, path) DO UPDATE SET mtime = excluded.mtime`,
      this.key,
      path,
      DIR_MODE,
      mtime,
    );
  }

  setMtime(path: string, mtime: number): void {
    lazyUpdate(this.driver, 'UPDATE flue_sandbox_files SET mtime = ? WHERE stream = ? AND path = ?', mtime, this.key, path);
  }

  remove(path: string): void {
    const { where, params } = subtree(path);
    this.transaction(() => {
      lazyUpdate(this.driver, `DELETE FROM flue_sandbox_files WHERE stream = ? AND ${where}`, this.key, ...params);
      lazyUpdate(this.driver, `DELETE FROM flue_sandbox_chunks WHERE stream = ? AND ${where}`, this.key, ...params);
    });
  }

  move(from: string, to: string): void {
    const { where, params } = subtree(from);
    this.transaction(() => {
      for (const table of ['flue_sandbox_files', 'flue_sandbox_chunks']) {
        lazyUpdate(
          this.driver,
          `UPDATE ${table} SET path = ? || substr(path, length(?) + 1) WHERE stream = ? AND ${where}`,
          to,
          from,
          this.key,
          ...params,
        );
      }
    });
  }
}
