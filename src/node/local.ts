/**
 * `local(options?)` — the Node-only sandbox on the host machine (sandbox.md §7, §8).
 *
 * The sandbox's POSIX view is the host filesystem itself: its `cwd` is the real (symlink-resolved)
 * absolute path of the root directory, and absolute paths mean host paths. It is implemented as a
 * `SandboxDriver` wrapped by `sandboxFromDriver`, so path resolution, the writeFile parent guarantee
 * and the exec abort race come from the shared wrapper.
 *
 * Confinement (§8, ours): every verb that touches the host with a path — readFile, readFileBuffer,
 * writeFile, stat, readdir, exists, mkdir, rm and exec's cwd — refuses a path that resolves, after
 * following symlinks (including dangling ones and symlinks in parent directories), outside the root,
 * with a `LocalSandboxPathError` naming the path; nothing outside is read or touched, and the message
 * (what a model sees) names no file outside the root; `meta.resolved` keeps the target for the host. The built-in `read`/`write`/`edit` tools go through those verbs,
 * and `grep`/`glob` put their path (and the directory of a path-shaped name filter) to `stat` before
 * running, so they are refused the same way. `resolvePath` stays lexical: it touches nothing, and the
 * runtime uses it to recognise paths that never reach the host (packaged skills). A path with a NUL
 * byte is a `LocalSandboxInvalidPathError`. `local({ unrestricted: true })` lifts every path check
 * (trusted CI use).
 *
 * NOT a security boundary: `exec` (and so the `bash` tool) runs a real host shell with this
 * process's permissions; a command can `cd /`, read, write or delete anything the process can, and
 * use the network. The path check is also check-then-use: a concurrently running process that swaps a
 * directory for a symlink can race it. Never use `local()` for untrusted input or multi-tenant work.
 */
import * as nodePath from 'node:path';
import { FlueError } from '../runtime/common/errors.ts';
import type { SandboxFactory } from '../runtime/sandbox/types.ts';

export interface LocalSandboxOptions {
  /** Sandbox root and default cwd; default `process.cwd()`, resolved absolute (created if missing). */
  cwd?: string;
  /** Alias of `cwd` (the root the file verbs are confined to). Conflicting values throw. */
  root?: string;
  /**
   * Added to the default pass-through env (`PATH HOME USER …`, see `LOCAL_DEFAULT_ENV_KEYS`);
   * `undefined` removes a default. `process.env` is never inherited wholesale.
   */
  env?: Record<string, string | undefined>;
  /** Lift the confinement of file verbs and exec cwd to the root. */
  unrestricted?: boolean;
}

/** The only host variables the shell inherits by default. */
export const LOCAL_DEFAULT_ENV_KEYS = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'HOSTNAME',
  'SHELL',
  'LANG',
  'LC_ALL',
  'LC_CTYPE',
  'TZ',
  'TERM',
  'TMPDIR',
  'TMP',
  'TEMP',
] as const;

/** Output captured per exec (stdout + stderr) before the command is killed. */
export const LOCAL_MAX_OUTPUT_BYTES = 64 * 1024 * 1024;

/**
 * A file-verb path (or exec cwd) that resolves outside the local sandbox root. `link` is the symlink
 * inside the root that leads out; the message names it rather than its target, which lies outside
 * and reaches the model with the message.
 */
export class LocalSandboxPathError extends FlueError {
  constructor(path: string, root: string, resolved: string, link?: string) {
    super('sandbox_path_outside_root', {
      message: `[flue] Access denied: ${path} is outside the sandbox root ${root}${throughLink(path, link)}. Only paths inside ${root} can be used.`,
      meta: { path, root, resolved, ...(link === undefined ? {} : { link }) },
    });
    this.name = 'LocalSandboxPathError';
  }
}

function throughLink(path: string, link: string | undefined): string {
  if (link === undefined) return '';
  return link === path ? ' (it is a symbolic link pointing out of it)' : ` (through the symbolic link ${link})`;
}

/** A path no host call can take (a NUL byte would be cut short or rejected by the OS). */
export class LocalSandboxInvalidPathError extends FlueError {
  constructor(path: string) {
    super('sandbox_path_invalid', {
      message: `[flue] Invalid path ${JSON.stringify(path)}: a sandbox path must not contain NUL bytes.`,
      meta: { path },
    });
    this.name = 'LocalSandboxInvalidPathError';
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

export function local(options: LocalSandboxOptions = {}): SandboxFactory {
  if (!isRecord(options as unknown)) throw new TypeError('[flue] local() options must be an object.');
  const { cwd, root, env, unrestricted } = options;
  for (const [name, value] of [
    ['cwd', cwd],
    ['root', root],
  ] as const) {
    if (value !== undefined && (typeof value !== 'string' || value === '')) {
      throw new TypeError(`[flue] local() option ${name} must be a non-empty string.`);
    }
  }
  if (cwd !== undefined && root !== undefined && nodePath.resolve(cwd) !== nodePath.resolve(root)) {
    throw new TypeError('[flue] local() got different cwd and root; pass only one.');
  }
  if (env !== undefined && !isRecord(env as unknown)) throw new TypeError('[flue] local() option env must be a record of strings.');
  for (const [key, value] of Object.entries(env ?? {})) {
    if (value !== undefined && typeof value !== 'string') {
      throw new TypeError(`[flue] local() env value for ${key} must be a string or undefined.`);
    }
  }

  // Snapshot at construction (§7).
  const requestedRoot = nodePath.resolve(cwd ?? root ?? process.cwd());
  const baseEnv: Record<string, string> = {};
  for (const key of LOCAL_DEFAULT_ENV_KEYS) {
    const value = process.env[key];
    if (value !== undefined) baseEnv[key] = value;
  }
  for (const [key, value] of Object.entries(env ?? {})) {
    if (value === undefined) delete baseEnv[key];
    else baseEnv[key] = value as string;
  }
  const confined = unrestricted !== true;

  return {
    async createSandbox() {
      // The driver (paths, files, processes) loads with the first sandbox: `@flue/runtime/node`
      // shares its files with every Node process, and most never run a local sandbox.
      const { createLocalSandbox } = await import('./local-driver.ts');
      return createLocalSandbox({ requestedRoot, baseEnv, confined });
    },
  };
}
