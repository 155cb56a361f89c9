/**
 * `sandboxFromDriver` (sandbox.md §3.2): turns an adapter's absolute-path driver into a full
 * `Sandbox`. The wrapper, not each adapter, owns the cross-cutting rules so they hold uniformly:
 * path resolution, the writeFile parent guarantee, `exists` never throwing, and the exec abort race
 * (abort rejects promptly; the still-running command becomes an orphan whose late settlement is
 * reported to `onOrphanSettled` and otherwise discarded).
 */
import { abortError } from './errors.ts';
import { dirname, resolvePath } from './paths.ts';
import type { ExecOptions, FileStat, Sandbox, SandboxDriver, SandboxFromDriverOptions, ShellResult } from './types.ts';

export function sandboxFromDriver(driver: SandboxDriver, cwd: string, options: SandboxFromDriverOptions = {}): Sandbox {
  const root = resolvePath('/', cwd);
  const abs = (p: string): string => resolvePath(root, p);

  return {
    cwd: root,
    resolvePath: (p: string) => abs(p),

    exec(command: string, execOptions: ExecOptions = {}): Promise<ShellResult> {
      const { signal } = execOptions;
      if (signal?.aborted) return Promise.reject(abortError(signal.reason));
      const startedAt = new Date();
      const running = driver.exec(command, {
        cwd: abs(execOptions.cwd ?? '.'),
        ...(execOptions.env ? { env: execOptions.env } : {}),
        // Providers count whole units; rounding up keeps the caller's deadline a minimum.
        ...(execOptions.timeoutMs !== undefined ? { timeoutMs: Math.ceil(execOptions.timeoutMs) } : {}),
        ...(signal ? { signal } : {}),
      });
      if (!signal) return running;
      return new Promise<ShellResult>((resolve, reject) => {
        let settled = false;
        const onAbort = (): void => {
          if (settled) return;
          settled = true;
          const abortedAt = new Date();
          reject(abortError(signal.reason));
          // The remote command may still run; report its fate, never its output to the caller.
          running.then(
            (result) => options.onOrphanSettled?.({ command, startedAt, abortedAt, settledAt: new Date(), result }),
            (error: unknown) => options.onOrphanSettled?.({ command, startedAt, abortedAt, settledAt: new Date(), error }),
          );
        };
        signal.addEventListener('abort', onAbort, { once: true });
        running.then(
          (result) => {
            if (settled) return;
            settled = true;
            signal.removeEventListener('abort', onAbort);
            resolve(result);
          },
          (error: unknown) => {
            if (settled) return;
            settled = true;
            signal.removeEventListener('abort', onAbort);
            reject(error);
          },
        );
      });
    },

    readFile: (p) => driver.readFile(abs(p)),
    readFileBuffer: (p) => driver.readFileBuffer(abs(p)),

    async writeFile(p, content) {
      const target = abs(p);
      try {
        await driver.writeFile(target, content);
      } catch {
        // Parents are guaranteed in every mode: create them and retry once; that error propagates.
        try {
          await driver.mkdir(dirname(target), { recursive: true });
        } catch {
          // The retry below reports the real problem.
        }
        await driver.writeFile(target, content);
      }
    },

    stat: (p): Promise<FileStat> => driver.stat(abs(p)),
    readdir: (p) => driver.readdir(abs(p)),

    async exists(p) {
      try {
        return await driver.exists(abs(p));
      } catch {
        return false;
      }
    },

    mkdir: (p, o) => driver.mkdir(abs(p), o),
    rm: (p, o) => driver.rm(abs(p), o),
  };
}
