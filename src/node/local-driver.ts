/**
 * The local sandbox's driver (see local.ts): path confinement, file verbs and commands on the
 * host, loaded by the first `createSandbox()` of a `local()` factory.
 */
import type { ChildProcess } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import * as nodePath from 'node:path';
import { sandboxFromDriver } from '../runtime/sandbox/from-driver.ts';
import type { FileStat, MkdirOptions, RmOptions, Sandbox, SandboxDriver, ShellResult } from '../runtime/sandbox/types.ts';
import { LOCAL_MAX_OUTPUT_BYTES, LocalSandboxInvalidPathError, LocalSandboxPathError } from './local.ts';

const posix = nodePath.posix;

/** Grace between SIGTERM and SIGKILL to the command's process group. */
const KILL_GRACE_MS = 2000;
/** After the shell exits, how long to wait for pipes held open by background children. */
const CLOSE_GRACE_MS = 200;
const MAX_SYMLINK_HOPS = 40;

/** A sandbox over the host directory `requestedRoot` (created when missing), as `local()` configured it. */
export async function createLocalSandbox(options: {
  requestedRoot: string;
  baseEnv: Record<string, string>;
  confined: boolean;
}): Promise<Sandbox> {
  const { requestedRoot, baseEnv, confined } = options;
  await files().mkdir(requestedRoot, { recursive: true });
  const realRoot = await files().realpath(requestedRoot);
  if (!(await files().stat(realRoot)).isDirectory()) {
    throw new Error(`[flue] local() sandbox root ${requestedRoot} is not a directory.`);
  }
  const shell = await probeShell(baseEnv.PATH);
  const driver = createLocalDriver({ root: toPosix(realRoot), baseEnv, confined, shell });
  return sandboxFromDriver(driver, toPosix(realRoot));
}

// ── Path confinement ──────────────────────────────────────────────────────────────────────────

function toPosix(p: string): string {
  return process.platform === 'win32' ? p.split(nodePath.sep).join('/') : p;
}

function isInside(root: string, p: string): boolean {
  if (root === '/') return p.startsWith('/');
  return p === root || p.startsWith(`${root}/`);
}

function errCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null ? (error as { code?: string }).code : undefined;
}

interface Resolution {
  /** Where the path really points. */
  real: string;
  /** The last symlink followed that lies inside the root: the one that leads out, if any does. */
  link?: string;
}

/**
 * Where `abs` really points: every existing component is resolved with `lstat`/`readlink` (so a
 * dangling symlink still reveals its target), the missing tail is appended lexically.
 */
async function resolveReal(abs: string, root: string): Promise<Resolution> {
  const queue = abs.split('/').filter((s) => s !== '' && s !== '.');
  let current = '/';
  let hops = 0;
  let missing = false;
  let link: string | undefined;
  while (queue.length > 0) {
    const segment = queue.shift() as string;
    if (segment === '..') {
      current = posix.dirname(current);
      continue;
    }
    const candidate = posix.join(current, segment);
    const kind: EntryKind = missing ? 'missing' : await entryKind(candidate);
    if (kind !== 'symlink') {
      missing = kind === 'missing';
      current = candidate;
      continue;
    }
    if (++hops > MAX_SYMLINK_HOPS) {
      throw Object.assign(new Error(`ELOOP: too many symbolic links encountered, ${abs}`), { code: 'ELOOP', path: abs });
    }
    if (isInside(root, candidate)) link = candidate;
    const target = await files().readlink(candidate);
    if (target.startsWith('/')) current = '/';
    queue.unshift(...target.split('/').filter((s) => s !== '' && s !== '.'));
  }
  return link === undefined ? { real: current } : { real: current, link };
}

type EntryKind = 'symlink' | 'other' | 'missing';

/** Missing is an answer (the tail resolves lexically); other failures (EACCES …) propagate. */
async function entryKind(p: string): Promise<EntryKind> {
  try {
    return (await files().lstat(p)).isSymbolicLink() ? 'symlink' : 'other';
  } catch (error) {
    if (isMissing(error)) return 'missing';
    throw error;
  }
}

function isMissing(error: unknown): boolean {
  const code = errCode(error);
  return code === 'ENOENT' || code === 'ENOTDIR';
}

interface Guarded {
  /** The path to operate on: real parent directory + final name (the final link is not followed). */
  target: string;
}

interface DriverConfig {
  root: string;
  baseEnv: Record<string, string>;
  confined: boolean;
  shell: { file: string; args: (command: string) => string[] };
}

function createLocalDriver(config: DriverConfig): SandboxDriver {
  const { root, baseEnv, confined, shell } = config;

  /** Refuses `p` unless both its parent and its fully resolved target lie inside the root. */
  async function guard(p: string): Promise<Guarded> {
    if (p.includes('\0')) throw new LocalSandboxInvalidPathError(p);
    const abs = posix.resolve('/', p);
    if (!confined) return { target: abs };
    // Authoritative check on the real location (another spelling of the root is fine).
    const full = await resolveReal(abs, root);
    if (!isInside(root, full.real)) throw new LocalSandboxPathError(abs, root, full.real, full.link);
    if (abs !== '/') {
      const parent = await resolveReal(posix.dirname(abs), root);
      if (isInside(root, parent.real)) return { target: posix.join(parent.real, posix.basename(abs)) };
      // Only another spelling of the root itself has its parent outside (e.g. /tmp vs /private/tmp).
      if (full.real !== root) throw new LocalSandboxPathError(abs, root, full.real, parent.link);
    }
    return { target: root };
  }

  return {
    async readFile(p) {
      const { target } = await guard(p);
      return files().readFile(target, 'utf8');
    },
    async readFileBuffer(p) {
      const { target } = await guard(p);
      const buffer = await files().readFile(target);
      return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    },
    async writeFile(p, content) {
      const { target } = await guard(p);
      await files().writeFile(target, content);
    },
    async stat(p): Promise<FileStat> {
      const { target } = await guard(p);
      const link = await files().lstat(target);
      const info = link.isSymbolicLink() ? await files().stat(target) : link;
      return {
        isFile: info.isFile(),
        isDirectory: info.isDirectory(),
        isSymbolicLink: link.isSymbolicLink(),
        size: info.size,
        mtime: info.mtime,
      };
    },
    async readdir(p) {
      const { target } = await guard(p);
      return files().readdir(target);
    },
    async exists(p) {
      try {
        const { target } = await guard(p);
        await files().access(target, fsConstants.F_OK);
        return true;
      } catch {
        return false;
      }
    },
    async mkdir(p, options?: MkdirOptions) {
      const { target } = await guard(p);
      await files().mkdir(target, { recursive: options?.recursive === true });
    },
    async rm(p, options?: RmOptions) {
      const { target } = await guard(p);
      await files().rm(target, { recursive: options?.recursive === true, force: options?.force === true });
    },
    async exec(command, options) {
      const { signal, timeoutMs } = options;
      let cwd: string;
      try {
        cwd = (await guard(options.cwd)).target;
      } catch (error) {
        if (error instanceof LocalSandboxPathError || error instanceof LocalSandboxInvalidPathError) throw error;
        return { stdout: '', stderr: `[flue] Cannot use working directory ${options.cwd}: ${String(error)}\n`, exitCode: 1 };
      }
      try {
        if (!(await files().stat(cwd)).isDirectory()) {
          return { stdout: '', stderr: `[flue] Working directory ${options.cwd} is not a directory.\n`, exitCode: 1 };
        }
      } catch {
        return { stdout: '', stderr: `[flue] Working directory ${options.cwd} does not exist.\n`, exitCode: 1 };
      }
      return runProcess(shell.file, shell.args(command), {
        cwd,
        env: { ...baseEnv, ...options.env },
        ...(timeoutMs !== undefined ? { timeoutMs } : {}),
        ...(signal ? { signal } : {}),
      });
    },
  };
}

// ── Processes ─────────────────────────────────────────────────────────────────────────────────

let shellProbe: Promise<DriverConfig['shell']> | undefined;

/** Real `bash` if found (probed once per process), else the platform shell. */
function probeShell(pathVar: string | undefined): Promise<DriverConfig['shell']> {
  shellProbe ??= (async () => {
    if (process.platform === 'win32') {
      return { file: process.env.ComSpec ?? 'cmd.exe', args: (c: string) => ['/d', '/s', '/c', c] };
    }
    const dirs = ['/bin', '/usr/bin', '/usr/local/bin', ...(pathVar ?? '').split(':').filter((d) => d.startsWith('/'))];
    for (const dir of dirs) {
      const candidate = posix.join(dir, 'bash');
      try {
        await files().access(candidate, fsConstants.X_OK);
        return { file: candidate, args: (c: string) => ['-c', c] };
      } catch {
        // try the next directory
      }
    }
    return { file: '/bin/sh', args: (c: string) => ['-c', c] };
  })();
  return shellProbe;
}

const SIGNAL_NUMBERS: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGKILL: 9, SIGTERM: 15, SIGPIPE: 13 };

function killGroup(child: ChildProcess, sig: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    if (process.platform === 'win32') child.kill(sig);
    else process.kill(-child.pid, sig);
  } catch {
    // The group is already gone.
  }
}

function runProcess(
  file: string,
  args: string[],
  options: { cwd: string; env: Record<string, string>; timeoutMs?: number; signal?: AbortSignal },
): Promise<ShellResult> {
  return new Promise<ShellResult>((resolve) => {
    let child: ChildProcess;
    try {
      child = childProcess().spawn(file, args, {
        cwd: options.cwd,
        env: options.env,
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: process.platform !== 'win32', // leads its own process group
        windowsHide: true,
      });
    } catch (error) {
      resolve({ stdout: '', stderr: `[flue] Failed to start ${file}: ${String(error)}\n`, exitCode: 1 });
      return;
    }

    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let captured = 0;
    let overflow = false;
    let timedOut = false;
    let finished = false;
    let exitCode: number | null = null;
    let exitSignal: NodeJS.Signals | null = null;
    let killTimer: NodeJS.Timeout | undefined;
    let closeTimer: NodeJS.Timeout | undefined;

    const terminate = (): void => {
      if (killTimer) return;
      killGroup(child, 'SIGTERM');
      killTimer = setTimeout(() => killGroup(child, 'SIGKILL'), KILL_GRACE_MS);
      killTimer.unref();
    };

    const timeoutTimer =
      options.timeoutMs !== undefined
        ? setTimeout(
            () => {
              timedOut = true;
              terminate();
            },
            Math.max(0, options.timeoutMs),
          )
        : undefined;

    // The wrapper owns the abort race; here abort is only the cancellation primitive.
    const onAbort = (): void => terminate();
    if (options.signal?.aborted) terminate();
    else options.signal?.addEventListener('abort', onAbort, { once: true });

    const collect = (sink: Buffer[]) => (chunk: Buffer) => {
      if (overflow) return;
      captured += chunk.length;
      if (captured > LOCAL_MAX_OUTPUT_BYTES) {
        overflow = true;
        sink.push(chunk.subarray(0, chunk.length - (captured - LOCAL_MAX_OUTPUT_BYTES)));
        terminate();
        return;
      }
      sink.push(chunk);
    };
    child.stdout?.on('data', collect(stdout));
    child.stderr?.on('data', collect(stderr));

    const finish = (spawnError?: Error): void => {
      if (finished) return;
      finished = true;
      if (timeoutTimer) clearTimeout(timeoutTimer);
      if (closeTimer) clearTimeout(closeTimer);
      options.signal?.removeEventListener('abort', onAbort);
      child.stdout?.destroy();
      child.stderr?.destroy();
      const decoder = (chunks: Buffer[]) => new TextDecoder().decode(Buffer.concat(chunks));
      const out = decoder(stdout);
      let err = decoder(stderr);
      let code: number;
      if (spawnError) {
        err += `${err && !err.endsWith('\n') ? '\n' : ''}[flue] Failed to start ${file}: ${spawnError.message}\n`;
        code = 1;
      } else if (timedOut) {
        err += `${err && !err.endsWith('\n') ? '\n' : ''}[flue] Command timed out after ${options.timeoutMs} ms and was terminated.\n`;
        code = 124;
      } else if (overflow) {
        err += `${err && !err.endsWith('\n') ? '\n' : ''}[flue] Output exceeded ${LOCAL_MAX_OUTPUT_BYTES} bytes; the command was terminated and its output truncated.\n`;
        code = 1;
      } else if (exitCode !== null) {
        code = exitCode;
      } else {
        code = 128 + (exitSignal ? (SIGNAL_NUMBERS[exitSignal] ?? 0) : 0);
        if (code === 128) code = 1;
      }
      resolve({ stdout: out, stderr: err, exitCode: code });
    };

    child.on('error', (error) => {
      // Spawn failure (no 'exit' follows) or a failed kill; only the former ends the run.
      if (child.pid === undefined) finish(error);
    });
    child.on('exit', (code, sig) => {
      exitCode = code;
      exitSignal = sig;
      // Background children may hold the pipes open; don't wait for them forever.
      closeTimer = setTimeout(() => finish(), CLOSE_GRACE_MS);
      closeTimer.unref();
    });
    child.on('close', (code, sig) => {
      if (exitCode === null && exitSignal === null) {
        exitCode = code;
        exitSignal = sig;
      }
      finish();
    });
  });
}

/** node:fs/promises, loaded by the first file operation: most processes never use a local sandbox. */
function files(): typeof import('node:fs/promises') {
  return process.getBuiltinModule('node:fs/promises') as typeof import('node:fs/promises');
}

/** node:child_process, loaded on the first command: the runtime's entries share their files, and most apps never run one. */
function childProcess(): typeof import('node:child_process') {
  return process.getBuiltinModule('node:child_process') as typeof import('node:child_process');
}
