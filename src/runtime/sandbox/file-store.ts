/**
 * Durable backing for `virtualSandbox()` (ours; README "Sandboxes"): the host hands the factory a
 * `SandboxFileStore` for the conversation, keyed in the conversation's own SQLite (a Durable
 * Object's database on Cloudflare, the `start({ db })` store on Node). The in-memory tree stays the
 * working copy: entries (without contents) are listed once when the sandbox is created, contents
 * load on first read and stay cached for the attempt, and every mutation is written through before
 * the in-memory tree changes, so a crash never leaves memory ahead of the store.
 *
 * Paths are absolute and normalized; a directory's descendants are the paths under `<dir>/`.
 */

export interface StoredSandboxEntry {
  path: string;
  kind: 'file' | 'dir';
  /** Bytes for files; 0 for directories. */
  size: number;
  /** Epoch milliseconds. */
  mtime: number;
}

export interface SandboxFileStore {
  /** Every stored entry without contents, or undefined when this sandbox was never created. */
  list(): StoredSandboxEntry[] | undefined;
  /** The contents of a stored file. */
  read(path: string): Uint8Array;
  /** Runs several writes atomically. */
  transaction<T>(fn: () => T): T;
  /** Creates or replaces a file. */
  putFile(path: string, data: Uint8Array, mtime: number): void;
  /** Creates a directory entry (the root `/` marks the sandbox as created). */
  putDir(path: string, mtime: number): void;
  setMtime(path: string, mtime: number): void;
  /** Removes an entry and everything under it; removing `/` empties the tree but keeps the root. */
  remove(path: string): void;
  /** Moves an entry and everything under it; whatever was at `to` must have been removed first. */
  move(from: string, to: string): void;
}

/**
 * How the host passes the store to a factory: a symbol-keyed member of `createSandbox`'s options,
 * so user factories that forward their options to `virtualSandbox()` keep the persistence.
 */
export const SANDBOX_FILE_STORE: unique symbol = Symbol.for('flue.sandbox.fileStore');

export interface CreateSandboxHostOptions {
  id: string;
  [SANDBOX_FILE_STORE]?: SandboxFileStore;
}
