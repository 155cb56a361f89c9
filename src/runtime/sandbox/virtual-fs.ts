/**
 * The in-memory filesystem behind `virtualSandbox` (sandbox.md §5): a tree of directory and file
 * nodes living in isolate memory, with byte limits so a runaway agent cannot exhaust the isolate.
 * Paths given here are absolute (callers resolve first); error messages follow Node's wording
 * because they reach the model verbatim as tool errors.
 */
import { basename, dirname, resolvePath } from './paths.ts';
import type { FileStat } from './types.ts';

interface FileNode {
  kind: 'file';
  data: Uint8Array;
  mtime: Date;
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

  constructor(limits: VirtualFsLimits = {}) {
    this.maxFileBytes = limits.maxFileBytes ?? 10 * 1024 * 1024;
    this.maxTotalBytes = limits.maxTotalBytes ?? 64 * 1024 * 1024;
  }

  lookup(path: string): VNode | undefined {
    let node: VNode = this.root;
    for (const segment of segments(path)) {
      if (node.kind !== 'dir') return undefined;
      const next = node.children.get(segment);
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
    if (data.byteLength > this.maxFileBytes) throw new VirtualFsError('EFBIG', `file too large (limit ${this.maxFileBytes} bytes)`, 'write', path);
    const previous = existing?.kind === 'file' ? existing.data.byteLength : 0;
    if (this.totalBytes - previous + data.byteLength > this.maxTotalBytes) {
      throw new VirtualFsError('ENOSPC', `no space left on device (limit ${this.maxTotalBytes} bytes)`, 'write', path);
    }
    // Copy so later mutation of the caller's buffer cannot change the stored file.
    parent.children.set(name, { kind: 'file', data: data.slice(), mtime: new Date() });
    this.totalBytes += data.byteLength - previous;
    parent.mtime = new Date();
  }

  touch(path: string): void {
    const node = this.lookup(path);
    if (node) node.mtime = new Date();
    else this.writeFile(path, new Uint8Array());
  }

  mkdir(path: string, recursive = false): void {
    const existing = this.lookup(path);
    if (existing) {
      if (recursive && existing.kind === 'dir') return;
      throw new VirtualFsError('EEXIST', 'file already exists', 'mkdir', path);
    }
    if (recursive) {
      let node: DirNode = this.root;
      for (const segment of segments(path)) {
        const next = node.children.get(segment);
        if (next?.kind === 'file') throw new VirtualFsError('ENOTDIR', 'not a directory', 'mkdir', path);
        if (next) node = next;
        else {
          const created: DirNode = { kind: 'dir', children: new Map(), mtime: new Date() };
          node.children.set(segment, created);
          node = created;
        }
      }
      return;
    }
    const parent = this.parentDir(path, 'mkdir');
    parent.children.set(basename(path), { kind: 'dir', children: new Map(), mtime: new Date() });
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
      size: node.kind === 'file' ? node.data.byteLength : node.children.size,
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
    if (node.kind === 'dir' && !options.recursive) throw new VirtualFsError('EISDIR', 'is a directory (use recursive to remove it)', 'rm', path);
    if (path === '/' || segments(path).length === 0) {
      this.totalBytes = 0;
      (node as DirNode).children.clear();
      return;
    }
    this.totalBytes -= bytesIn(node);
    const parent = this.lookup(dirname(path)) as DirNode;
    parent.children.delete(basename(path));
    parent.mtime = new Date();
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
    const parent = this.parentDir(to, 'rename');
    const target = parent.children.get(basename(to));
    if (target?.kind === 'dir' && node.kind === 'file') throw new VirtualFsError('EISDIR', 'illegal operation on a directory', 'rename', to);
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
  if (node.kind === 'file') return node.data.byteLength;
  let total = 0;
  for (const child of node.children.values()) total += bytesIn(child);
  return total;
}
