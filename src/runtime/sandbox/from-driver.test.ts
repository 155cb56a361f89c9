import { describe, expect, it, vi } from 'vitest';
import { sandboxFromDriver } from './from-driver.ts';
import { SandboxDiedError, SandboxOperationUnsupportedError } from './errors.ts';
import { FlueError } from '../common/errors.ts';
import type { OrphanedExecSettlement, SandboxDriver, ShellResult } from './types.ts';

function fakeDriver(overrides: Partial<SandboxDriver> = {}): SandboxDriver & { calls: unknown[][] } {
  const calls: unknown[][] = [];
  const driver: SandboxDriver = {
    exec: async (command, options) => {
      calls.push(['exec', command, options]);
      return { stdout: 'ok', stderr: '', exitCode: 0 };
    },
    readFile: async (p) => (calls.push(['readFile', p]), 'text'),
    readFileBuffer: async (p) => (calls.push(['readFileBuffer', p]), new Uint8Array([1])),
    writeFile: async (p) => void calls.push(['writeFile', p]),
    stat: async (p) => (calls.push(['stat', p]), { isFile: true, isDirectory: false }),
    readdir: async (p) => (calls.push(['readdir', p]), []),
    exists: async (p) => (calls.push(['exists', p]), true),
    mkdir: async (p, o) => void calls.push(['mkdir', p, o]),
    rm: async (p, o) => void calls.push(['rm', p, o]),
    ...overrides,
  };
  return Object.assign(driver, { calls });
}

describe('sandboxFromDriver', () => {
  it('resolves every path against cwd before reaching the driver', async () => {
    const driver = fakeDriver();
    const sandbox = sandboxFromDriver(driver, '/home/u/../work/');
    expect(sandbox.cwd).toBe('/home/work');
    expect(sandbox.resolvePath('a/../b')).toBe('/home/work/b');
    await sandbox.readFile('x');
    await sandbox.stat('/abs/./y');
    await sandbox.rm('d', { recursive: true });
    await sandbox.exec('ls', { cwd: 'sub', timeoutMs: 1500.2, env: { A: '1' } });
    expect(driver.calls).toEqual([
      ['readFile', '/home/work/x'],
      ['stat', '/abs/y'],
      ['rm', '/home/work/d', { recursive: true }],
      ['exec', 'ls', { cwd: '/home/work/sub', env: { A: '1' }, timeoutMs: 1501 }],
    ]);
  });

  it('writeFile creates the parent and retries once when the first write fails', async () => {
    let attempts = 0;
    const driver = fakeDriver({
      writeFile: async () => {
        attempts++;
        if (attempts === 1) throw new Error('ENOENT');
      },
    });
    await sandboxFromDriver(driver, '/w').writeFile('a/b/c.txt', 'x');
    expect(attempts).toBe(2);
    expect(driver.calls).toContainEqual(['mkdir', '/w/a/b', { recursive: true }]);
  });

  it('writeFile propagates the retry error', async () => {
    const driver = fakeDriver({ writeFile: async () => Promise.reject(new Error('read-only')) });
    await expect(sandboxFromDriver(driver, '/w').writeFile('x', 'y')).rejects.toThrow('read-only');
  });

  it('exists never throws', async () => {
    const driver = fakeDriver({ exists: async () => Promise.reject(new Error('boom')) });
    await expect(sandboxFromDriver(driver, '/w').exists('x')).resolves.toBe(false);
  });

  it('a pre-aborted signal rejects before running', async () => {
    const driver = fakeDriver();
    const reason = new Error('stop');
    const error = await sandboxFromDriver(driver, '/w')
      .exec('ls', { signal: AbortSignal.abort(reason) })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DOMException);
    expect((error as DOMException).name).toBe('AbortError');
    expect((error as { cause?: unknown }).cause).toBe(reason);
    expect(driver.calls).toEqual([]);
  });

  it('abort rejects promptly and reports the orphan settlement, discarding its output', async () => {
    let finish!: (r: ShellResult) => void;
    const driver = fakeDriver({ exec: () => new Promise<ShellResult>((resolve) => (finish = resolve)) });
    const orphans: OrphanedExecSettlement[] = [];
    const sandbox = sandboxFromDriver(driver, '/w', { onOrphanSettled: (s) => orphans.push(s) });
    const controller = new AbortController();
    const running = sandbox.exec('sleep 100', { signal: controller.signal });
    controller.abort('user');
    await expect(running).rejects.toMatchObject({ name: 'AbortError', cause: 'user' });
    expect(orphans).toEqual([]);
    finish({ stdout: 'late', stderr: '', exitCode: 0 });
    await vi.waitFor(() => expect(orphans).toHaveLength(1));
    expect(orphans[0]).toMatchObject({ command: 'sleep 100', result: { stdout: 'late' } });
    expect(orphans[0]!.abortedAt).toBeInstanceOf(Date);
  });

  it('passes non-zero exits through as results', async () => {
    const driver = fakeDriver({ exec: async () => ({ stdout: '', stderr: 'bad', exitCode: 3 }) });
    await expect(sandboxFromDriver(driver, '/w').exec('x', { signal: new AbortController().signal })).resolves.toEqual({
      stdout: '',
      stderr: 'bad',
      exitCode: 3,
    });
  });

  it('typed errors extend FlueError with stable types', () => {
    const unsupported = new SandboxOperationUnsupportedError('rm', 'acme', { force: true });
    expect(unsupported).toBeInstanceOf(FlueError);
    expect(unsupported.type).toBe('sandbox_operation_unsupported');
    expect(unsupported.meta).toEqual({ operation: 'rm', provider: 'acme', options: { force: true } });
    expect(new SandboxDiedError().type).toBe('sandbox_died');
  });
});
