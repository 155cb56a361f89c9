/**
 * Hostile inputs against `local()`: every path-taking verb and built-in file tool must stay inside
 * the root, symlinks included, and never show a byte or a name from outside it.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBuiltinTool, withPackagedSkills } from '../runtime/engine/agent-sandbox.ts';
import { defaultSandboxTools } from '../runtime/sandbox/tools.ts';
import type { AgentTool, Sandbox } from '../runtime/sandbox/types.ts';
import { local, LocalSandboxInvalidPathError, LocalSandboxPathError } from './local.ts';

const MARKER = `FLUE_OUTSIDE_${process.pid}_${Date.now()}`;
const OUTSIDE_NAME = `outside-${MARKER}.txt`;

let base: string;
let root: string;
let outside: string;
let sandbox: Sandbox;

beforeAll(async () => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'flue-confine-')));
  root = join(base, 'root');
  outside = join(base, 'outside');
  mkdirSync(join(root, 'sub', 'deep'), { recursive: true });
  mkdirSync(join(outside, 'dir'), { recursive: true });
  writeFileSync(join(outside, OUTSIDE_NAME), `${MARKER}\n`);
  writeFileSync(join(outside, 'dir', OUTSIDE_NAME), `${MARKER}\n`);
  writeFileSync(join(outside, 'plain.txt'), `${MARKER}\n`);
  writeFileSync(join(root, 'inside.txt'), 'needle inside\n');
  writeFileSync(join(root, 'sub', 'deep', 'nested.txt'), 'needle nested\n');
  symlinkSync(outside, join(root, 'escape')); // directory link out of the root
  symlinkSync(join(outside, OUTSIDE_NAME), join(root, 'secret-link')); // file link out of the root
  symlinkSync(join(outside, 'missing.txt'), join(root, 'dangling')); // dangling link out of the root
  symlinkSync('sub', join(root, 'sub-link')); // directory link inside the root
  symlinkSync('inside.txt', join(root, 'inside-link')); // file link inside the root
  sandbox = await local({ cwd: root }).createSandbox({ id: 'confinement' });
});

afterAll(() => {
  rmSync(base, { recursive: true, force: true });
});

function leaks(text: string): boolean {
  return text.includes(MARKER) || text.includes(OUTSIDE_NAME) || text.includes('root:x:0:0');
}

/** What the model would see: `{ isError, content }`, never outside content or names. */
async function run(tool: AgentTool, args: Record<string, unknown>): Promise<{ isError: boolean; content: string }> {
  const { isError, content } = await runBuiltinTool(tool, 'hostile', args, new AbortController().signal);
  expect(leaks(content), content).toBe(false);
  return { isError, content };
}

/** The refusal wording read/write/edit already use. */
function expectRefused(result: { isError: boolean; content: string }): void {
  expect(result.isError, result.content).toBe(true);
  expect(result.content).toMatch(/^\[flue\] Access denied: .+ is outside the sandbox root /);
  expect(result.content).toContain(`Only paths inside ${root} can be used.`);
}

const views: Array<[string, () => Sandbox]> = [
  ['the sandbox', () => sandbox],
  ['the agent overlay', () => withPackagedSkills(sandbox, () => [])],
];

describe.each(views)('grep over %s', (_label, view) => {
  const grep = (): AgentTool => defaultSandboxTools(view()).find((t) => t.name === 'grep')!;

  it.each([
    ['/etc/passwd', 'root'],
    ['/etc', 'root'],
    ['__OUTSIDE__', MARKER],
    ['..', MARKER],
    ['../..', MARKER],
    ['sub/../../outside', MARKER],
    ['missing/../../outside', MARKER],
    ['escape', MARKER],
    ['escape/dir', MARKER],
    ['secret-link', MARKER],
    ['dangling', MARKER],
  ])('refuses path %s', async (path, pattern) => {
    expectRefused(await run(grep(), { pattern, path: path.replace('__OUTSIDE__', outside) }));
  });

  it.each(['../outside/*', '/etc/*', '../*', '**/../../*', 'escape/*'])('refuses include %s', async (include) => {
    expectRefused(await run(grep(), { pattern: MARKER, include }));
  });

  it('a walk skips symlinks that leave the root: no match is the honest answer', async () => {
    const result = await run(grep(), { pattern: MARKER });
    expect(result).toEqual({ isError: false, content: 'No matches found.' });
    const needles = await run(grep(), { pattern: 'needle' });
    expect(needles.content.split('\n').sort()).toEqual(['./inside.txt:1:needle inside', './sub/deep/nested.txt:1:needle nested']);
  });

  it('`..` after a symlink is resolved where it was checked, not by the kernel', async () => {
    // Lexically escape/../outside is root/outside (absent); physically it would be the outside dir.
    const result = await run(grep(), { pattern: MARKER, path: 'escape/../outside' });
    expect(result.isError).toBe(true);
    expect(result.content).toMatch(/No such file or directory/);
  });

  it('refuses a NUL byte in path, pattern and include', async () => {
    for (const args of [{ pattern: 'x', path: 'inside.txt\0/../../outside' }, { pattern: 'x\0' }, { pattern: 'x', include: '*\0' }]) {
      const result = await run(grep(), args);
      expect(result.isError).toBe(true);
      expect(result.content).toMatch(/must not contain NUL bytes/);
    }
  });

  it('follows symlinks inside the root named as path', async () => {
    expect(await run(grep(), { pattern: 'needle', path: 'sub-link' })).toEqual({
      isError: false,
      content: 'sub-link/deep/nested.txt:1:needle nested',
    });
    expect(await run(grep(), { pattern: 'needle', path: 'inside-link' })).toEqual({
      isError: false,
      content: 'inside-link:1:needle inside',
    });
    expect((await run(grep(), { pattern: 'needle', path: 'sub', include: 'deep/*' })).isError).toBe(false);
  });
});

describe.each(views)('glob over %s', (_label, view) => {
  const glob = (): AgentTool => defaultSandboxTools(view()).find((t) => t.name === 'glob')!;

  it.each(['/etc', '__OUTSIDE__', '..', '../..', 'sub/../../outside', 'escape', 'escape/dir', 'dangling'])(
    'refuses path %s',
    async (path) => {
      expectRefused(await run(glob(), { pattern: '*', path: path.replace('__OUTSIDE__', outside) }));
    },
  );

  it.each(['../*', '../outside/*', '/etc/passwd', '/*', '/', 'sub/../../*', 'escape/*'])('refuses pattern %s', async (pattern) => {
    expectRefused(await run(glob(), { pattern }));
  });

  it('a walk lists only regular files inside the root', async () => {
    const result = await run(glob(), { pattern: '*' });
    expect(result.content.split('\n').sort()).toEqual(['./inside.txt', './sub/deep/nested.txt']);
  });

  it('`..` after a symlink is resolved where it was checked, not by the kernel', async () => {
    expect(await run(glob(), { pattern: '*', path: 'escape/../outside' })).toEqual({
      isError: false,
      content: 'No files found matching pattern.',
    });
  });

  it('refuses a NUL byte in path and pattern', async () => {
    for (const args of [{ pattern: '*', path: 'sub\0' }, { pattern: '*\0' }]) {
      const result = await run(glob(), args);
      expect(result.isError).toBe(true);
      expect(result.content).toMatch(/must not contain NUL bytes/);
    }
  });

  it('follows a directory symlink inside the root named as path', async () => {
    expect(await run(glob(), { pattern: '*.txt', path: 'sub-link' })).toEqual({ isError: false, content: 'sub-link/deep/nested.txt' });
    expect(await run(glob(), { pattern: '*.txt', path: 'sub/deep/..' })).toEqual({ isError: false, content: 'sub/deep/nested.txt' });
  });
});

describe('read/write/edit over the agent overlay', () => {
  const tools = (): Record<string, AgentTool> =>
    Object.fromEntries(defaultSandboxTools(withPackagedSkills(sandbox, () => [])).map((t) => [t.name, t]));

  it.each(['/etc/passwd', '..', '../..', 'sub/../../outside/x', 'escape/x', 'secret-link', 'dangling', '__OUTSIDE__'])(
    'refuses %s',
    async (raw) => {
      const path = raw.replace('__OUTSIDE__', join(outside, 'plain.txt'));
      const { read, write, edit } = tools();
      expectRefused(await run(read!, { path }));
      expectRefused(await run(write!, { path, content: 'PWNED' }));
      expectRefused(await run(edit!, { path, oldText: MARKER, newText: 'PWNED' }));
    },
  );

  it('works through symlinks inside the root', async () => {
    const { read } = tools();
    expect(await run(read!, { path: 'inside-link' })).toEqual({ isError: false, content: 'needle inside' });
    expect(await run(read!, { path: 'sub-link/deep/nested.txt' })).toEqual({ isError: false, content: 'needle nested' });
  });
});

describe('sandbox verbs', () => {
  const hostile = (): string[] => [
    '/etc/passwd',
    '/etc',
    '..',
    '../..',
    'sub/../../outside',
    'escape',
    'escape/dir',
    'secret-link',
    'dangling',
    outside,
  ];

  it('refuse every hostile path with LocalSandboxPathError', async () => {
    for (const p of hostile()) {
      await expect(sandbox.readFile(p)).rejects.toBeInstanceOf(LocalSandboxPathError);
      await expect(sandbox.readFileBuffer(p)).rejects.toBeInstanceOf(LocalSandboxPathError);
      await expect(sandbox.stat(p)).rejects.toBeInstanceOf(LocalSandboxPathError);
      await expect(sandbox.readdir(p)).rejects.toBeInstanceOf(LocalSandboxPathError);
      await expect(sandbox.writeFile(`${p}/new.txt`, 'x')).rejects.toBeInstanceOf(LocalSandboxPathError);
      await expect(sandbox.mkdir(`${p}/made`, { recursive: true })).rejects.toBeInstanceOf(LocalSandboxPathError);
      await expect(sandbox.rm(`${p}/nothing`, { force: true })).rejects.toBeInstanceOf(LocalSandboxPathError);
      await expect(sandbox.exec('true', { cwd: p })).rejects.toBeInstanceOf(LocalSandboxPathError);
      expect(await sandbox.exists(p)).toBe(false);
    }
  });

  it('refuse a NUL byte with LocalSandboxInvalidPathError naming the path', async () => {
    const p = 'inside\0.txt';
    const verbs: Array<() => Promise<unknown>> = [
      () => sandbox.readFile(p),
      () => sandbox.readFileBuffer(p),
      () => sandbox.writeFile(p, 'x'),
      () => sandbox.stat(p),
      () => sandbox.readdir(p),
      () => sandbox.mkdir(p),
      () => sandbox.rm(p, { force: true }),
      () => sandbox.exec('true', { cwd: p }),
    ];
    for (const verb of verbs) {
      const error = await verb().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LocalSandboxInvalidPathError);
      expect(error).toMatchObject({ type: 'sandbox_path_invalid', message: expect.stringContaining('inside\\u0000.txt') });
    }
    expect(await sandbox.exists(p)).toBe(false);
  });

  it('resolvePath is lexical and touches nothing; the verbs that touch the host check', async () => {
    expect(sandbox.resolvePath('../outside')).toBe(outside);
    await expect(sandbox.readdir(sandbox.resolvePath('../outside'))).rejects.toBeInstanceOf(LocalSandboxPathError);
  });

  it('unrestricted: true lifts the checks for the search tools too', async () => {
    const free = await local({ cwd: root, unrestricted: true }).createSandbox({ id: 'free' });
    const grep = defaultSandboxTools(free).find((t) => t.name === 'grep')!;
    const result = await runBuiltinTool(grep, 'free', { pattern: MARKER, path: outside }, new AbortController().signal);
    expect(result.content).toContain(MARKER);
  });
});
