/** Filesystem commands of the virtual shell: cat ls pwd mkdir rmdir rm touch cp mv tee find. */
import { globToRegExp } from './glob.ts';
import { basename, joinDisplay } from './paths.ts';
import { parseArgs } from './shell-args.ts';
import { abs, fail, fsMessage, joinLines, ok, readText, type BuiltinCommand, type CommandContext } from './shell-command.ts';
import { toBytes, VirtualFsError } from './virtual-fs.ts';

export const cat: BuiltinCommand = (ctx) => {
  const files = ctx.args.filter((a) => a !== '--');
  if (files.length === 0) return ok(ctx.stdin);
  let stdout = '';
  let stderr = '';
  for (const file of files) {
    try {
      stdout += readText(ctx, file);
    } catch (error) {
      stderr += `${fsMessage('cat', file, error)}\n`;
    }
  }
  return { stdout, stderr, exitCode: stderr ? 1 : 0 };
};

export const pwd: BuiltinCommand = (ctx) => ok(`${ctx.cwd}\n`);

export const ls: BuiltinCommand = (ctx) => {
  const parsed = parseArgs('ls', ctx.args, { flags: 'laR1AhF' });
  const all = parsed.flags.has('a');
  const almostAll = parsed.flags.has('A');
  const long = parsed.flags.has('l');
  const recursive = parsed.flags.has('R');
  const targets = parsed.operands.length > 0 ? parsed.operands : ['.'];
  let stderr = '';
  const fileLines: string[] = [];
  const dirs: string[] = [];
  for (const target of targets) {
    const node = ctx.vfs.lookup(abs(ctx, target));
    if (!node) stderr += `ls: cannot access '${target}': No such file or directory\n`;
    else if (node.kind === 'file') fileLines.push(long ? longLine(ctx, target, target) : target);
    else dirs.push(target);
  }
  const sections: string[] = [];
  if (fileLines.length > 0) sections.push(joinLines(fileLines));
  const showHeaders = recursive || targets.length > 1;
  const listDir = (dir: string): void => {
    let names = ctx.vfs.readdir(abs(ctx, dir)).filter((n) => all || almostAll || !n.startsWith('.'));
    if (all) names = ['.', '..', ...names];
    const body = names.map((n) => (long ? longLine(ctx, joinDisplay(dir, n), n) : n));
    sections.push(`${showHeaders ? `${dir}:\n` : ''}${long ? `total ${names.length}\n` : ''}${joinLines(body)}`);
    if (recursive) {
      for (const n of names) {
        if (n === '.' || n === '..') continue;
        const child = joinDisplay(dir, n);
        if (ctx.vfs.lookup(abs(ctx, child))?.kind === 'dir') listDir(child);
      }
    }
  };
  for (const dir of dirs) listDir(dir);
  return { stdout: sections.join('\n'), stderr, exitCode: stderr ? 2 : 0 };
};

function longLine(ctx: CommandContext, path: string, name: string): string {
  const stat = ctx.vfs.stat(abs(ctx, path));
  const mode = stat.isDirectory ? 'drwxr-xr-x' : '-rw-r--r--';
  const mtime = stat.mtime ? stat.mtime.toISOString().slice(0, 16).replace('T', ' ') : '';
  return `${mode} 1 user user ${String(stat.size ?? 0).padStart(8)} ${mtime} ${name}`;
}

export const mkdir: BuiltinCommand = (ctx) => {
  const parsed = parseArgs('mkdir', ctx.args, { flags: 'pv' });
  if (parsed.operands.length === 0) return fail('mkdir: missing operand');
  let stderr = '';
  for (const dir of parsed.operands) {
    try {
      ctx.vfs.mkdir(abs(ctx, dir), parsed.flags.has('p'));
    } catch (error) {
      const reason = (error as VirtualFsError).code === 'EEXIST' ? 'File exists' : fsMessage('', '', error).slice(4);
      stderr += `mkdir: cannot create directory '${dir}': ${reason}\n`;
    }
  }
  return { stdout: '', stderr, exitCode: stderr ? 1 : 0 };
};

export const rmdir: BuiltinCommand = (ctx) => {
  let stderr = '';
  for (const dir of ctx.args) {
    try {
      ctx.vfs.rmdir(abs(ctx, dir));
    } catch (error) {
      stderr += `rmdir: failed to remove '${dir}': ${fsMessage('', '', error).slice(4)}\n`;
    }
  }
  return { stdout: '', stderr, exitCode: stderr ? 1 : 0 };
};

export const rm: BuiltinCommand = (ctx) => {
  const parsed = parseArgs('rm', ctx.args, { flags: 'rRfdiv', long: { recursive: 'flag', force: 'flag' } });
  const recursive = parsed.flags.has('r') || parsed.flags.has('R') || parsed.flags.has('recursive');
  const force = parsed.flags.has('f') || parsed.flags.has('force');
  if (parsed.operands.length === 0 && !force) return fail('rm: missing operand');
  let stderr = '';
  for (const target of parsed.operands) {
    const path = abs(ctx, target);
    const node = ctx.vfs.lookup(path);
    if (!node) {
      if (!force) stderr += `rm: cannot remove '${target}': No such file or directory\n`;
    } else if (node.kind === 'dir' && !recursive) {
      stderr += `rm: cannot remove '${target}': Is a directory\n`;
    } else if (path === '/') {
      stderr += `rm: it is dangerous to operate recursively on '/'\n`;
    } else {
      ctx.vfs.rm(path, { recursive: true, force: true });
    }
  }
  return { stdout: '', stderr, exitCode: stderr ? 1 : 0 };
};

export const touch: BuiltinCommand = (ctx) => {
  const parsed = parseArgs('touch', ctx.args, { flags: 'acm' });
  if (parsed.operands.length === 0) return fail('touch: missing file operand');
  let stderr = '';
  for (const file of parsed.operands) {
    try {
      ctx.vfs.touch(abs(ctx, file));
    } catch (error) {
      stderr += `touch: cannot touch '${file}': ${fsMessage('', '', error).slice(4)}\n`;
    }
  }
  return { stdout: '', stderr, exitCode: stderr ? 1 : 0 };
};

/** Shared by cp and mv: a directory destination receives the sources by basename. */
function transfer(ctx: CommandContext, command: 'cp' | 'mv', sources: string[], dest: string, recursive: boolean): string {
  const destPath = abs(ctx, dest);
  const destIsDir = ctx.vfs.lookup(destPath)?.kind === 'dir';
  if (sources.length > 1 && !destIsDir) return `${command}: target '${dest}' is not a directory\n`;
  let stderr = '';
  for (const source of sources) {
    const sourcePath = abs(ctx, source);
    const node = ctx.vfs.lookup(sourcePath);
    if (!node) {
      stderr += `${command}: cannot stat '${source}': No such file or directory\n`;
      continue;
    }
    if (node.kind === 'dir' && command === 'cp' && !recursive) {
      stderr += `cp: -r not specified; omitting directory '${source}'\n`;
      continue;
    }
    const target = destIsDir ? joinDisplay(destPath, basename(sourcePath)) : destPath;
    try {
      if (command === 'cp') ctx.vfs.copy(sourcePath, target);
      else ctx.vfs.rename(sourcePath, target);
    } catch (error) {
      stderr += `${command}: cannot ${command === 'cp' ? 'copy' : 'move'} '${source}' to '${dest}': ${fsMessage('', '', error).slice(4)}\n`;
    }
  }
  return stderr;
}

export const cp: BuiltinCommand = (ctx) => {
  const parsed = parseArgs('cp', ctx.args, { flags: 'rRfapv' });
  if (parsed.operands.length < 2)
    return fail(`cp: missing ${parsed.operands.length === 0 ? 'file operand' : `destination file operand after '${parsed.operands[0]}'`}`);
  const dest = parsed.operands.pop()!;
  const stderr = transfer(ctx, 'cp', parsed.operands, dest, parsed.flags.has('r') || parsed.flags.has('R') || parsed.flags.has('a'));
  return { stdout: '', stderr, exitCode: stderr ? 1 : 0 };
};

export const mv: BuiltinCommand = (ctx) => {
  const parsed = parseArgs('mv', ctx.args, { flags: 'fnv' });
  if (parsed.operands.length < 2)
    return fail(`mv: missing ${parsed.operands.length === 0 ? 'file operand' : `destination file operand after '${parsed.operands[0]}'`}`);
  const dest = parsed.operands.pop()!;
  const stderr = transfer(ctx, 'mv', parsed.operands, dest, true);
  return { stdout: '', stderr, exitCode: stderr ? 1 : 0 };
};

export const tee: BuiltinCommand = (ctx) => {
  const parsed = parseArgs('tee', ctx.args, { flags: 'a' });
  let stderr = '';
  for (const file of parsed.operands) {
    const path = abs(ctx, file);
    try {
      const previous = parsed.flags.has('a') && ctx.vfs.lookup(path)?.kind === 'file' ? ctx.vfs.readFile(path) : new Uint8Array();
      const next = toBytes(ctx.stdin);
      const merged = new Uint8Array(previous.byteLength + next.byteLength);
      merged.set(previous);
      merged.set(next, previous.byteLength);
      ctx.vfs.writeFile(path, merged);
    } catch (error) {
      stderr += `${fsMessage('tee', file, error)}\n`;
    }
  }
  return { stdout: ctx.stdin, stderr, exitCode: stderr ? 1 : 0 };
};

/** find PATH... [-name P] [-iname P] [-type f|d] [-maxdepth N] [-mindepth N] [-print]; preorder, sorted. */
export const find: BuiltinCommand = (ctx) => {
  const roots: string[] = [];
  let i = 0;
  while (i < ctx.args.length && !ctx.args[i]!.startsWith('-') && ctx.args[i] !== '!') roots.push(ctx.args[i++]!);
  if (roots.length === 0) roots.push('.');
  const tests: ((name: string, isDir: boolean, path: string) => boolean)[] = [];
  let maxDepth = Infinity;
  let minDepth = 0;
  let negate = false;
  const push = (test: (name: string, isDir: boolean, path: string) => boolean): void => {
    const n = negate;
    tests.push(n ? (a, b, c) => !test(a, b, c) : test);
    negate = false;
  };
  while (i < ctx.args.length) {
    const predicate = ctx.args[i++]!;
    const value = (): string => {
      if (i >= ctx.args.length) throw new Error(`find: missing argument to '${predicate}'`);
      return ctx.args[i++]!;
    };
    try {
      switch (predicate) {
        case '-name': {
          const re = globToRegExp(value());
          push((name) => re.test(name));
          break;
        }
        case '-iname': {
          const re = globToRegExp(value(), 'i');
          push((name) => re.test(name));
          break;
        }
        case '-path': {
          const re = new RegExp(globToRegExp(value()).source.replaceAll('[^/]', '.'));
          push((_n, _d, path) => re.test(path));
          break;
        }
        case '-type': {
          const type = value();
          if (type !== 'f' && type !== 'd') return fail(`find: unsupported -type '${type}' (only f and d)`);
          push((_n, isDir) => (type === 'd') === isDir);
          break;
        }
        case '-maxdepth':
          maxDepth = Number(value());
          break;
        case '-mindepth':
          minDepth = Number(value());
          break;
        case '!':
        case '-not':
          negate = !negate;
          break;
        case '-print':
        case '-a':
        case '-and':
          break;
        default:
          return fail(`find: unknown predicate '${predicate}'`);
      }
    } catch (error) {
      return fail((error as Error).message);
    }
  }
  const out: string[] = [];
  let stderr = '';
  const visit = (display: string, depth: number): void => {
    const node = ctx.vfs.lookup(abs(ctx, display));
    if (!node) return;
    const isDir = node.kind === 'dir';
    const name = depth === 0 ? basename(display) || display : basename(display);
    if (depth >= minDepth && tests.every((t) => t(name, isDir, display))) out.push(display);
    if (isDir && depth < maxDepth) for (const child of ctx.vfs.readdir(abs(ctx, display))) visit(joinDisplay(display, child), depth + 1);
  };
  for (const root of roots) {
    if (!ctx.vfs.exists(abs(ctx, root))) stderr += `find: '${root}': No such file or directory\n`;
    else visit(root, 0);
  }
  return { stdout: joinLines(out), stderr, exitCode: stderr ? 1 : 0 };
};
