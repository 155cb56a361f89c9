/**
 * `virtualSandbox()` (sandbox.md §5): an in-memory sandbox with no dependencies, identical on
 * Node and workerd. The engine is a `BashLike` wrapped by `bash()`, so the generic abort, timeout
 * and path rules apply unchanged. Without a host store each `createSandbox` call gets a fresh
 * filesystem. Inside an agent the host passes the conversation's `SandboxFileStore`
 * (`file-store.ts`): the files then live in the conversation's SQLite and survive messages,
 * evictions and crashes; the seeded `files` apply only when that store is first created.
 *
 * Shell subset (anything else → exit 2, `<construct>: not supported`):
 * - Lists `;` `&&` `||` newline, pipelines `|`, `$?`, comments `#`.
 * - Quoting `'…'`, `"…"` (with `$VAR`/`${VAR}` and `\" \\ \$` escapes), backslash; `~` → $HOME.
 * - Unquoted `*` `?` `[…]` pathname expansion (no match → the word is kept).
 * - Redirections `>` `>>` `<` `2>` `2>>` `2>&1` `>&2` `&>` `&>>`; `/dev/null` as sink/source.
 * - `NAME=value` assignments (alone: shell variable; before a command: that command's env).
 * - Builtins: cd pwd echo(-n -e) printf export unset test/[ true false exit.
 * - Commands: cat ls(-l -a -A -1 -R) mkdir(-p) rmdir rm(-r -f) touch cp(-r) mv tee(-a)
 *   head/tail(-n -c -N, tail -n +N) wc(-l -w -c) grep(-r -n -H -h -i -v -l -c -o -q -s -E -F -w -x
 *   -e -m --include --exclude) find(PATH -name -iname -path -type f|d -maxdepth -mindepth ! -not)
 *   sort(-r -n -u -f) uniq(-c -d -u) cut(-d -f -c -s) tr(-d -s) sed(-n -e -i -E; s///gip, p, d;
 *   addresses N, $, /re/) basename dirname seq env base64(-d).
 * - Regexes use JavaScript `RegExp` semantics (BRE `\( \) \| \{ \} \+ \?` are translated).
 * - Not present: `rg`, network, processes, background `&`, subshells, `$(…)`, control flow.
 *   Unknown commands → stderr `<cmd>: command not found`, exit 127.
 * - Each exec starts from `cwd` with fresh variables; only the filesystem persists.
 */
import { bash } from './bash.ts';
import { type CreateSandboxHostOptions, SANDBOX_FILE_STORE, type SandboxFileStore } from './file-store.ts';
import { resolvePath } from './paths.ts';
import type { VirtualCommand, VirtualShell } from './shell.ts';
import type { BashLike, BashLikeFs, SandboxFactory } from './types.ts';
import { toText, VirtualFs } from './virtual-fs.ts';

export type { VirtualCommand } from './shell.ts';

export interface VirtualSandboxOptions {
  /** Default `/workspace` (created). */
  cwd?: string;
  /** Seeded files; relative keys resolve against `cwd`. */
  files?: Record<string, string | Uint8Array>;
  /** Base environment (HOME defaults to the cwd). */
  env?: Record<string, string>;
  /** Trusted host-side commands; they run with host privileges. */
  commands?: Record<string, VirtualCommand>;
  limits?: { maxFileBytes?: number; maxTotalBytes?: number; maxOutputBytes?: number };
}

export function virtualSandbox(options: VirtualSandboxOptions = {}): SandboxFactory {
  return {
    createSandbox(createOptions) {
      const store = (createOptions as CreateSandboxHostOptions | undefined)?.[SANDBOX_FILE_STORE];
      return bash(() => createVirtualBash(options, store)).createSandbox(createOptions);
    },
  };
}

/**
 * The BashLike engine on its own (useful for tests and for callers composing their own factory).
 * With `store`, the filesystem is the stored one (created and seeded on first use).
 */
export function createVirtualBash(options: VirtualSandboxOptions = {}, store?: SandboxFileStore): BashLike {
  const cwd = resolvePath('/', options.cwd ?? '/workspace');
  const vfs = new VirtualFs(options.limits, store);
  if (!vfs.loadStored()) {
    vfs.create(() => {
      vfs.mkdir(cwd, true);
      for (const [path, content] of Object.entries(options.files ?? {})) {
        const target = resolvePath(cwd, path);
        vfs.mkdir(resolvePath(target, '..'), true);
        vfs.writeFile(target, content);
      }
    });
  }
  // A stored sandbox keeps its tree; a cwd it lacks (say, after a deploy changed it) is created.
  vfs.mkdir(cwd, true);
  const baseEnv: Record<string, string> = { HOME: cwd, PATH: '/usr/bin:/bin', SHELL: '/bin/bash', ...options.env };
  const maxOutputBytes = options.limits?.maxOutputBytes ?? 8 * 1024 * 1024;
  const at = (p: string): string => resolvePath(cwd, p);

  // Sync VirtualFs calls wrapped as async so thrown errors become rejections.
  const fs: BashLikeFs = {
    readFile: async (p) => toText(vfs.readFile(at(p))),
    readFileBuffer: async (p) => vfs.readFile(at(p)).slice(),
    writeFile: async (p, c) => vfs.writeFile(at(p), c),
    stat: async (p) => vfs.stat(at(p)),
    readdir: async (p) => vfs.readdir(at(p)),
    exists: async (p) => vfs.exists(at(p)),
    mkdir: async (p, o) => vfs.mkdir(at(p), o?.recursive ?? false),
    rm: async (p, o) => vfs.rm(at(p), o),
    resolvePath: (base, p) => resolvePath(base, p),
  };
  // The shell (parser and commands, most of the sandbox's code) loads on the first exec: an app
  // that never runs a command, or only uses `fs`, does not load or compile it.
  let shell: Promise<VirtualShell> | undefined;
  const commands = options.commands ?? {};

  return {
    fs,
    getCwd: () => cwd,
    async exec(command, execOptions = {}) {
      const signal = execOptions.signal ?? new AbortController().signal;
      const runCwd = resolvePath(cwd, execOptions.cwd ?? '.');
      if (vfs.lookup(runCwd)?.kind !== 'dir') {
        return { stdout: '', stderr: `bash: cd: ${runCwd}: No such file or directory\n`, exitCode: 1 };
      }
      shell ??= loadShell().then((Shell) => new Shell(vfs, fs, commands));
      return (await shell).run(command, { cwd: runCwd, env: { ...baseEnv, ...execOptions.env }, signal, maxOutputBytes });
    },
  };
}

let shellModule: Promise<typeof VirtualShell> | undefined;

/** The shell's module, imported once per process (or isolate) and shared by every sandbox. */
function loadShell(): Promise<typeof VirtualShell> {
  shellModule ??= import('./shell.ts').then((module) => module.VirtualShell);
  return shellModule;
}
