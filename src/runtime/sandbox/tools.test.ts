import { describe, expect, it } from 'vitest';
import { virtualSandbox } from './virtual.ts';
import {
  createBashTool,
  createEditTool,
  createGlobTool,
  createGrepTool,
  createReadTool,
  createWriteTool,
  defaultSandboxTools,
  shellQuote,
} from './tools.ts';
import type { AgentTool, Sandbox, ShellResult } from './types.ts';

async function make(files: Record<string, string> = {}, commands = {}): Promise<Sandbox> {
  return virtualSandbox({ files, commands }).createSandbox({ id: 't' });
}
async function call(tool: AgentTool, params: Record<string, unknown>, signal?: AbortSignal): Promise<string> {
  const result = await tool.execute('call-1', params, signal);
  const part = result.content[0]!;
  return part.type === 'text' ? part.text : '';
}
const numbered = (n: number): string => Array.from({ length: n }, (_, i) => `line ${i + 1}`).join('\n');

describe('default tool set', () => {
  it('has the six tools with JSON Schema parameters', async () => {
    const tools = defaultSandboxTools(await make());
    expect(tools.map((t) => t.name)).toEqual(['read', 'write', 'edit', 'bash', 'grep', 'glob']);
    for (const tool of tools) expect(tool.parameters.type).toBe('object');
    expect(tools[0]!.parameters.required).toEqual(['path']);
  });

  it('every tool rejects a pre-aborted signal with "Operation aborted"', async () => {
    const sb = await make({ 'f.txt': 'x' });
    for (const tool of defaultSandboxTools(sb)) {
      await expect(
        tool.execute('c', { path: 'f.txt', content: 'y', oldText: 'x', newText: 'z', command: 'echo', pattern: 'x' }, AbortSignal.abort()),
      ).rejects.toThrow('Operation aborted');
    }
    expect(await sb.readFile('f.txt')).toBe('x');
  });

  it('rejects bad arguments with a clear message', async () => {
    await expect(createReadTool(await make()).execute('c', { path: 3 })).rejects.toThrow('Invalid arguments for tool "read": path:');
  });
});

describe('read', () => {
  it('reads whole small files, and pages with offset/limit', async () => {
    const read = createReadTool(await make({ 'a.txt': 'one\ntwo\nthree\n' }));
    expect(await call(read, { path: 'a.txt' })).toBe('one\ntwo\nthree');
    expect(await call(read, { path: 'a.txt', offset: 2, limit: 1 })).toBe('two\n\n[Showing lines 2-2 of 3. Use offset=3 to continue.]');
    expect(await call(read, { path: 'a.txt', offset: 3 })).toBe('three');
  });

  it('errors: offset past the end, missing file', async () => {
    const read = createReadTool(await make({ 'a.txt': 'one\ntwo\n' }));
    await expect(call(read, { path: 'a.txt', offset: 5 })).rejects.toThrow('Offset 5 is beyond end of file (2 lines total)');
    await expect(call(read, { path: 'nope.txt' })).rejects.toThrow("ENOENT: no such file or directory, open '/workspace/nope.txt'");
  });

  it('head-truncates at 2000 lines', async () => {
    const read = createReadTool(await make({ 'big.txt': numbered(2500) }));
    const text = await call(read, { path: 'big.txt' });
    expect(text.endsWith('line 2000\n\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]')).toBe(true);
    expect(await call(read, { path: 'big.txt', offset: 2001 })).toBe(numbered(2500).split('\n').slice(2000).join('\n'));
  });

  it('head-truncates at 51200 chars, never mid-line', async () => {
    const line = 'x'.repeat(99);
    const read = createReadTool(await make({ 'wide.txt': Array(1000).fill(line).join('\n') }));
    const text = await call(read, { path: 'wide.txt' });
    // 512 lines of 99 chars + 511 newlines = 51199 ≤ 51200; the 513th would exceed.
    expect(text).toBe(`${Array(512).fill(line).join('\n')}\n\n[Showing lines 1-512 of 1000. Use offset=513 to continue.]`);
  });

  it('a single over-long first line shows its first 50 KB and says offset cannot reach the rest', async () => {
    const read = createReadTool(await make({ 'one.txt': `${'y'.repeat(60_000)}\nsecond` }));
    const text = await call(read, { path: 'one.txt' });
    expect(text.startsWith(`${'y'.repeat(51_200)}\n\n[Line 1 is 60000 characters long; only its first 51200 are shown.`)).toBe(true);
    expect(text).toContain('cannot be reached with offset/limit');
  });
});

describe('write', () => {
  it('creates parents, overwrites, reports the length', async () => {
    const sb = await make({ 'a.txt': 'old' });
    const write = createWriteTool(sb);
    expect(await call(write, { path: 'new/dir/f.txt', content: 'hello' })).toBe('Successfully wrote 5 bytes to new/dir/f.txt');
    expect(await sb.readFile('new/dir/f.txt')).toBe('hello');
    await call(write, { path: 'a.txt', content: 'replaced' });
    expect(await sb.readFile('a.txt')).toBe('replaced');
  });
});

describe('edit', () => {
  it('replaces a unique match literally', async () => {
    const sb = await make({ 'f.ts': 'const a = 1;\nconst b = 2;\n' });
    const edit = createEditTool(sb);
    expect(await call(edit, { path: 'f.ts', oldText: 'const b = 2;', newText: 'const b = "$&$1";' })).toBe(
      'Successfully replaced text in f.ts.',
    );
    expect(await sb.readFile('f.ts')).toBe('const a = 1;\nconst b = "$&$1";\n');
  });

  it('errors: empty oldText, no match, several matches, missing file', async () => {
    const edit = createEditTool(await make({ 'f.txt': 'x x x' }));
    await expect(call(edit, { path: 'f.txt', oldText: '', newText: 'y' })).rejects.toThrow('oldText must not be empty');
    await expect(call(edit, { path: 'f.txt', oldText: 'zzz', newText: 'y' })).rejects.toThrow(
      'Could not find oldText in f.txt. It must match the file exactly, including whitespace and indentation',
    );
    await expect(call(edit, { path: 'f.txt', oldText: 'x', newText: 'y' })).rejects.toThrow(
      'Found 3 occurrences of oldText in f.txt. Add more surrounding context to oldText to make it unique, or set replaceAll to true',
    );
    await expect(call(edit, { path: 'nope.txt', oldText: 'a', newText: 'b' })).rejects.toThrow('File not found: nope.txt');
  });

  it('replaceAll reports the count', async () => {
    const sb = await make({ 'f.txt': 'x x x' });
    expect(await call(createEditTool(sb), { path: 'f.txt', oldText: 'x', newText: 'y', replaceAll: true })).toBe(
      'Replaced 3 occurrences in f.txt',
    );
    expect(await sb.readFile('f.txt')).toBe('y y y');
  });

  it('parallel edits of one file (two spellings) are serialized, none lost', async () => {
    const sb = await make({ 'f.txt': 'a b c' });
    const edit = createEditTool(sb);
    await Promise.all([
      call(edit, { path: 'f.txt', oldText: 'a', newText: 'A' }),
      call(edit, { path: './sub/../f.txt', oldText: 'b', newText: 'B' }),
      call(edit, { path: '/workspace/f.txt', oldText: 'c', newText: 'C' }),
    ]);
    expect(await sb.readFile('f.txt')).toBe('A B C');
  });
});

describe('bash', () => {
  it('combines stdout and stderr, trims, reports non-zero exits', async () => {
    const bash = createBashTool(await make());
    // Literally stdout + '\n' + stderr, then trimmed (tools.md §10).
    expect(await call(bash, { command: 'echo out; echo err >&2' })).toBe('out\n\nerr');
    expect(await call(bash, { command: 'echo only-err >&2' })).toBe('only-err');
    expect(await call(bash, { command: 'true' })).toBe('(no output)');
    expect(await call(bash, { command: 'echo partial; exit 3' })).toBe('partial\n\nCommand exited with code 3');
    expect(await call(bash, { command: 'nosuch' })).toBe('nosuch: command not found\n\nCommand exited with code 127');
  });

  it('tail-truncates to the last 2000 lines', async () => {
    const bash = createBashTool(await make());
    const text = await call(bash, { command: 'seq 2500' });
    expect(text.startsWith('501\n502\n')).toBe(true);
    expect(text.endsWith('2500\n\n[Showing lines 501-2500 of 2500. Earlier output was truncated.]')).toBe(true);
  });

  it('tail-truncates to 51200 chars', async () => {
    const line = 'z'.repeat(99);
    const bash = createBashTool(await make({ 'w.txt': Array(1000).fill(line).join('\n') }));
    const text = await call(bash, { command: 'cat w.txt' });
    expect(text).toBe(`${Array(512).fill(line).join('\n')}\n\n[Showing lines 489-1000 of 1000. Earlier output was truncated.]`);
  });

  it('timeout gives a recoverable exit-124 result', async () => {
    const bash = createBashTool(await make({}, { hang: () => new Promise<ShellResult>(() => {}) }));
    expect(await call(bash, { command: 'hang', timeout: 0.02 })).toBe(
      '[flue] Command timed out after 0.02 seconds.\n\nCommand exited with code 124',
    );
  });

  it('host abort rethrows', async () => {
    const bash = createBashTool(await make({}, { hang: () => new Promise<ShellResult>(() => {}) }));
    // Once the tools' code has loaded (here by this first call), a call has started its command
    // when execute() returns, so the abort reaches the running command.
    await call(bash, { command: 'true' });
    const controller = new AbortController();
    const pending = bash.execute('c', { command: 'hang' }, controller.signal);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });
});

describe('grep', () => {
  const files = { 'src/a.ts': 'const foo = 1;\nfoo(bar);\n', 'src/b.md': 'foo in docs\n', 'c.txt': "it's foo\n" };

  it('falls back to grep -rnH and returns path:line:text', async () => {
    const grep = createGrepTool(await make(files));
    expect(await call(grep, { pattern: 'foo' })).toBe(
      "./c.txt:1:it's foo\n./src/a.ts:1:const foo = 1;\n./src/a.ts:2:foo(bar);\n./src/b.md:1:foo in docs",
    );
    expect(await call(grep, { pattern: 'foo', path: 'src', include: '*.ts' })).toBe('src/a.ts:1:const foo = 1;\nsrc/a.ts:2:foo(bar);');
    expect(await call(grep, { pattern: 'foo(', literal: true })).toBe('./src/a.ts:2:foo(bar);');
    expect(await call(grep, { pattern: "it's" })).toBe("./c.txt:1:it's foo");
  });

  it('no matches and errors', async () => {
    const grep = createGrepTool(await make(files));
    expect(await call(grep, { pattern: 'zzz' })).toBe('No matches found.');
    await expect(call(grep, { pattern: 'foo', path: 'missing' })).rejects.toThrow(
      'grep failed (exit code 2): grep: missing: No such file or directory',
    );
    await expect(call(grep, { pattern: '(' })).rejects.toThrow('invalid regular expression');
  });

  it('caps at 100 lines of at most 500 chars', async () => {
    const many = Array.from({ length: 150 }, (_, i) => `hit ${i} ${'w'.repeat(600)}`).join('\n');
    const grep = createGrepTool(await make({ 'm.txt': many }));
    const text = await call(grep, { pattern: 'hit', path: 'm.txt' });
    const [body, note] = text.split('\n\n');
    const lines = body!.split('\n');
    expect(lines).toHaveLength(100);
    expect(lines[0]).toBe(`m.txt:1:hit 0 ${'w'.repeat(600)}`.slice(0, 500) + '...');
    expect(note).toBe('[Showing 100 of 150 matches. Narrow your search.]');
  });

  it('runs one grep command, never rg, even where rg is installed: results do not depend on the image', async () => {
    const commands: string[] = [];
    const sandbox = await make();
    const fake: Sandbox = {
      ...sandbox,
      exec: async (command) => {
        commands.push(command);
        return command === 'rg --version'
          ? { stdout: 'ripgrep 14', stderr: '', exitCode: 0 }
          : { stdout: 'a.ts:1:x\n', stderr: '', exitCode: 0 };
      },
    };
    const grep = createGrepTool(fake);
    expect(await call(grep, { pattern: "x'y", include: '*.ts' })).toBe('a.ts:1:x');
    await call(grep, { pattern: 'x', literal: true });
    expect(commands).toEqual([`grep -rnH -E --include='*.ts' -- 'x'\\''y' '.'`, `grep -rnH -F -- 'x' '.'`]);
  });
});

describe('glob', () => {
  it('finds files by name pattern, newline-joined', async () => {
    const glob = createGlobTool(await make({ 'a.ts': '', 'src/b.ts': '', 'src/c.md': '' }));
    expect(await call(glob, { pattern: '*.ts' })).toBe('./a.ts\n./src/b.ts');
    expect(await call(glob, { pattern: '*.md', path: 'src' })).toBe('src/c.md');
    expect(await call(glob, { pattern: '*.py' })).toBe('No files found matching pattern.');
    expect(await call(glob, { pattern: '*', path: 'missing' })).toBe('No files found matching pattern.');
  });

  it('caps at 1000 paths', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 1100; i++) files[`f${String(i).padStart(4, '0')}.txt`] = '';
    const text = await call(createGlobTool(await make(files)), { pattern: '*.txt' });
    expect(text.split('\n')).toHaveLength(1000);
  });
});

describe('grep and glob put their paths to the sandbox first', () => {
  async function refusing(): Promise<{ sandbox: Sandbox; commands: string[]; statted: string[] }> {
    const base = await make({ 'a.txt': 'x' });
    const commands: string[] = [];
    const statted: string[] = [];
    const refusal = Object.assign(new Error('refused'), { type: 'sandbox_path_outside_root' });
    const sandbox: Sandbox = {
      ...base,
      exec: async (command) => {
        commands.push(command);
        return { stdout: '', stderr: '', exitCode: 1 };
      },
      stat: async (p) => {
        statted.push(base.resolvePath(p));
        if (base.resolvePath(p).startsWith('/workspace')) return base.stat(p);
        throw refusal;
      },
    };
    return { sandbox, commands, statted };
  }

  it('a refusal from stat fails the call before any command runs', async () => {
    const { sandbox, commands, statted } = await refusing();
    await expect(call(createGrepTool(sandbox), { pattern: 'x', path: '../etc' })).rejects.toThrow('refused');
    await expect(call(createGrepTool(sandbox), { pattern: 'x', include: '../../etc/*' })).rejects.toThrow('refused');
    await expect(call(createGlobTool(sandbox), { pattern: '/etc/*' })).rejects.toThrow('refused');
    expect(commands).toEqual([]);
    expect(statted).toEqual(['/etc', '/workspace', '/etc', '/workspace', '/etc']);
  });

  it('other stat failures are left to the command; `..` reaches it as checked', async () => {
    const { sandbox, commands } = await refusing();
    expect(await call(createGlobTool(sandbox), { pattern: '*', path: 'missing/../a.txt' })).toBe('No files found matching pattern.');
    expect(commands).toEqual([`find 'a.txt' -type f -name '*' 2>/dev/null | head -1000`]);
  });

  it('refuses NUL bytes in shell-bound arguments', async () => {
    const { sandbox, commands } = await refusing();
    await expect(call(createGrepTool(sandbox), { pattern: 'a\0b' })).rejects.toThrow('pattern: must not contain NUL bytes');
    await expect(call(createGlobTool(sandbox), { pattern: '*', path: 'a\0' })).rejects.toThrow('path: must not contain NUL bytes');
    expect(commands).toEqual([]);
  });
});

describe('shellQuote', () => {
  it('single-quotes and escapes quotes', () => {
    expect(shellQuote("a'b $c")).toBe(`'a'\\''b $c'`);
  });
});
