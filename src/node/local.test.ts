import { mkdtemp, mkdir, readFile, realpath, rm, stat, symlink, writeFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Sandbox } from '../runtime/sandbox/types.ts';
import { local, LocalSandboxPathError } from './local.ts';
import { until } from '../../test/contract/cases.ts';

let base: string; // real temp dir holding root/ and outside/
let root: string;
let outside: string;
let sandbox: Sandbox;

beforeEach(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), 'flue-local-')));
  root = join(base, 'root');
  outside = join(base, 'outside');
  await mkdir(root);
  await mkdir(outside);
  await writeFile(join(outside, 'secret.txt'), 'SECRET');
  await mkdir(join(outside, 'dir'));
  await writeFile(join(outside, 'dir', 'inner.txt'), 'INNER');
  await symlink(outside, join(root, 'escape')); // dir link pointing outside
  await symlink(join(outside, 'secret.txt'), join(root, 'secret-link')); // file link pointing outside
  await symlink(join(outside, 'not-yet.txt'), join(root, 'dangling')); // dangling link pointing outside
  sandbox = await local({ cwd: root }).createSandbox({ id: 'test' });
});

afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

async function outsideUntouched(): Promise<void> {
  expect(await readFile(join(outside, 'secret.txt'), 'utf8')).toBe('SECRET');
  expect(await readFile(join(outside, 'dir', 'inner.txt'), 'utf8')).toBe('INNER');
  expect((await readdir(outside)).sort()).toEqual(['dir', 'secret.txt']);
  expect((await readdir(join(outside, 'dir'))).sort()).toEqual(['inner.txt']);
}

describe('local() file verbs inside the root', () => {
  it('has the real root as cwd and resolves relative paths against it', () => {
    expect(sandbox.cwd).toBe(root);
    expect(sandbox.resolvePath('a/../b.txt')).toBe(`${root}/b.txt`);
  });

  it('writes, reads, stats, lists, checks, makes dirs and removes', async () => {
    await sandbox.writeFile('a.txt', 'hello');
    expect(await sandbox.readFile('a.txt')).toBe('hello');
    expect(await sandbox.readFile(`${root}/a.txt`)).toBe('hello');
    await sandbox.writeFile('bin.dat', new Uint8Array([0, 1, 255]));
    expect(Array.from(await sandbox.readFileBuffer('bin.dat'))).toEqual([0, 1, 255]);

    const s = await sandbox.stat('a.txt');
    expect(s).toMatchObject({ isFile: true, isDirectory: false, isSymbolicLink: false, size: 5 });
    expect(s.mtime).toBeInstanceOf(Date);

    await sandbox.mkdir('d');
    await expect(sandbox.mkdir('d')).rejects.toThrow(/EEXIST/);
    await sandbox.mkdir('d', { recursive: true });
    await sandbox.mkdir('x/y/z', { recursive: true });
    expect((await sandbox.stat('x/y/z')).isDirectory).toBe(true);

    expect((await sandbox.readdir('.')).sort()).toEqual(['a.txt', 'bin.dat', 'd', 'dangling', 'escape', 'secret-link', 'x'].sort());
    expect(await sandbox.exists('a.txt')).toBe(true);
    expect(await sandbox.exists('nope')).toBe(false);

    await sandbox.rm('a.txt');
    expect(await sandbox.exists('a.txt')).toBe(false);
    await expect(sandbox.rm('a.txt')).rejects.toThrow(/ENOENT/);
    await sandbox.rm('a.txt', { force: true });
    await expect(sandbox.rm('x')).rejects.toThrow();
    await sandbox.rm('x', { recursive: true });
    expect(await sandbox.exists('x')).toBe(false);
  });

  it('writeFile creates missing parents', async () => {
    await sandbox.writeFile('deep/er/file.txt', 'x');
    expect(await readFile(join(root, 'deep/er/file.txt'), 'utf8')).toBe('x');
  });

  it('throws for missing files and reading a directory', async () => {
    await expect(sandbox.readFile('missing.txt')).rejects.toThrow(/ENOENT/);
    await expect(sandbox.stat('missing.txt')).rejects.toThrow(/ENOENT/);
    await sandbox.mkdir('d');
    await expect(sandbox.readFile('d')).rejects.toThrow(/EISDIR/);
    await sandbox.writeFile('f', '');
    await expect(sandbox.readdir('f')).rejects.toThrow(/ENOTDIR/);
  });

  it('follows symlinks that stay inside the root; rm removes the link, not the target', async () => {
    await sandbox.writeFile('target.txt', 'T');
    await symlink(join(root, 'target.txt'), join(root, 'inner-link'));
    await symlink('sub', join(root, 'sub-link'));
    await sandbox.mkdir('sub');
    expect(await sandbox.readFile('inner-link')).toBe('T');
    expect(await sandbox.stat('inner-link')).toMatchObject({ isFile: true, isSymbolicLink: true, size: 1 });
    await sandbox.writeFile('sub-link/via.txt', 'V');
    expect(await readFile(join(root, 'sub', 'via.txt'), 'utf8')).toBe('V');
    await sandbox.rm('inner-link');
    expect(await sandbox.readFile('target.txt')).toBe('T');
    // A link to the root itself: rm removes the link, never the root.
    await symlink(root, join(root, 'self'));
    expect((await sandbox.readdir('self')).includes('target.txt')).toBe(true);
    await sandbox.rm('self', { recursive: true });
    expect(await sandbox.readFile('target.txt')).toBe('T');
    expect(await sandbox.exists('self')).toBe(false);
  });
});

describe('local() refuses paths outside the root', () => {
  const escapes = (): Array<[string, string]> => [
    ['dot-dot traversal', '../outside/secret.txt'],
    ['deep dot-dot traversal', 'a/../../outside/secret.txt'],
    ['absolute path outside', join(outside, 'secret.txt')],
    ['symlinked file', 'secret-link'],
    ['through a symlinked dir', 'escape/secret.txt'],
  ];

  it.each([
    ['dot-dot traversal', '../outside/secret.txt'],
    ['absolute path outside', '__OUTSIDE__/secret.txt'],
    ['symlinked file', 'secret-link'],
    ['through a symlinked dir', 'escape/secret.txt'],
  ])('readFile/readFileBuffer/stat/exists refuse a %s', async (_label, raw) => {
    const p = raw.replace('__OUTSIDE__', outside);
    await expect(sandbox.readFile(p)).rejects.toBeInstanceOf(LocalSandboxPathError);
    await expect(sandbox.readFileBuffer(p)).rejects.toBeInstanceOf(LocalSandboxPathError);
    await expect(sandbox.stat(p)).rejects.toBeInstanceOf(LocalSandboxPathError);
    expect(await sandbox.exists(p)).toBe(false);
    await outsideUntouched();
  });

  it('names the path in a clear error', async () => {
    await expect(sandbox.readFile('../outside/secret.txt')).rejects.toThrow(`${outside}/secret.txt is outside the sandbox root ${root}`);
    // The link is named, never its target: that would be a name from outside the root.
    await expect(sandbox.readFile('secret-link')).rejects.toThrow(
      `${root}/secret-link is outside the sandbox root ${root} (it is a symbolic link pointing out of it).`,
    );
    await expect(sandbox.readFile('escape/dir/inner.txt')).rejects.toThrow(
      `${root}/escape/dir/inner.txt is outside the sandbox root ${root} (through the symbolic link ${root}/escape).`,
    );
    const error = await sandbox.stat('/etc').catch((e: unknown) => e);
    expect(error).toMatchObject({ type: 'sandbox_path_outside_root', meta: { path: '/etc', root } });
  });

  it('writeFile refuses every escape and leaves the outside untouched', async () => {
    for (const [, p] of escapes()) {
      await expect(sandbox.writeFile(p, 'PWNED')).rejects.toBeInstanceOf(LocalSandboxPathError);
    }
    await expect(sandbox.writeFile(join(outside, 'new.txt'), 'x')).rejects.toBeInstanceOf(LocalSandboxPathError);
    await expect(sandbox.writeFile('escape/new/deep.txt', 'x')).rejects.toBeInstanceOf(LocalSandboxPathError);
    // A dangling link must not be used to create a file outside.
    await expect(sandbox.writeFile('dangling', 'x')).rejects.toBeInstanceOf(LocalSandboxPathError);
    await outsideUntouched();
  });

  it('readdir refuses directories outside', async () => {
    await expect(sandbox.readdir('..')).rejects.toBeInstanceOf(LocalSandboxPathError);
    await expect(sandbox.readdir(outside)).rejects.toBeInstanceOf(LocalSandboxPathError);
    await expect(sandbox.readdir('escape')).rejects.toBeInstanceOf(LocalSandboxPathError);
    await expect(sandbox.readdir('escape/dir')).rejects.toBeInstanceOf(LocalSandboxPathError);
    await expect(sandbox.readdir('/')).rejects.toBeInstanceOf(LocalSandboxPathError);
  });

  it('mkdir refuses directories outside', async () => {
    await expect(sandbox.mkdir('../outside/made')).rejects.toBeInstanceOf(LocalSandboxPathError);
    await expect(sandbox.mkdir(join(outside, 'made'), { recursive: true })).rejects.toBeInstanceOf(LocalSandboxPathError);
    await expect(sandbox.mkdir('escape/made')).rejects.toBeInstanceOf(LocalSandboxPathError);
    await expect(sandbox.mkdir('escape/a/b', { recursive: true })).rejects.toBeInstanceOf(LocalSandboxPathError);
    await expect(sandbox.mkdir('dangling')).rejects.toBeInstanceOf(LocalSandboxPathError);
    await outsideUntouched();
  });

  it('rm refuses paths outside, even recursive+force', async () => {
    for (const [, p] of escapes()) {
      await expect(sandbox.rm(p, { force: true })).rejects.toBeInstanceOf(LocalSandboxPathError);
    }
    await expect(sandbox.rm('../outside', { recursive: true, force: true })).rejects.toBeInstanceOf(LocalSandboxPathError);
    await expect(sandbox.rm(outside, { recursive: true, force: true })).rejects.toBeInstanceOf(LocalSandboxPathError);
    await expect(sandbox.rm('escape/dir', { recursive: true, force: true })).rejects.toBeInstanceOf(LocalSandboxPathError);
    await expect(sandbox.rm('escape', { recursive: true, force: true })).rejects.toBeInstanceOf(LocalSandboxPathError);
    await outsideUntouched();
  });

  it('a sibling directory sharing the root name prefix is outside', async () => {
    await mkdir(`${root}-sibling`);
    await expect(sandbox.writeFile(`${root}-sibling/x.txt`, 'x')).rejects.toBeInstanceOf(LocalSandboxPathError);
    expect(await readdir(`${root}-sibling`)).toEqual([]);
  });

  it('unrestricted: true lifts the checks', async () => {
    const free = await local({ cwd: root, unrestricted: true }).createSandbox({ id: 'free' });
    expect(await free.readFile('../outside/secret.txt')).toBe('SECRET');
    expect(await free.readFile('secret-link')).toBe('SECRET');
  });
});

describe('local() exec', () => {
  it('runs in the root by default and in a relative cwd inside it', async () => {
    expect(await sandbox.exec('pwd')).toEqual({ stdout: `${root}\n`, stderr: '', exitCode: 0 });
    await sandbox.mkdir('sub');
    expect((await sandbox.exec('pwd', { cwd: 'sub' })).stdout).toBe(`${root}/sub\n`);
    await sandbox.exec('echo made > made.txt');
    expect(await sandbox.readFile('made.txt')).toBe('made\n');
  });

  it('refuses a cwd outside the root', async () => {
    await expect(sandbox.exec('touch pwned', { cwd: '..' })).rejects.toBeInstanceOf(LocalSandboxPathError);
    await expect(sandbox.exec('touch pwned', { cwd: 'escape' })).rejects.toBeInstanceOf(LocalSandboxPathError);
    await outsideUntouched();
  });

  it('a missing cwd resolves exit 1 with a note', async () => {
    const result = await sandbox.exec('true', { cwd: 'nope' });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/does not exist/);
  });

  it('resolves non-zero exits with the code and captures stderr', async () => {
    expect(await sandbox.exec('echo out; echo err >&2; exit 3')).toEqual({ stdout: 'out\n', stderr: 'err\n', exitCode: 3 });
  });

  it('does not inherit process.env wholesale; env layers per exec', async () => {
    process.env.FLUE_LOCAL_TEST_SECRET = 'leak';
    try {
      const s = await local({ cwd: root, env: { BASE: 'b', HOME: undefined } }).createSandbox({ id: 'env' });
      const result = await s.exec('echo "[$FLUE_LOCAL_TEST_SECRET][$BASE][$EXTRA][$HOME]"', { env: { EXTRA: 'e' } });
      expect(result.stdout).toBe('[][b][e][]\n');
      expect((await s.exec('command -v sh')).exitCode).toBe(0); // PATH passes through
    } finally {
      delete process.env.FLUE_LOCAL_TEST_SECRET;
    }
  });

  it('rejects a non-record env', () => {
    expect(() => local({ env: 'x' as never })).toThrow(TypeError);
    expect(() => local({ env: ['a'] as never })).toThrow(TypeError);
  });

  it('timeoutMs resolves exit 124 with a stderr note and kills the command', async () => {
    // Had the command run on, `after` would be in stdout: it was killed at the timeout.
    const result = await sandbox.exec('echo before; sleep 5; echo after', { timeoutMs: 200 });
    expect(result.exitCode).toBe(124);
    expect(result.stdout).toBe('before\n');
    expect(result.stderr).toMatch(/timed out after 200 ms/);
  });

  it('abort rejects promptly with AbortError and kills the process group', async () => {
    const controller = new AbortController();
    // A duration no other process on the machine sleeps for, so /proc shows exactly these two.
    const seconds = `60.${process.pid}${Date.now() % 100_000}`;
    const running = sandbox.exec(`sleep ${seconds} & sleep ${seconds}; echo done > finished.txt`, { signal: controller.signal });
    await until(async () => ((await sleepers(seconds)) === 2 ? true : undefined));
    controller.abort('stop');
    const error = await running.catch((e: unknown) => e);
    // Rejected before the command could finish (it writes the file when it does).
    expect(await sandbox.exists('finished.txt')).toBe(false);
    expect(error).toBeInstanceOf(DOMException);
    expect(error).toMatchObject({ name: 'AbortError', cause: 'stop' });
    // The whole group is gone, the backgrounded sleep too: none is left to finish the command.
    await until(async () => ((await sleepers(seconds)) === 0 ? true : undefined));
    expect(await sandbox.exists('finished.txt')).toBe(false);
  });

  it('a pre-aborted signal rejects before running', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(sandbox.exec('touch ran.txt', { signal: controller.signal })).rejects.toMatchObject({ name: 'AbortError' });
    expect(await sandbox.exists('ran.txt')).toBe(false);
  });

  it('does not hang on a background child holding the pipes open', async () => {
    // The background child marks when it ends: the result came before that.
    const result = await sandbox.exec('(sleep 3; touch background-ended.txt) & echo quick');
    expect(result).toMatchObject({ stdout: 'quick\n', exitCode: 0 });
    expect(await sandbox.exists('background-ended.txt')).toBe(false);
  });
});

describe('local() factory', () => {
  it('defaults to process.cwd() and creates a missing root', async () => {
    expect((await local().createSandbox({ id: 'a' })).cwd).toBe(await realpath(process.cwd()));
    const fresh = join(base, 'fresh', 'root');
    const s = await local({ root: fresh }).createSandbox({ id: 'b' });
    expect(s.cwd).toBe(fresh);
    expect((await stat(fresh)).isDirectory()).toBe(true);
  });

  it('a root given through a symlink uses the real path and accepts both spellings', async () => {
    const alias = join(base, 'alias');
    await symlink(root, alias);
    const s = await local({ cwd: alias }).createSandbox({ id: 'alias' });
    expect(s.cwd).toBe(root);
    await s.writeFile(`${alias}/via-alias.txt`, 'A');
    expect(await s.readFile('via-alias.txt')).toBe('A');
    expect((await s.stat(alias)).isDirectory).toBe(true);
    await expect(s.readFile(`${alias}/../outside/secret.txt`)).rejects.toBeInstanceOf(LocalSandboxPathError);
  });

  it('tolerates repeated createSandbox with the same id', async () => {
    const factory = local({ cwd: root });
    const [a, b] = await Promise.all([factory.createSandbox({ id: 'x' }), factory.createSandbox({ id: 'x' })]);
    expect(a.cwd).toBe(b.cwd);
  });
});

/** Processes of this machine running `sleep <seconds>`, read from /proc. */
async function sleepers(seconds: string): Promise<number> {
  let count = 0;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmdline === `sleep\0${seconds}\0`) count++;
  }
  return count;
}
