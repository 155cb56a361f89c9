/** Shared shapes and helpers for the virtual shell's built-in commands. */
import { resolvePath } from './paths.ts';
import type { ShellResult } from './types.ts';
import { toText, type VirtualFs } from './virtual-fs.ts';

export interface CommandContext {
  args: string[];
  stdin: string;
  cwd: string;
  env: Record<string, string>;
  vfs: VirtualFs;
  signal: AbortSignal;
}

export type BuiltinCommand = (ctx: CommandContext) => ShellResult | Promise<ShellResult>;

export function ok(stdout = ''): ShellResult {
  return { stdout, stderr: '', exitCode: 0 };
}

export function fail(stderr: string, exitCode = 1, stdout = ''): ShellResult {
  return { stdout, stderr: stderr.endsWith('\n') || stderr === '' ? stderr : `${stderr}\n`, exitCode };
}

export function abs(ctx: CommandContext, p: string): string {
  return resolvePath(ctx.cwd, p);
}

const REASONS: Record<string, string> = {
  ENOENT: 'No such file or directory',
  EISDIR: 'Is a directory',
  ENOTDIR: 'Not a directory',
  EEXIST: 'File exists',
  ENOTEMPTY: 'Directory not empty',
  ENOSPC: 'No space left on device',
  EFBIG: 'File too large',
  EINVAL: 'Invalid argument',
};

/** `cmd: path: reason` in coreutils style, from a VirtualFsError (or any error). */
export function fsMessage(command: string, path: string, error: unknown): string {
  const code = (error as { code?: string }).code;
  const reason = (code && REASONS[code]) ?? (error instanceof Error ? error.message : String(error));
  return `${command}: ${path}: ${reason}`;
}

/** Reads a file operand as text; `-` means stdin. */
export function readText(ctx: CommandContext, p: string): string {
  if (p === '-') return ctx.stdin;
  if (p === '/dev/null') return '';
  return toText(ctx.vfs.readFile(abs(ctx, p)));
}

/** Splits text into lines, dropping the empty string after a final newline. */
export function lines(text: string): string[] {
  if (text === '') return [];
  const list = text.split('\n');
  if (list[list.length - 1] === '') list.pop();
  return list;
}

export function joinLines(list: string[]): string {
  return list.length === 0 ? '' : `${list.join('\n')}\n`;
}

/** Processes escapes for `echo -e`, `printf` and `tr`. */
export function unescapeBackslashes(text: string): string {
  return text.replace(/\\(0[0-7]{0,3}|[abfnrtv\\])/g, (_m, code: string) => {
    if (code.startsWith('0')) return String.fromCharCode(parseInt(code, 8) || 0);
    return ({ a: '\x07', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', '\\': '\\' } as Record<string, string>)[code]!;
  });
}
