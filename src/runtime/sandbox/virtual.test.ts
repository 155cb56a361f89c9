import { describe, expect, it } from 'vitest';
import { virtualSandbox } from './virtual.ts';
import type { Sandbox } from './types.ts';

async function make(files: Record<string, string | Uint8Array> = {}, extra: Parameters<typeof virtualSandbox>[0] = {}): Promise<Sandbox> {
  return virtualSandbox({ files, ...extra }).createSandbox({ id: 'agent-1' });
}

describe('virtual sandbox verbs', () => {
  it('defaults cwd to /workspace and seeds files relative to it', async () => {
    const sb = await make({ 'a.txt': 'A', '/etc/conf': 'C', 'deep/x/y.txt': 'Y' });
    expect(sb.cwd).toBe('/workspace');
    expect(await sb.readFile('a.txt')).toBe('A');
    expect(await sb.readFile('/etc/conf')).toBe('C');
    expect(await sb.readFile('/workspace/deep/x/y.txt')).toBe('Y');
  });

  it('each createSandbox call gets a fresh filesystem', async () => {
    const factory = virtualSandbox();
    const one = await factory.createSandbox({ id: 'same' });
    await one.writeFile('x', '1');
    const two = await factory.createSandbox({ id: 'same' });
    expect(await two.exists('x')).toBe(false);
  });

  it('writeFile creates parents and replaces; buffers round-trip', async () => {
    const sb = await make();
    await sb.writeFile('a/b/c.txt', 'one');
    await sb.writeFile('a/b/c.txt', 'two');
    expect(await sb.readFile('a/b/c.txt')).toBe('two');
    await sb.writeFile('bin', new Uint8Array([0, 1, 255]));
    expect([...(await sb.readFileBuffer('bin'))]).toEqual([0, 1, 255]);
  });

  it('readFile/stat/readdir errors', async () => {
    const sb = await make({ 'f.txt': 'x' });
    await expect(sb.readFile('missing')).rejects.toThrow("ENOENT: no such file or directory, open '/workspace/missing'");
    await expect(sb.readFile('.')).rejects.toThrow('EISDIR');
    await expect(sb.stat('nope')).rejects.toThrow("ENOENT: no such file or directory, stat '/workspace/nope'");
    await expect(sb.readdir('f.txt')).rejects.toThrow('ENOTDIR');
  });

  it('stat reports known facts', async () => {
    const sb = await make({ 'f.txt': 'hello' });
    const file = await sb.stat('f.txt');
    expect(file).toMatchObject({ isFile: true, isDirectory: false, isSymbolicLink: false, size: 5 });
    expect(file.mtime).toBeInstanceOf(Date);
    expect(await sb.stat('/workspace')).toMatchObject({ isFile: false, isDirectory: true });
  });

  it('readdir lists names only, sorted', async () => {
    const sb = await make({ 'b.txt': '', 'a/x': '', 'c.md': '' });
    expect(await sb.readdir('.')).toEqual(['a', 'b.txt', 'c.md']);
  });

  it('exists never throws', async () => {
    const sb = await make({ 'f.txt': '' });
    expect(await sb.exists('f.txt')).toBe(true);
    expect(await sb.exists('f.txt/below')).toBe(false);
    expect(await sb.exists('')).toBe(true);
  });

  it('mkdir: recursive creates parents and tolerates existing; plain mkdir does not', async () => {
    const sb = await make();
    await sb.mkdir('p/q/r', { recursive: true });
    await sb.mkdir('p/q/r', { recursive: true });
    expect((await sb.stat('p/q/r')).isDirectory).toBe(true);
    await expect(sb.mkdir('p')).rejects.toThrow('EEXIST');
    await expect(sb.mkdir('x/y')).rejects.toThrow('ENOENT');
  });

  it('rm follows fs.rm flags', async () => {
    const sb = await make({ 'd/f.txt': 'x', 'g.txt': 'y' });
    await expect(sb.rm('missing')).rejects.toThrow('ENOENT');
    await sb.rm('missing', { force: true });
    await expect(sb.rm('d')).rejects.toThrow('EISDIR');
    await sb.rm('d', { recursive: true });
    expect(await sb.exists('d')).toBe(false);
    await sb.rm('g.txt');
    expect(await sb.exists('g.txt')).toBe(false);
  });

  it('enforces file and total size limits', async () => {
    const sb = await make({}, { limits: { maxFileBytes: 10, maxTotalBytes: 15 } });
    await expect(sb.writeFile('big', 'x'.repeat(11))).rejects.toThrow('EFBIG');
    await sb.writeFile('a', 'x'.repeat(10));
    await expect(sb.writeFile('b', 'x'.repeat(6))).rejects.toThrow('ENOSPC');
    await sb.writeFile('a', 'x'.repeat(2)); // replacing frees space
    await sb.writeFile('b', 'x'.repeat(6));
  });
});

describe('virtual shell', () => {
  const run = async (command: string, files: Record<string, string> = {}) => (await make(files)).exec(command);

  it('echo, pwd, cd (isolated per exec), exec cwd option', async () => {
    const sb = await make({ 'sub/f': '' });
    expect(await sb.exec('echo hello  world')).toEqual({ stdout: 'hello world\n', stderr: '', exitCode: 0 });
    expect((await sb.exec('echo -n hi')).stdout).toBe('hi');
    expect((await sb.exec('echo -e "a\\tb"')).stdout).toBe('a\tb\n');
    expect((await sb.exec('cd sub; pwd')).stdout).toBe('/workspace/sub\n');
    expect((await sb.exec('pwd')).stdout).toBe('/workspace\n');
    expect((await sb.exec('pwd', { cwd: 'sub' })).stdout).toBe('/workspace/sub\n');
    expect(await sb.exec('cd nope')).toMatchObject({ exitCode: 1, stderr: 'bash: cd: nope: No such file or directory\n' });
  });

  it('lists, exit status, && || and exit N', async () => {
    expect((await run('false && echo no || echo yes')).stdout).toBe('yes\n');
    expect((await run('true && echo a; echo b')).stdout).toBe('a\nb\n');
    expect((await run('false; echo $?')).stdout).toBe('1\n');
    expect(await run('echo a\nexit 3\necho b')).toEqual({ stdout: 'a\n', stderr: '', exitCode: 3 });
    expect((await run('false')).exitCode).toBe(1);
  });

  it('quoting and variables', async () => {
    const sb = await make({}, { env: { NAME: 'flue' } });
    expect((await sb.exec(`echo '$NAME' "$NAME" \${NAME}x "a \\"q\\" \\$x"`)).stdout).toBe('$NAME flue fluex a "q" $x\n');
    expect((await sb.exec('echo $NAME', { env: { NAME: 'override' } })).stdout).toBe('override\n');
    expect((await sb.exec('X=1; echo $X; Y=2 env | grep ^Y=')).stdout).toBe('1\nY=2\n');
    expect((await sb.exec("echo 'it'\\''s'")).stdout).toBe("it's\n");
    expect((await sb.exec('echo "$MISSING" | wc -c')).stdout).toBe('1\n');
  });

  it('pipes and redirections', async () => {
    const sb = await make({ 'a.txt': 'b\na\nc\n' });
    expect((await sb.exec('cat a.txt | sort | head -n 2')).stdout).toBe('a\nb\n');
    await sb.exec('echo one > out.txt; echo two >> out.txt');
    expect(await sb.readFile('out.txt')).toBe('one\ntwo\n');
    expect(await sb.exec('cat missing 2>/dev/null')).toEqual({ stdout: '', stderr: '', exitCode: 1 });
    expect((await sb.exec('cat missing 2>&1')).stdout).toBe('cat: missing: No such file or directory\n');
    await sb.exec('cat missing a.txt > both.txt 2>&1');
    expect(await sb.readFile('both.txt')).toBe('b\na\nc\ncat: missing: No such file or directory\n');
    expect((await sb.exec('sort < a.txt')).stdout).toBe('a\nb\nc\n');
    expect((await sb.exec('echo err >&2')).stderr).toBe('err\n');
    await sb.exec('ls missing &> all.txt');
    expect(await sb.readFile('all.txt')).toContain('No such file');
    expect(await sb.exec('echo x > nodir/f')).toMatchObject({ exitCode: 1, stderr: 'bash: nodir/f: No such file or directory\n' });
  });

  it('globbing against the virtual FS', async () => {
    const sb = await make({ 'a.ts': '', 'b.ts': '', 'c.md': '', '.hidden.ts': '', 'src/d.ts': '' });
    expect((await sb.exec('echo *.ts')).stdout).toBe('a.ts b.ts\n');
    expect((await sb.exec('echo src/*.ts')).stdout).toBe('src/d.ts\n');
    expect((await sb.exec('echo "*.ts" *.none')).stdout).toBe('*.ts *.none\n');
    expect((await sb.exec('echo ?.md')).stdout).toBe('c.md\n');
  });

  it('unknown commands and unsupported constructs', async () => {
    expect(await run('rg --version')).toEqual({ stdout: '', stderr: 'rg: command not found\n', exitCode: 127 });
    expect(await run('echo $(ls)')).toEqual({ stdout: '', stderr: '$(: not supported\n', exitCode: 2 });
    expect(await run('sleep 1 &')).toMatchObject({ exitCode: 2, stderr: '&: not supported\n' });
    expect(await run('for x in a; do echo $x; done')).toMatchObject({ exitCode: 2, stderr: 'for: not supported\n' });
    expect((await run('echo "unterminated')).exitCode).toBe(2);
  });

  it('file commands: mkdir -p, touch, cp, mv, rm -rf, ls', async () => {
    const sb = await make({ 'f.txt': 'data' });
    expect((await sb.exec('mkdir -p a/b/c && touch a/b/c/t && ls a/b/c')).stdout).toBe('t\n');
    expect((await sb.exec('mkdir a')).stderr).toBe("mkdir: cannot create directory 'a': File exists\n");
    await sb.exec('cp f.txt a/copy.txt && mv f.txt a/b/moved.txt');
    expect(await sb.readFile('a/copy.txt')).toBe('data');
    expect(await sb.readFile('a/b/moved.txt')).toBe('data');
    expect(await sb.exists('f.txt')).toBe(false);
    expect((await sb.exec('cp a b')).stderr).toContain('-r not specified');
    await sb.exec('cp -r a b');
    expect(await sb.readFile('b/b/moved.txt')).toBe('data');
    expect((await sb.exec('rm a')).stderr).toBe("rm: cannot remove 'a': Is a directory\n");
    expect((await sb.exec('rm nope')).exitCode).toBe(1);
    expect((await sb.exec('rm -f nope')).exitCode).toBe(0);
    await sb.exec('rm -rf a');
    expect(await sb.exists('a')).toBe(false);
    expect((await sb.exec('ls')).stdout).toBe('b\n');
    expect((await sb.exec('ls -a')).stdout).toBe('.\n..\nb\n');
  });

  it('head, tail, wc, sort, uniq, cut, tr, sed', async () => {
    const files = { 'n.txt': '1\n2\n3\n4\n5\n', 'w.txt': 'b a\nb a\nc d\n' };
    expect((await run('head -n 2 n.txt', files)).stdout).toBe('1\n2\n');
    expect((await run('head -2 n.txt', files)).stdout).toBe('1\n2\n');
    expect((await run('tail -n 2 n.txt', files)).stdout).toBe('4\n5\n');
    expect((await run('tail -n +4 n.txt', files)).stdout).toBe('4\n5\n');
    expect((await run('wc -l n.txt', files)).stdout).toBe('5 n.txt\n');
    expect((await run('cat n.txt | wc -l', files)).stdout).toBe('5\n');
    expect((await run('sort -rn n.txt | head -1', files)).stdout).toBe('5\n');
    expect((await run('uniq -c w.txt', files)).stdout).toBe('      2 b a\n      1 c d\n');
    expect((await run("cut -d ' ' -f 2 w.txt | sort -u", files)).stdout).toBe('a\nd\n');
    expect((await run('echo hello | tr a-z A-Z', files)).stdout).toBe('HELLO\n');
    expect((await run("sed -n 's/b \\(a\\)/X\\1/p' w.txt", files)).stdout).toBe('Xa\nXa\n');
    await (async () => {
      const sb = await make(files);
      await sb.exec("sed -i 's/a/Z/g' w.txt");
      expect(await sb.readFile('w.txt')).toBe('b Z\nb Z\nc d\n');
    })();
  });

  it('grep: flags, format path:line:text, exit codes', async () => {
    const files = { 'src/a.ts': 'const foo = 1;\nFOO();\n', 'src/b.md': 'foo doc\n', 'x.txt': 'nothing\n' };
    expect((await run("grep -rnH -E -- 'foo' '.'", files)).stdout).toBe('./src/a.ts:1:const foo = 1;\n./src/b.md:1:foo doc\n');
    expect((await run('grep -rn --include=*.ts -i foo src', files)).stdout).toBe('src/a.ts:1:const foo = 1;\nsrc/a.ts:2:FOO();\n');
    expect((await run('grep -rl foo .', files)).stdout).toBe('./src/a.ts\n./src/b.md\n');
    expect((await run('grep -F "foo(" -r .', files)).exitCode).toBe(1);
    expect((await run('grep -c foo src/a.ts', files)).stdout).toBe('1\n');
    expect((await run('grep -v foo src/a.ts', files)).stdout).toBe('FOO();\n');
    expect(await run('grep zzz x.txt', files)).toEqual({ stdout: '', stderr: '', exitCode: 1 });
    expect(await run('grep foo missing', files)).toMatchObject({ exitCode: 2, stderr: 'grep: missing: No such file or directory\n' });
    expect((await run('grep -E "fo+|zzz" x.txt src/b.md', files)).stdout).toBe('src/b.md:foo doc\n');
    expect((await run('grep -r foo', files)).stdout).toBe('src/a.ts:const foo = 1;\nsrc/b.md:foo doc\n');
  });

  it('find with -type, -name, -maxdepth', async () => {
    const files = { 'a.ts': '', 'src/b.ts': '', 'src/c.md': '', 'src/deep/d.ts': '' };
    expect((await run("find . -type f -name '*.ts'", files)).stdout).toBe('./a.ts\n./src/b.ts\n./src/deep/d.ts\n');
    expect((await run('find src -type d', files)).stdout).toBe('src\nsrc/deep\n');
    expect((await run('find . -maxdepth 1 -type f', files)).stdout).toBe('./a.ts\n');
    expect(await run('find nope', files)).toMatchObject({ exitCode: 1, stderr: "find: 'nope': No such file or directory\n" });
  });

  it('printf, test, seq, basename, dirname, base64', async () => {
    expect((await run('printf "%s=%d%%\\n" a 5 b 6')).stdout).toBe('a=5%\nb=6%\n');
    expect((await run('touch f; [ -f f ] && echo file; test -d f || echo notdir')).stdout).toBe('file\nnotdir\n');
    expect((await run('[ "a" = "a" ] && [ 3 -gt 2 ] && echo yes')).stdout).toBe('yes\n');
    expect((await run('seq 3')).stdout).toBe('1\n2\n3\n');
    expect((await run('basename /a/b.txt .txt; dirname /a/b.txt')).stdout).toBe('b\n/a\n');
    expect((await run('echo -n hi | base64 | base64 -d')).stdout).toBe('hi');
  });

  it('host extension commands and the output cap', async () => {
    const sb = await make(
      {},
      {
        commands: { greet: ({ args, stdin }) => ({ stdout: `hi ${args.join(',')} ${stdin}`, stderr: '', exitCode: 0 }) },
        limits: { maxOutputBytes: 100 },
      },
    );
    expect((await sb.exec('echo in | greet a b')).stdout).toBe('hi a,b in\n');
    const capped = await sb.exec('seq 1000');
    expect(capped.exitCode).toBe(1);
    expect(capped.stderr).toContain('output truncated');
  });

  it('timeoutMs resolves 124; abort rejects with AbortError', async () => {
    const sb = await make({}, { commands: { hang: () => new Promise(() => {}) } });
    const timed = await sb.exec('hang', { timeoutMs: 20 });
    expect(timed.exitCode).toBe(124);
    const controller = new AbortController();
    const pending = sb.exec('hang', { signal: controller.signal });
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });
});
