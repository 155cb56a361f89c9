/**
 * The in-memory filesystem behind `virtualSandbox`: a tree of directory and file
 * nodes living in isolate memory, with byte limits so a runaway agent cannot exhaust the isolate.
 * Paths given here are absolute (callers resolve first); error messages follow Node's wording
 * because they reach the model verbatim as tool errors.
 *
 * With a `SandboxFileStore` the tree is the working copy of a durable one: `loadStored()` lists
 * the stored entries (contents load lazily, on first read), and every mutation is written through
 * to the store before the tree changes.
 */
import type { SandboxFileStore } from './file-store.ts';
import { basename, dirname, resolvePath } from './paths.ts';
import type { FileStat } from './types.ts';

/** A file; its contents may still be in the store (loaded on first access, then cached). */
class FileNode {
  readonly kind = 'file' as const;
  readonly size: number;
  mtime: Date;
  private bytes: Uint8Array | undefined;
  private load: (() => Uint8Array) | undefined;

  constructor(size: number, mtime: Date, bytes: Uint8Array | undefined, load?: () => Uint8Array) {
    this.size = size;
    this.mtime = mtime;
    this.bytes = bytes;
    this.load = load;
  }

  get data(): Uint8Array {
    if (this.bytes === undefined) {
      this.bytes = this.load!();
      this.load = undefined;
    }
    return this.bytes;
  }
}
interface DirNode {
  kind: 'dir';
  children: Map<string, VNode>;
  mtime: Date;
}
export type VNode = FileNode | DirNode;

export interface VirtualFsLimits {
  maxFileBytes?: number;
  maxTotalBytes?: number;
}

export class VirtualFsError extends Error {
  readonly code: string;
  constructor(code: string, description: string, syscall: string, path: string) {
    super(`${code}: ${description}, ${syscall} '${path}'`);
    this.name = 'Error';
    this.code = code;
  }
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function toBytes(content: string | Uint8Array): Uint8Array {
  return typeof content === 'string' ? encoder.encode(content) : content;
}
export function toText(data: Uint8Array): string {
  return decoder.decode(data);
}

export class VirtualFs {
  private readonly root: DirNode = { kind: 'dir', children: new Map(), mtime: new Date() };
  private totalBytes = 0;
  private readonly maxFileBytes: number;
  private readonly maxTotalBytes: number;
  private readonly store: SandboxFileStore | undefined;

  constructor(limits: VirtualFsLimits = {}, store?: SandboxFileStore) {
    this.maxFileBytes = limits.maxFileBytes ?? 10 * 1024 * 1024;
    this.maxTotalBytes = limits.maxTotalBytes ?? 64 * 1024 * 1024;
    this.store = store;
  }

  /**
   * Loads the stored tree (entries only; contents on first read). False when there is no store or
   * it holds no sandbox yet: the caller then writes the initial tree inside `create`.
   */
  loadStored(): boolean {
    const store = this.store;
    const entries = store?.list();
    if (store === undefined || entries === undefined) return false;
    for (const entry of entries) {
      const mtime = new Date(entry.mtime);
      if (entry.path === '/') {
        this.root.mtime = mtime;
        continue;
      }
      const parent = this.ensureLoadedDir(dirname(entry.path));
      const name = basename(entry.path);
      if (entry.kind === 'dir') {
        const existing = parent.children.get(name);
        if (existing?.kind === 'dir') existing.mtime = mtime;
        else parent.children.set(name, { kind: 'dir', children: new Map(), mtime });
        continue;
      }
      const path = entry.path;
      parent.children.set(name, new FileNode(entry.size, mtime, undefined, () => store.read(path)));
      this.totalBytes += entry.size;
    }
    return true;
  }

  /** Creates the stored sandbox (its root marker) and runs `seed` in the same transaction. */
  create(seed: () => void): void {
    if (this.store === undefined) {
      seed();
      return;
    }
    const store = this.store;
    store.transaction(() => {
      store.putDir('/', this.root.mtime.getTime());
      seed();
    });
  }

  lookup(path: string): VNode | undefined {
    let node: VNode = this.root;
    for (const segment of segments(path)) {
      if (node.kind !== 'dir') return undefined;
      const next: VNode | undefined = node.children.get(segment);
      if (!next) return undefined;
      node = next;
    }
    return node;
  }

  exists(path: string): boolean {
    return this.lookup(path) !== undefined;
  }

  readFile(path: string): Uint8Array {
    const node = this.lookup(path);
    if (!node) throw new VirtualFsError('ENOENT', 'no such file or directory', 'open', path);
    if (node.kind === 'dir') throw new VirtualFsError('EISDIR', 'illegal operation on a directory', 'read', path);
    return node.data;
  }

  writeFile(path: string, content: string | Uint8Array): void {
    const data = toBytes(content);
    const parent = this.parentDir(path, 'open');
    const name = basename(path);
    if (name === '') throw new VirtualFsError('EISDIR', 'illegal operation on a directory', 'open', path);
    const existing = parent.children.get(name);
    if (existing?.kind === 'dir') throw new VirtualFsError('EISDIR', 'illegal operation on a directory', 'open', path);
    if (data.byteLength > this.maxFileBytes)
      throw new VirtualFsError('EFBIG', `file too large (limit ${this.maxFileBytes} bytes)`, 'write', path);
    const previous = existing?.kind === 'file' ? existing.size : 0;
    if (this.totalBytes - previous + data.byteLength > this.maxTotalBytes) {
      throw new VirtualFsError('ENOSPC', `no space left on device (limit ${this.maxTotalBytes} bytes)`, 'write', path);
    }
    // Copy so later mutation of the caller's buffer cannot change the stored file.
    const copy = data.slice();
    const now = new Date();
    // A directory's mtime changes when an entry is added or removed, not when a file is rewritten.
    this.persist((store) => {
      store.putFile(path, copy, now.getTime());
      if (existing === undefined) store.setMtime(dirname(path), now.getTime());
    });
    parent.children.set(name, new FileNode(copy.byteLength, now, copy));
    this.totalBytes += copy.byteLength - previous;
    if (existing === undefined) parent.mtime = now;
  }

  touch(path: string): void {
    const node = this.lookup(path);
    if (!node) {
      this.writeFile(path, new Uint8Array());
      return;
    }
    const now = new Date();
    this.persist((store) => store.setMtime(path, now.getTime()));
    node.mtime = now;
  }

  mkdir(path: string, recursive = false): void {
    const existing = this.lookup(path);
    if (existing) {
      if (recursive && existing.kind === 'dir') return;
      throw new VirtualFsError('EEXIST', 'file already exists', 'mkdir', path);
    }
    const now = new Date();
    if (recursive) {
      // Find the deepest existing ancestor first, so a failure changes nothing.
      let node: DirNode = this.root;
      let prefix = '';
      const parts = segments(path);
      let i = 0;
      for (; i < parts.length; i++) {
        const next = node.children.get(parts[i]!);
        if (next === undefined) break;
        if (next.kind === 'file') throw new VirtualFsError('ENOTDIR', 'not a directory', 'mkdir', path);
        node = next;
        prefix += `/${parts[i]}`;
      }
      const missing = parts.slice(i);
      this.persist((store) => {
        let at = prefix;
        for (const part of missing) {
          at += `/${part}`;
          store.putDir(at, now.getTime());
        }
        store.setMtime(prefix === '' ? '/' : prefix, now.getTime());
      });
      node.mtime = now;
      for (const part of missing) {
        const created: DirNode = { kind: 'dir', children: new Map(), mtime: now };
        node.children.set(part, created);
        node = created;
      }
      return;
    }
    const parent = this.parentDir(path, 'mkdir');
    this.persist((store) => {
      store.putDir(path, now.getTime());
      store.setMtime(dirname(path), now.getTime());
    });
    parent.children.set(basename(path), { kind: 'dir', children: new Map(), mtime: now });
    parent.mtime = now;
  }

  readdir(path: string): string[] {
    const node = this.lookup(path);
    if (!node) throw new VirtualFsError('ENOENT', 'no such file or directory', 'scandir', path);
    if (node.kind !== 'dir') throw new VirtualFsError('ENOTDIR', 'not a directory', 'scandir', path);
    return [...node.children.keys()].sort();
  }

  stat(path: string): FileStat {
    const node = this.lookup(path);
    if (!node) throw new VirtualFsError('ENOENT', 'no such file or directory', 'stat', path);
    return {
      isFile: node.kind === 'file',
      isDirectory: node.kind === 'dir',
      isSymbolicLink: false,
      size: node.kind === 'file' ? node.size : node.children.size,
      mtime: node.mtime,
    };
  }

  /** Node `fs.rm` semantics: missing → ENOENT unless `force`; a directory needs `recursive`. */
  rm(path: string, options: { recursive?: boolean; force?: boolean } = {}): void {
    const node = this.lookup(path);
    if (!node) {
      if (options.force) return;
      throw new VirtualFsError('ENOENT', 'no such file or directory', 'rm', path);
    }
    if (node.kind === 'dir' && !options.recursive)
      throw new VirtualFsError('EISDIR', 'is a directory (use recursive to remove it)', 'rm', path);
    if (path === '/' || segments(path).length === 0) {
      this.persist((store) => store.remove('/'));
      this.totalBytes = 0;
      (node as DirNode).children.clear();
      return;
    }
    const now = new Date();
    const parentPath = dirname(path);
    this.persist((store) => {
      store.remove(path);
      store.setMtime(parentPath, now.getTime());
    });
    this.totalBytes -= bytesIn(node);
    const parent = this.lookup(parentPath) as DirNode;
    parent.children.delete(basename(path));
    parent.mtime = now;
  }

  rmdir(path: string): void {
    const node = this.lookup(path);
    if (!node) throw new VirtualFsError('ENOENT', 'no such file or directory', 'rmdir', path);
    if (node.kind !== 'dir') throw new VirtualFsError('ENOTDIR', 'not a directory', 'rmdir', path);
    if (node.children.size > 0) throw new VirtualFsError('ENOTEMPTY', 'directory not empty', 'rmdir', path);
    this.rm(path, { recursive: true });
  }

  /** Moves a node; the destination (if any) is replaced. Moving a directory into itself fails. */
  rename(from: string, to: string): void {
    const node = this.lookup(from);
    if (!node) throw new VirtualFsError('ENOENT', 'no such file or directory', 'rename', from);
    if (to === from) return;
    if (to.startsWith(`${from}/`)) throw new VirtualFsError('EINVAL', 'cannot move a directory into itself', 'rename', to);
    if (to === '/' || from.startsWith(`${to}/`)) throw new VirtualFsError('ENOTEMPTY', 'directory not empty', 'rename', to);
    const parent = this.parentDir(to, 'rename');
    const target = parent.children.get(basename(to));
    if (target?.kind === 'dir' && node.kind === 'file')
      throw new VirtualFsError('EISDIR', 'illegal operation on a directory', 'rename', to);
    if (this.store !== undefined) {
      // Lazily loaded contents are keyed by their old paths: load them before the paths change.
      materialize(node);
      this.persist((store) => {
        if (target) store.remove(to);
        store.move(from, to);
      });
    }
    if (target) this.totalBytes -= bytesIn(target);
    (this.lookup(dirname(from)) as DirNode).children.delete(basename(from));
    parent.children.set(basename(to), node);
  }

  /** Deep copy of a subtree to `to`, respecting the byte limits. */
  copy(from: string, to: string): void {
    const node = this.lookup(from);
    if (!node) throw new VirtualFsError('ENOENT', 'no such file or directory', 'copyfile', from);
    if (to === from || to.startsWith(`${from}/`)) throw new VirtualFsError('EINVAL', 'cannot copy a directory into itself', 'copyfile', to);
    if (node.kind === 'file') {
      this.writeFile(to, node.data);
      return;
    }
    this.mkdir(to, true);
    for (const name of [...node.children.keys()]) this.copy(`${from === '/' ? '' : from}/${name}`, `${to === '/' ? '' : to}/${name}`);
  }

  private persist(write: (store: SandboxFileStore) => void): void {
    const store = this.store;
    if (store !== undefined) store.transaction(() => write(store));
  }

  /** While loading: the directory at `path`, creating missing ones in memory only. */
  private ensureLoadedDir(path: string): DirNode {
    let node: DirNode = this.root;
    for (const segment of segments(path)) {
      let next = node.children.get(segment);
      if (next?.kind !== 'dir') {
        next = { kind: 'dir', children: new Map(), mtime: node.mtime };
        node.children.set(segment, next);
      }
      node = next;
    }
    return node;
  }

  private parentDir(path: string, syscall: string): DirNode {
    const parent = this.lookup(dirname(path));
    if (!parent) throw new VirtualFsError('ENOENT', 'no such file or directory', syscall, path);
    if (parent.kind !== 'dir') throw new VirtualFsError('ENOTDIR', 'not a directory', syscall, path);
    return parent;
  }
}

function segments(path: string): string[] {
  return resolvePath('/', path).split('/').filter(Boolean);
}

function bytesIn(node: VNode): number {
  if (node.kind === 'file') return node.size;
  let total = 0;
  for (const child of node.children.values()) total += bytesIn(child);
  return total;
}

function materialize(node: VNode): void {
  if (node.kind === 'file') void node.data;
  else for (const child of node.children.values()) materialize(child);
}
