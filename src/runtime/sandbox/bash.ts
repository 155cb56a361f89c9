/**
 * `bash(factory)` (sandbox.md §3.3): adapts any just-bash-compatible object (structurally; never
 * imported) into a `SandboxFactory`. `timeoutMs` becomes an abort signal merged with the caller's
 * so the engine stops work; the deadline itself resolves `exitCode: 124` promptly.
 */
import { sandboxFromDriver } from './from-driver.ts';
import type { BashLike, FileStat, SandboxDriver, SandboxFactory, ShellResult } from './types.ts';

export function bash(factory: () => BashLike | Promise<BashLike>): SandboxFactory {
  return {
    async createSandbox() {
      const engine = await factory();
      if (!isBashLike(engine)) throw new Error('[flue] BashFactory must return a Bash-like object.');
      return sandboxFromDriver(driverFor(engine), engine.getCwd());
    },
  };
}

function isBashLike(value: unknown): value is BashLike {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Partial<BashLike>;
  return (
    typeof candidate.exec === 'function' &&
    typeof candidate.getCwd === 'function' &&
    typeof candidate.fs === 'object' &&
    candidate.fs !== null
  );
}

function driverFor(engine: BashLike): SandboxDriver {
  const { fs } = engine;
  return {
    async exec(command, { cwd, env, timeoutMs, signal }) {
      if (timeoutMs === undefined) return engine.exec(command, { cwd, ...(env ? { env } : {}), ...(signal ? { signal } : {}) });
      const deadline = new AbortController();
      const merged = signal ? AbortSignal.any([signal, deadline.signal]) : deadline.signal;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timedOut = new Promise<ShellResult>((resolve) => {
        timer = setTimeout(() => {
          deadline.abort(new Error(`Command timed out after ${timeoutMs}ms`));
          resolve({ stdout: '', stderr: `Command timed out after ${timeoutMs}ms\n`, exitCode: 124 });
        }, timeoutMs);
      });
      const running = engine.exec(command, { cwd, ...(env ? { env } : {}), signal: merged });
      running.catch(() => {}); // a late rejection after the deadline must not surface as unhandled
      try {
        return await Promise.race([running, timedOut]);
      } finally {
        clearTimeout(timer);
      }
    },
    readFile: (p) => fs.readFile(p, 'utf8'),
    readFileBuffer: (p) => fs.readFileBuffer(p),
    writeFile: (p, c) => fs.writeFile(p, c),
    async stat(p) {
      const raw = (await fs.stat(p)) as Record<string, unknown>;
      return toFileStat(raw);
    },
    readdir: (p) => fs.readdir(p),
    exists: (p) => fs.exists(p),
    mkdir: (p, o) => fs.mkdir(p, o),
    rm: (p, o) => fs.rm(p, o),
  };
}

/** Accepts both boolean fields and Node-style `isFile()` methods; keeps only known facts. */
function toFileStat(raw: Record<string, unknown>): FileStat {
  const flag = (key: string): boolean | undefined => {
    const value = raw[key];
    if (typeof value === 'function') return Boolean((value as () => unknown).call(raw));
    return typeof value === 'boolean' ? value : undefined;
  };
  const stat: FileStat = { isFile: flag('isFile') ?? false, isDirectory: flag('isDirectory') ?? false };
  const symlink = flag('isSymbolicLink');
  if (symlink !== undefined) stat.isSymbolicLink = symlink;
  if (typeof raw.size === 'number') stat.size = raw.size;
  if (raw.mtime instanceof Date) stat.mtime = raw.mtime;
  return stat;
}
