/** Text commands of the virtual shell: echo printf head tail wc grep sort uniq cut tr sed seq base64 … */
import { escapeRegExp, globToRegExp } from './glob.ts';
import { basename as baseOf, dirname as dirOf, joinDisplay } from './paths.ts';
import { lastValue, parseArgs } from './shell-args.ts';
import {
  abs,
  fail,
  fsMessage,
  joinLines,
  lines,
  ok,
  readText,
  unescapeBackslashes,
  type BuiltinCommand,
  type CommandContext,
} from './shell-command.ts';
import { toText } from './virtual-fs.ts';

export const trueCommand: BuiltinCommand = () => ok();
export const falseCommand: BuiltinCommand = () => ({ stdout: '', stderr: '', exitCode: 1 });

export const echo: BuiltinCommand = (ctx) => {
  let newline = true;
  let escapes = false;
  let i = 0;
  for (; i < ctx.args.length && /^-[neE]+$/.test(ctx.args[i]!); i++) {
    for (const flag of ctx.args[i]!.slice(1)) {
      if (flag === 'n') newline = false;
      else escapes = flag === 'e';
    }
  }
  const text = ctx.args.slice(i).join(' ');
  return ok(`${escapes ? unescapeBackslashes(text) : text}${newline ? '\n' : ''}`);
};

/** printf FORMAT [ARG...]: %s %d %i %f %x %c %%, escapes; the format repeats while args remain. */
export const printf: BuiltinCommand = (ctx) => {
  if (ctx.args.length === 0) return fail('printf: usage: printf format [arguments]', 2);
  const format = unescapeBackslashes(ctx.args[0]!);
  const args = ctx.args.slice(1);
  let out = '';
  let index = 0;
  do {
    let consumed = false;
    out += format.replace(/%(-?\d*)(?:\.(\d+))?([sdifxc%])/g, (_m, width: string, precision: string | undefined, conversion: string) => {
      if (conversion === '%') return '%';
      consumed = true;
      const arg = args[index++] ?? '';
      let text: string;
      if (conversion === 'd' || conversion === 'i') text = String(Math.trunc(Number(arg) || 0));
      else if (conversion === 'f') text = (Number(arg) || 0).toFixed(precision === undefined ? 6 : Number(precision));
      else if (conversion === 'x') text = Math.trunc(Number(arg) || 0).toString(16);
      else if (conversion === 'c') text = arg.slice(0, 1);
      else text = precision === undefined ? arg : arg.slice(0, Number(precision));
      const w = Number(width);
      if (!w) return text;
      return w < 0 ? text.padEnd(-w) : text.padStart(w);
    });
    if (!consumed) break;
  } while (index < args.length);
  return ok(out);
};

function inputs(ctx: CommandContext, operands: string[], command: string): { name: string; text?: string; error?: string }[] {
  if (operands.length === 0) return [{ name: '-', text: ctx.stdin }];
  return operands.map((name) => {
    try {
      return { name, text: readText(ctx, name) };
    } catch (error) {
      return { name, error: `${fsMessage(command, name, error)}\n` };
    }
  });
}

function headTail(command: 'head' | 'tail'): BuiltinCommand {
  return (ctx) => {
    const parsed = parseArgs(command, ctx.args, { flags: 'qv', values: 'nc', numericShorthand: 'n' });
    const bytes = lastValue(parsed, 'c');
    const spec = bytes ?? lastValue(parsed, 'n') ?? '10';
    const fromStart = command === 'tail' && spec.startsWith('+');
    const count = Math.abs(Number(spec));
    if (!Number.isFinite(count)) return fail(`${command}: invalid number of ${bytes ? 'bytes' : 'lines'}: '${spec}'`);
    const all = inputs(ctx, parsed.operands, command);
    let stdout = '';
    let stderr = '';
    all.forEach((input, k) => {
      if (input.error !== undefined) {
        stderr += input.error;
        return;
      }
      if (all.length > 1) stdout += `${k > 0 ? '\n' : ''}==> ${input.name} <==\n`;
      const text = input.text!;
      if (bytes !== undefined) {
        stdout +=
          command === 'head' ? text.slice(0, count) : fromStart ? text.slice(count - 1) : text.slice(Math.max(0, text.length - count));
        return;
      }
      const list = lines(text);
      const picked =
        command === 'head'
          ? list.slice(0, count)
          : fromStart
            ? list.slice(Math.max(0, count - 1))
            : list.slice(Math.max(0, list.length - count));
      // Keep a missing final newline missing, like coreutils.
      const lastIncluded = picked.length > 0 && (command === 'tail' || picked.length === list.length);
      stdout += joinLines(picked);
      if (lastIncluded && !text.endsWith('\n')) stdout = stdout.slice(0, -1);
    });
    return { stdout, stderr, exitCode: stderr ? 1 : 0 };
  };
}
export const head = headTail('head');
export const tail = headTail('tail');

export const wc: BuiltinCommand = (ctx) => {
  const parsed = parseArgs('wc', ctx.args, { flags: 'lwcm' });
  let wanted = ['l', 'w', 'c'].filter((f) => parsed.flags.has(f) || (f === 'c' && parsed.flags.has('m')));
  if (wanted.length === 0) wanted = ['l', 'w', 'c'];
  const all = inputs(ctx, parsed.operands, 'wc');
  const totals = [0, 0, 0];
  let stdout = '';
  let stderr = '';
  for (const input of all) {
    if (input.error !== undefined) {
      stderr += input.error;
      continue;
    }
    const text = input.text!;
    const counts = [(text.match(/\n/g) ?? []).length, text.split(/\s+/).filter(Boolean).length, new TextEncoder().encode(text).byteLength];
    counts.forEach((c, k) => (totals[k]! += c));
    const fields = wanted.map((f) => counts['lwc'.indexOf(f)]!);
    stdout += `${fields.join(' ')}${input.name === '-' ? '' : ` ${input.name}`}\n`;
  }
  if (all.length > 1) stdout += `${wanted.map((f) => totals['lwc'.indexOf(f)]!).join(' ')} total\n`;
  return { stdout, stderr, exitCode: stderr ? 1 : 0 };
};

const POSIX_CLASSES: Record<string, string> = {
  alpha: 'A-Za-z',
  digit: '0-9',
  alnum: 'A-Za-z0-9',
  upper: 'A-Z',
  lower: 'a-z',
  space: '\\s',
  blank: ' \\t',
  punct: '!-\\/:-@\\[-`{-~',
  xdigit: '0-9A-Fa-f',
  word: 'A-Za-z0-9_',
};

/**
 * Turns a grep/sed pattern into a JS RegExp source. Basic syntax swaps the meaning of escaped and
 * bare `| ( ) { } + ?` (POSIX BRE); everything else is JavaScript regex (documented deviation).
 */
export function toJsRegexSource(pattern: string, extended: boolean): string {
  let out = pattern.replace(/\[:([a-z]+):\]/g, (m, name: string) => POSIX_CLASSES[name] ?? m);
  if (extended) return out;
  let converted = '';
  for (let i = 0; i < out.length; i++) {
    const ch = out[i]!;
    if (ch === '\\' && i + 1 < out.length) {
      const next = out[++i]!;
      converted += '|(){}+?'.includes(next) ? next : `\\${next}`;
    } else converted += '|(){}+?'.includes(ch) ? `\\${ch}` : ch;
  }
  return converted;
}

/** grep [-rRnHhivlcoqsEFwx] [-e PAT] [--include=GLOB] PATTERN [PATH...]; exit 0 match, 1 none, 2 error. */
export const grep: BuiltinCommand = (ctx) => {
  let parsed;
  try {
    parsed = parseArgs('grep', ctx.args, {
      flags: 'rRnHhivlcoqsEFwxI',
      values: 'em',
      long: {
        include: 'value',
        exclude: 'value',
        recursive: 'flag',
        'ignore-case': 'flag',
        'line-number': 'flag',
        'files-with-matches': 'flag',
        color: 'value',
      },
    });
  } catch (error) {
    return fail((error as Error).message, 2);
  }
  const f = parsed.flags;
  const patterns = parsed.values.get('e') ?? [];
  if (patterns.length === 0) {
    if (parsed.operands.length === 0) return fail('Usage: grep [OPTION]... PATTERNS [FILE]...', 2);
    patterns.push(parsed.operands.shift()!);
  }
  const recursive = f.has('r') || f.has('R') || f.has('recursive');
  let regex: RegExp;
  try {
    const sources = patterns.flatMap((p) => p.split('\n')).map((p) => (f.has('F') ? escapeRegExp(p) : toJsRegexSource(p, f.has('E'))));
    let source = sources.map((s) => `(?:${s})`).join('|');
    if (f.has('w')) source = `(?<![A-Za-z0-9_])(?:${source})(?![A-Za-z0-9_])`;
    if (f.has('x')) source = `^(?:${source})$`;
    regex = new RegExp(source, f.has('i') || f.has('ignore-case') ? 'gi' : 'g');
  } catch (error) {
    return fail(`grep: invalid regular expression: ${(error as Error).message}`, 2);
  }
  const includes = (parsed.values.get('include') ?? []).map((g) => globToRegExp(g));
  const excludes = (parsed.values.get('exclude') ?? []).map((g) => globToRegExp(g));
  const wanted = (name: string): boolean =>
    (includes.length === 0 || includes.some((r) => r.test(name))) && !excludes.some((r) => r.test(name));
  const maxCount = lastValue(parsed, 'm') === undefined ? Infinity : Number(lastValue(parsed, 'm'));

  // Collect (display name, text) pairs; recursion walks sorted, preorder.
  const files: { name: string; text: string }[] = [];
  let stderr = '';
  const walk = (display: string): void => {
    const path = abs(ctx, display === '' ? '.' : display);
    for (const child of ctx.vfs.readdir(path)) {
      const childDisplay = display === '' ? child : joinDisplay(display, child);
      const node = ctx.vfs.lookup(abs(ctx, childDisplay));
      if (node?.kind === 'dir') walk(childDisplay);
      else if (node && wanted(child)) files.push({ name: childDisplay, text: toText(node.data) });
    }
  };
  const operands = parsed.operands.length > 0 ? parsed.operands : recursive ? [''] : ['-'];
  for (const operand of operands) {
    if (operand === '-') {
      files.push({ name: '(standard input)', text: ctx.stdin });
      continue;
    }
    const node = ctx.vfs.lookup(abs(ctx, operand === '' ? '.' : operand));
    if (!node) {
      if (!f.has('s')) stderr += `grep: ${operand}: No such file or directory\n`;
    } else if (node.kind === 'dir') {
      if (recursive) walk(operand);
      else if (!f.has('s')) stderr += `grep: ${operand}: Is a directory\n`;
    } else if (recursive ? wanted(baseOf(operand)) : true) {
      files.push({ name: operand, text: toText(node.data) });
    }
  }
  const showName = f.has('H') || (!f.has('h') && (operands.length > 1 || recursive));
  const invert = f.has('v');
  let out = '';
  let matched = false;
  for (const file of files) {
    if (file.text.includes('\0')) {
      // Binary content: report like GNU grep rather than dumping bytes into the model's context.
      regex.lastIndex = 0;
      if (regex.test(file.text) !== invert && !f.has('q')) out += `Binary file ${file.name} matches\n`;
      continue;
    }
    let count = 0;
    const fileLines = lines(file.text);
    for (let n = 0; n < fileLines.length && count < maxCount; n++) {
      const line = fileLines[n]!;
      regex.lastIndex = 0;
      const hit = regex.test(line);
      if (hit === invert) continue;
      count++;
      matched = true;
      if (f.has('q') || f.has('l') || f.has('c')) continue;
      const prefix = `${showName ? `${file.name}:` : ''}${f.has('n') || f.has('line-number') ? `${n + 1}:` : ''}`;
      if (f.has('o') && !invert) {
        for (const m of line.matchAll(regex)) if (m[0] !== '') out += `${prefix}${m[0]}\n`;
      } else out += `${prefix}${line}\n`;
    }
    if (f.has('q')) continue;
    if (f.has('l') || f.has('files-with-matches')) {
      if (count > 0) out += `${file.name}\n`;
    } else if (f.has('c')) out += `${showName ? `${file.name}:` : ''}${count}\n`;
  }
  if (f.has('q')) return { stdout: '', stderr: '', exitCode: matched ? 0 : stderr ? 2 : 1 };
  return { stdout: out, stderr, exitCode: stderr ? 2 : matched ? 0 : 1 };
};

export const sort: BuiltinCommand = (ctx) => {
  const parsed = parseArgs('sort', ctx.args, { flags: 'rnuf' });
  const all = inputs(ctx, parsed.operands, 'sort');
  const failed = all.find((i) => i.error !== undefined);
  if (failed) return fail(failed.error!, 2);
  let list = all.flatMap((i) => lines(i.text!));
  const fold = parsed.flags.has('f');
  const key = (s: string): string => (fold ? s.toLowerCase() : s);
  if (parsed.flags.has('n')) list.sort((a, b) => (parseFloat(a) || 0) - (parseFloat(b) || 0) || (a < b ? -1 : a > b ? 1 : 0));
  else list.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  if (parsed.flags.has('r')) list.reverse();
  if (parsed.flags.has('u')) list = list.filter((line, k) => k === 0 || key(list[k - 1]!) !== key(line));
  return ok(joinLines(list));
};

export const uniq: BuiltinCommand = (ctx) => {
  const parsed = parseArgs('uniq', ctx.args, { flags: 'cdu' });
  const all = inputs(ctx, parsed.operands.slice(0, 1), 'uniq');
  if (all[0]!.error !== undefined) return fail(all[0]!.error);
  const groups: { line: string; count: number }[] = [];
  for (const line of lines(all[0]!.text!)) {
    const last = groups[groups.length - 1];
    if (last && last.line === line) last.count++;
    else groups.push({ line, count: 1 });
  }
  const kept = groups.filter((g) => (parsed.flags.has('d') ? g.count > 1 : parsed.flags.has('u') ? g.count === 1 : true));
  return ok(joinLines(kept.map((g) => (parsed.flags.has('c') ? `${String(g.count).padStart(7)} ${g.line}` : g.line))));
};

/** Parses cut's LIST (`1,3-5,7-`) into a membership test over 1-based positions. */
function fieldSelector(list: string): ((n: number) => boolean) | undefined {
  const ranges: [number, number][] = [];
  for (const part of list.split(',')) {
    const m = /^(\d*)(-?)(\d*)$/.exec(part);
    if (!m || (m[1] === '' && m[3] === '')) return undefined;
    const from = m[1] === '' ? 1 : Number(m[1]);
    const to = m[2] === '' ? from : m[3] === '' ? Infinity : Number(m[3]);
    ranges.push([from, to]);
  }
  return (n) => ranges.some(([a, b]) => n >= a && n <= b);
}

export const cut: BuiltinCommand = (ctx) => {
  const parsed = parseArgs('cut', ctx.args, { flags: 's', values: 'dfc' });
  const fields = lastValue(parsed, 'f');
  const chars = lastValue(parsed, 'c');
  const select = fieldSelector(fields ?? chars ?? '');
  if (!select) return fail('cut: you must specify a list of bytes, characters, or fields');
  const delimiter = lastValue(parsed, 'd') ?? '\t';
  const all = inputs(ctx, parsed.operands, 'cut');
  const failed = all.find((i) => i.error !== undefined);
  if (failed) return fail(failed.error!);
  const out: string[] = [];
  for (const line of all.flatMap((i) => lines(i.text!))) {
    if (chars !== undefined) out.push([...line].filter((_c, k) => select(k + 1)).join(''));
    else if (!line.includes(delimiter)) {
      if (!parsed.flags.has('s')) out.push(line);
    } else
      out.push(
        line
          .split(delimiter)
          .filter((_p, k) => select(k + 1))
          .join(delimiter),
      );
  }
  return ok(joinLines(out));
};

/** Expands a tr SET: escapes, `a-z` ranges and `[:upper:]`-style classes. */
function expandSet(set: string): string[] {
  const text = unescapeBackslashes(set)
    .replaceAll('[:upper:]', 'A-Z')
    .replaceAll('[:lower:]', 'a-z')
    .replaceAll('[:digit:]', '0-9')
    .replaceAll('[:space:]', ' \t\n\r\v\f')
    .replaceAll('[:alpha:]', 'a-zA-Z')
    .replaceAll('[:alnum:]', 'a-zA-Z0-9');
  const chars = [...text];
  const out: string[] = [];
  for (let i = 0; i < chars.length; i++) {
    if (chars[i + 1] === '-' && i + 2 < chars.length) {
      for (let c = chars[i]!.codePointAt(0)!; c <= chars[i + 2]!.codePointAt(0)!; c++) out.push(String.fromCodePoint(c));
      i += 2;
    } else out.push(chars[i]!);
  }
  return out;
}

export const tr: BuiltinCommand = (ctx) => {
  const parsed = parseArgs('tr', ctx.args, { flags: 'ds' });
  const from = expandSet(parsed.operands[0] ?? '');
  if (parsed.flags.has('d')) return ok([...ctx.stdin].filter((c) => !from.includes(c)).join(''));
  if (parsed.operands.length < 2) return fail('tr: missing operand after the first set');
  const to = expandSet(parsed.operands[1]!);
  const map = new Map(from.map((c, k) => [c, to[Math.min(k, to.length - 1)] ?? '']));
  let out = [...ctx.stdin].map((c) => map.get(c) ?? c).join('');
  if (parsed.flags.has('s')) {
    const squeeze = new Set(to);
    out = [...out].filter((c, k, arr) => !(k > 0 && c === arr[k - 1] && squeeze.has(c))).join('');
  }
  return ok(out);
};

type SedAddress = { line: number } | { last: true } | { regex: RegExp };
interface SedCommand {
  address?: SedAddress;
  op: 's' | 'p' | 'd';
  regex?: RegExp;
  replacement?: string;
  global?: boolean;
  print?: boolean;
}

/** Parses the subset: `[addr]s/re/rep/[gip]`, `[addr]p`, `[addr]d`; addr = N, `$`, `/re/`. */
function parseSed(script: string, extended: boolean): SedCommand[] {
  const commands: SedCommand[] = [];
  let i = 0;
  const readDelimited = (delimiter: string): string => {
    let out = '';
    while (i < script.length && script[i] !== delimiter) {
      if (script[i] === '\\' && script[i + 1] === delimiter) {
        out += delimiter;
        i += 2;
      } else if (script[i] === '\\' && i + 1 < script.length) {
        out += script.slice(i, i + 2);
        i += 2;
      } else out += script[i++];
    }
    if (script[i] !== delimiter) throw new Error(`sed: unterminated command: '${script}'`);
    i++;
    return out;
  };
  while (i < script.length) {
    while (i < script.length && /[\s;]/.test(script[i]!)) i++;
    if (i >= script.length) break;
    let address: SedAddress | undefined;
    if (/\d/.test(script[i]!)) {
      const m = /^\d+/.exec(script.slice(i))!;
      address = { line: Number(m[0]) };
      i += m[0].length;
    } else if (script[i] === '$') {
      address = { last: true };
      i++;
    } else if (script[i] === '/') {
      i++;
      address = { regex: new RegExp(toJsRegexSource(readDelimited('/'), extended)) };
    }
    const op = script[i++];
    if (op === 's') {
      const delimiter = script[i++]!;
      const pattern = readDelimited(delimiter);
      const replacement = readDelimited(delimiter);
      const flags = /^[gip0-9]*/.exec(script.slice(i))![0];
      i += flags.length;
      commands.push({
        ...(address ? { address } : {}),
        op: 's',
        regex: new RegExp(toJsRegexSource(pattern, extended), `${flags.includes('g') ? 'g' : ''}${flags.includes('i') ? 'i' : ''}`),
        replacement,
        global: flags.includes('g'),
        print: flags.includes('p'),
      });
    } else if (op === 'p' || op === 'd') {
      commands.push({ ...(address ? { address } : {}), op });
    } else {
      throw new Error(`sed: unsupported command '${op ?? ''}' (supported: s, p, d)`);
    }
  }
  return commands;
}

/** sed replacement: `&` is the match, `\1`–`\9` groups, `\n` newline, `\&` a literal ampersand. */
function sedReplace(replacement: string, match: string, groups: (string | undefined)[]): string {
  return replacement.replace(/\\([0-9n&\\])|&/g, (token, escaped: string | undefined) => {
    if (escaped === undefined) return match;
    if (escaped === 'n') return '\n';
    if (escaped === '&' || escaped === '\\') return escaped;
    return escaped === '0' ? match : (groups[Number(escaped) - 1] ?? '');
  });
}

export const sed: BuiltinCommand = (ctx) => {
  let parsed;
  let program: SedCommand[];
  try {
    parsed = parseArgs('sed', ctx.args, { flags: 'niEr', values: 'e' });
    const scripts = parsed.values.get('e') ?? [];
    if (scripts.length === 0) {
      if (parsed.operands.length === 0) return fail('Usage: sed [OPTION]... {script} [input-file]...');
      scripts.push(parsed.operands.shift()!);
    }
    program = parseSed(scripts.join('\n'), parsed.flags.has('E') || parsed.flags.has('r'));
  } catch (error) {
    return fail((error as Error).message);
  }
  const quiet = parsed.flags.has('n');
  const run = (text: string): string => {
    const list = lines(text);
    let out = '';
    list.forEach((original, index) => {
      let line = original;
      let deleted = false;
      for (const command of program) {
        const a = command.address;
        if (a && ('line' in a ? a.line !== index + 1 : 'last' in a ? index !== list.length - 1 : !a.regex.test(line))) continue;
        if (command.op === 'd') {
          deleted = true;
          break;
        }
        if (command.op === 'p') out += `${line}\n`;
        else {
          command.regex!.lastIndex = 0;
          if (!command.regex!.test(line)) continue;
          command.regex!.lastIndex = 0;
          line = line.replace(command.regex!, (match: string, ...rest: unknown[]) => {
            const groups = rest.slice(
              0,
              rest.findIndex((r) => typeof r === 'number'),
            ) as (string | undefined)[];
            return sedReplace(command.replacement!, match, groups);
          });
          if (command.print) out += `${line}\n`;
        }
      }
      if (!deleted && !quiet) out += `${line}\n`;
    });
    return out;
  };
  if (parsed.flags.has('i')) {
    let stderr = '';
    for (const file of parsed.operands) {
      try {
        ctx.vfs.writeFile(abs(ctx, file), run(readText(ctx, file)));
      } catch (error) {
        stderr += `${fsMessage('sed', file, error)}\n`;
      }
    }
    return { stdout: '', stderr, exitCode: stderr ? 1 : 0 };
  }
  const all = inputs(ctx, parsed.operands, 'sed');
  let stdout = '';
  let stderr = '';
  for (const input of all) {
    if (input.error !== undefined) stderr += input.error;
    else stdout += run(input.text!);
  }
  return { stdout, stderr, exitCode: stderr ? 1 : 0 };
};

export const basename: BuiltinCommand = (ctx) => {
  if (ctx.args.length === 0) return fail('basename: missing operand');
  let name = baseOf(ctx.args[0]!);
  const suffix = ctx.args[1];
  if (suffix && name.endsWith(suffix) && name !== suffix) name = name.slice(0, -suffix.length);
  return ok(`${name}\n`);
};

export const dirname: BuiltinCommand = (ctx) => {
  if (ctx.args.length === 0) return fail('dirname: missing operand');
  return ok(
    joinLines(
      ctx.args.map((p) => (p.includes('/') ? (p.startsWith('/') ? dirOf(p) : p.replace(/\/+$/, '').replace(/\/[^/]*$/, '') || '/') : '.')),
    ),
  );
};

export const seq: BuiltinCommand = (ctx) => {
  const nums = ctx.args.map(Number);
  if (nums.length === 0 || nums.length > 3 || nums.some((n) => !Number.isFinite(n))) return fail('seq: invalid arguments');
  const [first, step, last] =
    nums.length === 1 ? [1, 1, nums[0]!] : nums.length === 2 ? [nums[0]!, 1, nums[1]!] : [nums[0]!, nums[1]!, nums[2]!];
  if (step === 0) return fail('seq: invalid Zero increment value');
  const out: string[] = [];
  // Bounded so `seq 1 1e12` cannot exhaust isolate memory.
  for (let n = first; step > 0 ? n <= last : n >= last; n += step) {
    out.push(String(n));
    if (out.length > 1_000_000) return fail('seq: too many numbers (limit 1000000)', 1, joinLines(out));
  }
  return ok(joinLines(out));
};

export const env: BuiltinCommand = (ctx) => {
  if (ctx.args.length > 0) return fail('env: running commands via env is not supported', 2);
  return ok(joinLines(Object.entries(ctx.env).map(([k, v]) => `${k}=${v}`)));
};

export const base64: BuiltinCommand = (ctx) => {
  const parsed = parseArgs('base64', ctx.args, { flags: 'dw', long: { decode: 'flag' } });
  const file = parsed.operands[0];
  let data: Uint8Array;
  try {
    data = file === undefined || file === '-' ? new TextEncoder().encode(ctx.stdin) : ctx.vfs.readFile(abs(ctx, file));
  } catch (error) {
    return fail(fsMessage('base64', file!, error));
  }
  if (parsed.flags.has('d') || parsed.flags.has('decode')) {
    try {
      const binary = atob(toText(data).replace(/\s+/g, ''));
      return ok(toText(Uint8Array.from(binary, (c) => c.charCodeAt(0))));
    } catch {
      return fail('base64: invalid input');
    }
  }
  let binary = '';
  for (const byte of data) binary += String.fromCharCode(byte);
  const encoded = btoa(binary);
  return ok(encoded === '' ? '' : `${encoded.match(/.{1,76}/g)!.join('\n')}\n`);
};

/** test / [: -e -f -d -s -z -n, = != ==, -eq -ne -lt -le -gt -ge, and leading `!`. */
export function testCommand(bracket: boolean): BuiltinCommand {
  return (ctx) => {
    let args = ctx.args;
    if (bracket) {
      if (args[args.length - 1] !== ']') return fail("[: missing ']'", 2);
      args = args.slice(0, -1);
    }
    let negate = false;
    while (args[0] === '!' && args.length > 1) {
      negate = !negate;
      args = args.slice(1);
    }
    let result: boolean;
    const [a, b, c] = args;
    if (args.length === 0) result = false;
    else if (args.length === 1) result = a !== '';
    else if (args.length === 2) {
      const node = ctx.vfs.lookup(abs(ctx, b!));
      switch (a) {
        case '-e':
          result = node !== undefined;
          break;
        case '-f':
          result = node?.kind === 'file';
          break;
        case '-d':
          result = node?.kind === 'dir';
          break;
        case '-s':
          result = node?.kind === 'file' && node.data.byteLength > 0;
          break;
        case '-z':
          result = b === '';
          break;
        case '-n':
          result = b !== '';
          break;
        default:
          return fail(`test: ${a}: unary operator expected`, 2);
      }
    } else if (args.length === 3) {
      const x = Number(a);
      const y = Number(c);
      switch (b) {
        case '=':
        case '==':
          result = a === c;
          break;
        case '!=':
          result = a !== c;
          break;
        case '-eq':
          result = x === y;
          break;
        case '-ne':
          result = x !== y;
          break;
        case '-lt':
          result = x < y;
          break;
        case '-le':
          result = x <= y;
          break;
        case '-gt':
          result = x > y;
          break;
        case '-ge':
          result = x >= y;
          break;
        default:
          return fail(`test: ${b}: binary operator expected`, 2);
      }
    } else return fail('test: too many arguments', 2);
    return { stdout: '', stderr: '', exitCode: result !== negate ? 0 : 1 };
  };
}
