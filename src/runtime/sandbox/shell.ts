/**
 * The virtual shell interpreter: runs a parsed command list against a `VirtualFs`. Each `run`
 * call gets fresh shell state (cwd, variables, `$?`) so nothing but the filesystem persists
 * between execs, matching sandbox.md §5. Output is captured in memory and capped.
 */
import * as fsCommands from './commands-fs.ts';
import * as text from './commands-text.ts';
import { abortError } from './errors.ts';
import { globToRegExp, hasGlob, unescapeGlob } from './glob.ts';
import { joinDisplay, resolvePath } from './paths.ts';
import { UsageError } from './shell-args.ts';
import type { BuiltinCommand, CommandContext } from './shell-command.ts';
import {
  parse,
  ShellSyntaxError,
  ShellUnsupported,
  type CommandList,
  type Redirect,
  type SimpleCommand,
  type Word,
} from './shell-parse.ts';
import type { BashLikeFs, ShellResult } from './types.ts';
import { toBytes, type VirtualFs } from './virtual-fs.ts';

/** A trusted host-side command added through `virtualSandbox({ commands })`. */
export type VirtualCommand = (ctx: {
  args: string[];
  stdin: string;
  cwd: string;
  env: Record<string, string>;
  fs: BashLikeFs;
  signal: AbortSignal;
}) => Promise<ShellResult> | ShellResult;

export const BUILTIN_COMMANDS: Record<string, BuiltinCommand> = {
  cat: fsCommands.cat,
  ls: fsCommands.ls,
  pwd: fsCommands.pwd,
  mkdir: fsCommands.mkdir,
  rmdir: fsCommands.rmdir,
  rm: fsCommands.rm,
  touch: fsCommands.touch,
  cp: fsCommands.cp,
  mv: fsCommands.mv,
  tee: fsCommands.tee,
  find: fsCommands.find,
  echo: text.echo,
  printf: text.printf,
  head: text.head,
  tail: text.tail,
  wc: text.wc,
  grep: text.grep,
  sort: text.sort,
  uniq: text.uniq,
  cut: text.cut,
  tr: text.tr,
  sed: text.sed,
  basename: text.basename,
  dirname: text.dirname,
  seq: text.seq,
  env: text.env,
  base64: text.base64,
  true: text.trueCommand,
  false: text.falseCommand,
  test: text.testCommand(false),
  '[': text.testCommand(true),
};

const KEYWORDS = new Set([
  'if',
  'then',
  'else',
  'elif',
  'fi',
  'for',
  'while',
  'until',
  'do',
  'done',
  'case',
  'esac',
  'function',
  'select',
  '{',
  '}',
  '[[',
  ']]',
]);

class ExitSignal {
  readonly code: number;
  constructor(code: number) {
    this.code = code;
  }
}
class OutputLimit {}

interface ShellState {
  cwd: string;
  vars: Record<string, string>;
  status: number;
}

type FdTarget = { kind: 'stdout' } | { kind: 'stderr' } | { kind: 'null' } | { kind: 'file'; path: string };

export interface ShellRunOptions {
  cwd: string;
  env: Record<string, string>;
  signal: AbortSignal;
  maxOutputBytes: number;
}

export class VirtualShell {
  private readonly vfs: VirtualFs;
  private readonly fsFacade: BashLikeFs;
  private readonly extensions: Record<string, VirtualCommand>;

  constructor(vfs: VirtualFs, fsFacade: BashLikeFs, extensions: Record<string, VirtualCommand>) {
    this.vfs = vfs;
    this.fsFacade = fsFacade;
    this.extensions = extensions;
  }

  async run(source: string, options: ShellRunOptions): Promise<ShellResult> {
    let list: CommandList;
    try {
      list = parse(source);
    } catch (error) {
      if (error instanceof ShellUnsupported) return { stdout: '', stderr: `${error.message}\n`, exitCode: 2 };
      if (error instanceof ShellSyntaxError) return { stdout: '', stderr: `bash: ${error.message}\n`, exitCode: 2 };
      throw error;
    }
    const state: ShellState = { cwd: options.cwd, vars: { ...options.env, PWD: options.cwd }, status: 0 };
    const output = { stdout: '', stderr: '' };
    const append = (key: 'stdout' | 'stderr', chunk: string): void => {
      output[key] += chunk;
      if (output.stdout.length + output.stderr.length > options.maxOutputBytes) throw new OutputLimit();
    };
    try {
      for (const item of list.items) {
        if (item.connector === '&&' && state.status !== 0) continue;
        if (item.connector === '||' && state.status === 0) continue;
        state.status = await this.runPipeline(item.pipeline, state, options, append);
      }
    } catch (error) {
      if (error instanceof ExitSignal) return { ...output, exitCode: error.code };
      if (error instanceof OutputLimit) {
        return {
          stdout: output.stdout.slice(0, options.maxOutputBytes),
          stderr: `${output.stderr.slice(0, 4096)}\n[output truncated: exceeded ${options.maxOutputBytes} bytes; execution stopped]\n`,
          exitCode: 1,
        };
      }
      if (error instanceof ShellUnsupported) return { ...output, stderr: `${output.stderr}${error.message}\n`, exitCode: 2 };
      throw error;
    }
    return { ...output, exitCode: state.status };
  }

  private async runPipeline(
    pipeline: SimpleCommand[],
    state: ShellState,
    options: ShellRunOptions,
    append: (key: 'stdout' | 'stderr', chunk: string) => void,
  ): Promise<number> {
    let stdin = '';
    let status = 0;
    for (let k = 0; k < pipeline.length; k++) {
      // Long command lists check the signal between commands (the only safe cancellation point).
      if (options.signal.aborted) throw abortError(options.signal.reason);
      const result = await this.runSimple(pipeline[k]!, stdin, state, options);
      if (result.stderr) append('stderr', result.stderr);
      if (k === pipeline.length - 1) {
        if (result.stdout) append('stdout', result.stdout);
      } else {
        if (result.stdout.length > options.maxOutputBytes) throw new OutputLimit();
        stdin = result.stdout;
      }
      status = result.exitCode;
    }
    return status;
  }

  private async runSimple(command: SimpleCommand, pipeStdin: string, state: ShellState, options: ShellRunOptions): Promise<ShellResult> {
    // Leading NAME=value words are assignments: shell variables alone, per-command env otherwise.
    let w = 0;
    const assignments: Record<string, string> = {};
    for (; w < command.words.length; w++) {
      const first = command.words[w]![0];
      const m = first && first.kind === 'lit' && !first.quoted ? /^([A-Za-z_][A-Za-z0-9_]*)=/.exec(first.text) : null;
      if (!m) break;
      const rest: Word = [
        { kind: 'lit', text: first!.kind === 'lit' ? first!.text.slice(m[0].length) : '', quoted: true },
        ...command.words[w]!.slice(1),
      ];
      assignments[m[1]!] = this.expandJoined(rest, state);
    }
    const args: string[] = [];
    for (const word of command.words.slice(w)) args.push(...this.expandWord(word, state));

    const io = this.openRedirects(command.redirects, state);
    if ('error' in io) return { stdout: '', stderr: io.error, exitCode: 1 };

    let result: ShellResult;
    if (args.length === 0) {
      Object.assign(state.vars, assignments);
      result = { stdout: '', stderr: '', exitCode: 0 };
    } else {
      const env = { ...state.vars, ...assignments };
      result = await this.invoke(args[0]!, args.slice(1), io.stdin ?? pipeStdin, state, env, options);
    }
    return this.deliver(result, io.fd1, io.fd2);
  }

  private async invoke(
    name: string,
    args: string[],
    stdin: string,
    state: ShellState,
    env: Record<string, string>,
    options: ShellRunOptions,
  ): Promise<ShellResult> {
    if (KEYWORDS.has(name)) throw new ShellUnsupported(name);
    switch (name) {
      case 'cd': {
        const target =
          args[0] === undefined || args[0] === '~'
            ? (state.vars.HOME ?? '/')
            : args[0] === '-'
              ? (state.vars.OLDPWD ?? state.cwd)
              : args[0];
        const path = resolvePath(state.cwd, target);
        const node = this.vfs.lookup(path);
        if (!node) return { stdout: '', stderr: `bash: cd: ${target}: No such file or directory\n`, exitCode: 1 };
        if (node.kind !== 'dir') return { stdout: '', stderr: `bash: cd: ${target}: Not a directory\n`, exitCode: 1 };
        state.vars.OLDPWD = state.cwd;
        state.cwd = path;
        state.vars.PWD = path;
        return { stdout: '', stderr: '', exitCode: 0 };
      }
      case 'exit': {
        const code = args[0] === undefined ? state.status : Number(args[0]);
        throw new ExitSignal(Number.isInteger(code) ? ((code % 256) + 256) % 256 : 2);
      }
      case 'export': {
        for (const arg of args) {
          const eq = arg.indexOf('=');
          if (eq > 0) state.vars[arg.slice(0, eq)] = arg.slice(eq + 1);
        }
        return { stdout: '', stderr: '', exitCode: 0 };
      }
      case 'unset':
        for (const arg of args) delete state.vars[arg];
        return { stdout: '', stderr: '', exitCode: 0 };
    }
    const extension = this.extensions[name];
    if (extension) return extension({ args, stdin, cwd: state.cwd, env, fs: this.fsFacade, signal: options.signal });
    const builtin = BUILTIN_COMMANDS[name];
    if (!builtin) return { stdout: '', stderr: `${name}: command not found\n`, exitCode: 127 };
    const ctx: CommandContext = { args, stdin, cwd: state.cwd, env, vfs: this.vfs, signal: options.signal };
    try {
      return await builtin(ctx);
    } catch (error) {
      if (error instanceof UsageError) return { stdout: '', stderr: `${error.message}\n`, exitCode: 2 };
      const message = error instanceof Error ? error.message : String(error);
      return { stdout: '', stderr: `${name}: ${message}\n`, exitCode: 1 };
    }
  }

  /** Applies redirects in order (so `> f 2>&1` and `2>&1 > f` differ as in bash); opens files up front. */
  private openRedirects(redirects: Redirect[], state: ShellState): { stdin?: string; fd1: FdTarget; fd2: FdTarget } | { error: string } {
    let fd1: FdTarget = { kind: 'stdout' };
    let fd2: FdTarget = { kind: 'stderr' };
    let stdin: string | undefined;
    for (const redirect of redirects) {
      if (redirect.op === '2>&1') {
        fd2 = fd1;
        continue;
      }
      if (redirect.op === '>&2') {
        fd1 = fd2;
        continue;
      }
      const target = this.expandJoined(redirect.target!, state);
      if (redirect.op === '<') {
        if (target === '/dev/null') stdin = '';
        else {
          const node = this.vfs.lookup(resolvePath(state.cwd, target));
          if (!node) return { error: `bash: ${target}: No such file or directory\n` };
          if (node.kind === 'dir') return { error: `bash: ${target}: Is a directory\n` };
          stdin = new TextDecoder().decode(node.data);
        }
        continue;
      }
      let sink: FdTarget;
      if (target === '/dev/null') sink = { kind: 'null' };
      else if (target === '/dev/stdout') sink = { kind: 'stdout' };
      else if (target === '/dev/stderr') sink = { kind: 'stderr' };
      else {
        const path = resolvePath(state.cwd, target);
        const appendMode = redirect.op === '>>' || redirect.op === '2>>' || redirect.op === '&>>';
        try {
          const node = this.vfs.lookup(path);
          if (node?.kind === 'dir') return { error: `bash: ${target}: Is a directory\n` };
          if (!appendMode || !node) this.vfs.writeFile(path, '');
        } catch (error) {
          const code = (error as { code?: string }).code;
          return {
            error: `bash: ${target}: ${code === 'ENOENT' ? 'No such file or directory' : code === 'ENOTDIR' ? 'Not a directory' : (error as Error).message}\n`,
          };
        }
        sink = { kind: 'file', path };
      }
      if (redirect.op === '>' || redirect.op === '>>') fd1 = sink;
      else if (redirect.op === '2>' || redirect.op === '2>>') fd2 = sink;
      else fd1 = fd2 = sink;
    }
    return { ...(stdin !== undefined ? { stdin } : {}), fd1, fd2 };
  }

  private deliver(result: ShellResult, fd1: FdTarget, fd2: FdTarget): ShellResult {
    const out: ShellResult = { stdout: '', stderr: '', exitCode: result.exitCode };
    const send = (target: FdTarget, chunk: string): void => {
      if (chunk === '') return;
      if (target.kind === 'stdout') out.stdout += chunk;
      else if (target.kind === 'stderr') out.stderr += chunk;
      else if (target.kind === 'file') {
        try {
          const previous = this.vfs.readFile(target.path);
          const next = toBytes(chunk);
          const merged = new Uint8Array(previous.byteLength + next.byteLength);
          merged.set(previous);
          merged.set(next, previous.byteLength);
          this.vfs.writeFile(target.path, merged);
        } catch (error) {
          out.stderr += `bash: ${target.path}: ${(error as Error).message}\n`;
          out.exitCode = 1;
        }
      }
    };
    send(fd1, result.stdout);
    send(fd2, result.stderr);
    return out;
  }

  private lookupVar(name: string, state: ShellState): string {
    if (name === '?') return String(state.status);
    if (name === '#') return '0';
    if (name === '$') return '1';
    if (name === 'PWD') return state.cwd;
    return state.vars[name] ?? '';
  }

  /** Expansion without field splitting or globbing (assignments, redirect targets). */
  private expandJoined(word: Word, state: ShellState): string {
    return word.map((part) => (part.kind === 'lit' ? part.text : this.lookupVar(part.name, state))).join('');
  }

  /** Variable expansion, field splitting of unquoted expansions, then pathname expansion. */
  private expandWord(word: Word, state: ShellState): string[] {
    type Field = { text: string; pattern: string; glob: boolean };
    const fields: Field[] = [];
    let current: Field | null = null;
    const add = (value: string, quoted: boolean): void => {
      current ??= { text: '', pattern: '', glob: false };
      current.text += value;
      current.pattern += quoted ? value.replace(/[*?[\]\\]/g, '\\$&') : value;
      if (!quoted && hasGlob(value)) current.glob = true;
    };
    for (const part of word) {
      if (part.kind === 'lit') {
        if (!part.quoted && part.text.startsWith('~') && current === null && (part.text === '~' || part.text.startsWith('~/'))) {
          add(`${state.vars.HOME ?? '/'}${part.text.slice(1)}`, false);
        } else add(part.text, part.quoted);
        continue;
      }
      const value = this.lookupVar(part.name, state);
      if (part.quoted) {
        add(value, true);
        continue;
      }
      value.split(/[ \t\n]+/).forEach((piece, k) => {
        if (k > 0 && current) {
          fields.push(current);
          current = null;
        }
        if (piece !== '') add(piece, false);
      });
    }
    if (current) fields.push(current);
    return fields.flatMap((field) => {
      if (!field.glob) return [field.text];
      const matches = this.glob(field.pattern, state.cwd);
      return matches.length > 0 ? matches : [unescapeGlob(field.pattern)];
    });
  }

  /** Pathname expansion segment by segment; hidden names match only an explicit leading dot. */
  private glob(pattern: string, cwd: string): string[] {
    const absolute = pattern.startsWith('/');
    let candidates: { display: string; path: string }[] = [{ display: absolute ? '/' : '', path: absolute ? '/' : cwd }];
    const segments = pattern.split('/').filter((s, k) => (s !== '' || k === 0 ? s !== '' : false));
    for (const segment of segments) {
      const next: typeof candidates = [];
      for (const candidate of candidates) {
        const node = this.vfs.lookup(candidate.path);
        if (node?.kind !== 'dir') continue;
        const join = (name: string): { display: string; path: string } => ({
          display: candidate.display === '' ? name : joinDisplay(candidate.display, name),
          path: joinDisplay(candidate.path, name),
        });
        if (!hasGlob(segment)) {
          const name = unescapeGlob(segment);
          if (name === '.' || name === '..' || node.children.has(name)) next.push(join(name));
          continue;
        }
        const re = globToRegExp(segment);
        for (const name of [...node.children.keys()].sort()) {
          if (name.startsWith('.') && !segment.startsWith('.')) continue;
          if (re.test(name)) next.push(join(name));
        }
      }
      candidates = next;
    }
    return candidates.map((c) => c.display).filter((d) => d !== '' && d !== '/');
  }
}
