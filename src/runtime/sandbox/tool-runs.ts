/**
 * What the six built-in tools (tools.ts) do when called: loaded by the first call of any of them.
 * Model arguments are untrusted: every one reaching a shell is single-quoted, and every path a
 * search implies is first put to the sandbox, so a confining adapter can refuse it.
 */
import * as v from 'valibot';
import { isSandboxPathRefusal } from './errors.ts';
import { GLOB_MAX_PATHS, GREP_MAX_LINE_CHARS, GREP_MAX_MATCHES, MAX_CHARS, MAX_LINES, formatRead, shellQuote } from './tools.ts';
import type { AgentToolResult, FileStat, Sandbox } from './types.ts';

/** Each tool's call, by the tool's name. */
export const runs = { read, write, edit, bash, grep, glob };

function text(value: string, details?: unknown): AgentToolResult {
  return details === undefined ? { content: [{ type: 'text', text: value }] } : { content: [{ type: 'text', text: value }], details };
}

function checkAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new Error('Operation aborted');
}

function parseParams<S extends v.GenericSchema>(tool: string, schema: S, params: unknown): v.InferOutput<S> {
  const result = v.safeParse(schema, params ?? {});
  if (result.success) return result.output;
  const issues = result.issues.map((issue) => {
    const key = issue.path?.map((p) => String(p.key)).join('.');
    return key ? `${key}: ${issue.message}` : issue.message;
  });
  throw new Error(`Invalid arguments for tool "${tool}": ${issues.join('; ')}`);
}

const optionalPositiveInt = v.optional(v.pipe(v.number(), v.integer(), v.minValue(1)));
/** A NUL cannot travel in a shell argument; refused here rather than failing as "no match". */
const shellString = v.pipe(
  v.string(),
  v.check((s: string) => !s.includes('\0'), 'must not contain NUL bytes'),
);

// ── Paths the search tools hand to a shell (sandbox.md §8) ───────────────────────────────────

/**
 * Asks the sandbox about `p` through `stat`, so a confining adapter refuses it exactly as it
 * refuses `read`. Any other failure (typically "not found") is left for the command to report.
 */
async function vetPath(sandbox: Sandbox, p: string): Promise<FileStat | undefined> {
  try {
    return await sandbox.stat(p);
  } catch (error) {
    if (isSandboxPathRefusal(error)) throw error;
    return undefined;
  }
}

/**
 * The sandbox resolves `..` lexically, the kernel after following symlinks (`link/..` is the
 * link target's parent); so a path with `..` reaches the shell in the spelling that was checked.
 */
function checkedSpelling(sandbox: Sandbox, p: string): string {
  if (!p.split('/').includes('..')) return p;
  const abs = sandbox.resolvePath(p);
  if (abs === sandbox.cwd) return '.';
  return abs.startsWith(`${sandbox.cwd}/`) ? abs.slice(sandbox.cwd.length + 1) : abs;
}

/** The directory a path-shaped glob points into (`../x/*.ts` under `src` → `src/../x`). */
function globDirectory(searchPath: string, glob: string): string | undefined {
  const slash = glob.lastIndexOf('/');
  if (slash === -1) return undefined;
  const dir = slash === 0 ? '/' : glob.slice(0, slash);
  return dir.startsWith('/') ? dir : `${searchPath}/${dir}`;
}

/**
 * Vets the search path and the directory a name filter points into, and returns the path to run
 * on. The walk itself follows no symlink (`grep -r` and `find` without `-L`): linked entries
 * are skipped, in-root ones too, since a shell walk cannot ask the sandbox about each entry. A link
 * named as `path` is vetted like any path and then followed.
 */
async function searchTarget(sandbox: Sandbox, path: string, glob: string | undefined): Promise<{ path: string; stat?: FileStat }> {
  const stat = await vetPath(sandbox, path);
  const dir = glob === undefined ? undefined : globDirectory(path, glob);
  if (dir !== undefined) await vetPath(sandbox, dir);
  const spelled = checkedSpelling(sandbox, path);
  return stat === undefined ? { path: spelled } : { path: spelled, stat };
}

// ── Per-path serialization of write/edit (sandbox.md §4) ─────────────────────────────────────

const pathLocks = new WeakMap<Sandbox, Map<string, Promise<unknown>>>();

/** Runs `task` after every earlier mutation of the same resolved path on the same sandbox. */
async function withPathLock<T>(sandbox: Sandbox, path: string, task: () => Promise<T>): Promise<T> {
  let locks = pathLocks.get(sandbox);
  if (!locks) pathLocks.set(sandbox, (locks = new Map()));
  const key = sandbox.resolvePath(path);
  const previous = locks.get(key) ?? Promise.resolve();
  const current = previous.then(task, task);
  const settled = current.catch(() => {});
  locks.set(key, settled);
  try {
    return await current;
  } finally {
    if (locks.get(key) === settled) locks.delete(key);
  }
}

// ── read ──────────────────────────────────────────────────────────────────────────────────────

const readSchema = v.object({ path: v.string(), offset: optionalPositiveInt, limit: optionalPositiveInt });

async function read(sandbox: Sandbox, params: unknown, signal: AbortSignal | undefined): Promise<AgentToolResult> {
  checkAborted(signal);
  const { path, offset, limit } = parseParams('read', readSchema, params);
  const content = await sandbox.readFile(path);
  checkAborted(signal);
  return text(formatRead(content, offset, limit));
}

// ── write ─────────────────────────────────────────────────────────────────────────────────────

const writeSchema = v.object({ path: v.string(), content: v.string() });

async function write(sandbox: Sandbox, params: unknown, signal: AbortSignal | undefined): Promise<AgentToolResult> {
  checkAborted(signal);
  const { path, content } = parseParams('write', writeSchema, params);
  return withPathLock(sandbox, path, async () => {
    checkAborted(signal);
    await sandbox.writeFile(path, content);
    return text(`Successfully wrote ${content.length} bytes to ${path}`);
  });
}

// ── edit ──────────────────────────────────────────────────────────────────────────────────────

const editSchema = v.object({ path: v.string(), oldText: v.string(), newText: v.string(), replaceAll: v.optional(v.boolean()) });

async function edit(sandbox: Sandbox, params: unknown, signal: AbortSignal | undefined): Promise<AgentToolResult> {
  checkAborted(signal);
  const { path, oldText, newText, replaceAll } = parseParams('edit', editSchema, params);
  if (oldText === '') throw new Error('oldText must not be empty. To create or overwrite a whole file, use the write tool.');
  return withPathLock(sandbox, path, async () => {
    checkAborted(signal);
    if (!(await sandbox.exists(path))) {
      await vetPath(sandbox, path); // a refused path says so rather than "not found"
      throw new Error(`File not found: ${path}`);
    }
    const content = await sandbox.readFile(path);
    const occurrences = content.split(oldText).length - 1;
    if (occurrences === 0) {
      throw new Error(
        `Could not find oldText in ${path}. It must match the file exactly, including whitespace and indentation; read the file again and copy the text exactly.`,
      );
    }
    if (occurrences > 1 && !replaceAll) {
      throw new Error(
        `Found ${occurrences} occurrences of oldText in ${path}. Add more surrounding context to oldText to make it unique, or set replaceAll to true to replace all of them.`,
      );
    }
    // split/join and slicing keep newText literal (String.replace would expand `$&`, `$1`, …).
    const index = content.indexOf(oldText);
    const updated = replaceAll
      ? content.split(oldText).join(newText)
      : content.slice(0, index) + newText + content.slice(index + oldText.length);
    checkAborted(signal);
    await sandbox.writeFile(path, updated);
    return replaceAll
      ? text(`Replaced ${occurrences} occurrences in ${path}`, { path, occurrences })
      : text(`Successfully replaced text in ${path}.`, { path, occurrences: 1 });
  });
}

// ── bash ──────────────────────────────────────────────────────────────────────────────────────

const bashSchema = v.object({ command: v.string(), timeout: v.optional(v.pipe(v.number(), v.minValue(0, 'timeout must be positive'))) });

async function bash(sandbox: Sandbox, params: unknown, signal: AbortSignal | undefined): Promise<AgentToolResult> {
  checkAborted(signal);
  const { command, timeout } = parseParams('bash', bashSchema, params);
  const timeoutMs = timeout !== undefined && timeout > 0 ? Math.ceil(timeout * 1000) : undefined;
  let result = await sandbox.exec(command, { ...(timeoutMs !== undefined ? { timeoutMs } : {}), ...(signal ? { signal } : {}) });
  if (timeoutMs !== undefined && result.exitCode === 124) {
    // A recoverable result the model can act on, in one wording whatever the adapter said.
    result = { ...result, stderr: `[flue] Command timed out after ${timeout} seconds.` };
  }
  return text(formatBashOutput(result.stdout, result.stderr, result.exitCode), { exitCode: result.exitCode });
}

/** Tail truncation keeps the end of the output, where errors and results usually are. */
export function formatBashOutput(stdout: string, stderr: string, exitCode: number): string {
  const combined = `${stdout}\n${stderr}`.trim();
  let output = combined;
  if (combined !== '') {
    const all = combined.split('\n');
    const kept: string[] = [];
    let chars = 0;
    for (let i = all.length - 1; i >= 0; i--) {
      const line = all[i]!;
      const cost = line.length + (kept.length > 0 ? 1 : 0);
      if (kept.length >= MAX_LINES || chars + cost > MAX_CHARS) {
        if (kept.length === 0) kept.push(line.slice(line.length - MAX_CHARS));
        break;
      }
      kept.unshift(line);
      chars += cost;
    }
    if (kept.length < all.length || kept[0] !== all[all.length - kept.length]) {
      const from = all.length - kept.length + 1;
      output = `${kept.join('\n')}\n\n[Showing lines ${from}-${all.length} of ${all.length}. Earlier output was truncated.]`;
    }
  }
  if (output === '') output = '(no output)';
  if (exitCode !== 0) output += `\n\nCommand exited with code ${exitCode}`;
  return output;
}

// ── grep ──────────────────────────────────────────────────────────────────────────────────────

// One command everywhere: `grep -r` is in every POSIX sandbox image. ripgrep is not used even
// where it is installed, because it skips hidden and .gitignore'd files by default: the same
// search would then answer differently depending on the sandbox's image.

const grepSchema = v.object({
  pattern: shellString,
  path: v.optional(shellString),
  include: v.optional(shellString),
  literal: v.optional(v.boolean()),
});

async function grep(sandbox: Sandbox, params: unknown, signal: AbortSignal | undefined): Promise<AgentToolResult> {
  checkAborted(signal);
  const { pattern, path: requested = '.', include, literal } = parseParams('grep', grepSchema, params);
  const { path } = await searchTarget(sandbox, requested, include);
  checkAborted(signal);
  const command = `grep -rnH ${literal ? '-F' : '-E'}${include !== undefined ? ` --include=${shellQuote(include)}` : ''} -- ${shellQuote(pattern)} ${shellQuote(path)}`;
  const result = await sandbox.exec(command, signal ? { signal } : {});
  if (result.exitCode > 1) {
    throw new Error(`grep failed (exit code ${result.exitCode}): ${result.stderr.trim() || result.stdout.trim() || 'no error output'}`);
  }
  const lines = result.stdout.split('\n').filter((line) => line !== '');
  if (lines.length === 0) return text('No matches found.');
  const shown = lines
    .slice(0, GREP_MAX_MATCHES)
    .map((line) => (line.length > GREP_MAX_LINE_CHARS ? `${line.slice(0, GREP_MAX_LINE_CHARS)}...` : line));
  let output = shown.join('\n');
  if (lines.length > GREP_MAX_MATCHES) output += `\n\n[Showing ${GREP_MAX_MATCHES} of ${lines.length} matches. Narrow your search.]`;
  return text(output);
}

// ── glob ──────────────────────────────────────────────────────────────────────────────────────

const globSchema = v.object({ pattern: shellString, path: v.optional(shellString) });

async function glob(sandbox: Sandbox, params: unknown, signal: AbortSignal | undefined): Promise<AgentToolResult> {
  checkAborted(signal);
  const { pattern, path: requested = '.' } = parseParams('glob', globSchema, params);
  const target = await searchTarget(sandbox, requested, pattern);
  checkAborted(signal);
  const path = startDirectory(target.path, target.stat);
  // find has no `--`; a leading `./` keeps a dash-led path from being read as a predicate.
  const safePath = path.startsWith('-') ? `./${path}` : path;
  const command = `find ${shellQuote(safePath)} -type f -name ${shellQuote(pattern)} 2>/dev/null | head -${GLOB_MAX_PATHS}`;
  const result = await sandbox.exec(command, signal ? { signal } : {});
  const paths = result.stdout
    .split('\n')
    .filter((line) => line !== '')
    .slice(0, GLOB_MAX_PATHS);
  if (paths.length === 0) return text('No files found matching pattern.');
  return text(paths.join('\n'));
}

/** `find` does not descend a symlink given as its start; a trailing `/` makes the kernel follow it. */
function startDirectory(path: string, stat: FileStat | undefined): string {
  return stat?.isSymbolicLink === true && stat.isDirectory && !path.endsWith('/') ? `${path}/` : path;
}
