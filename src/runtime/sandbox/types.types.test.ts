/**
 * Compile-time contract of the sandbox types (checked by `tsc --noEmit`; the vitest run only needs
 * the file to load): `SandboxDriver` is derived from `Sandbox`, and says to adapters exactly what
 * it said when it listed its members.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { FileStat, MkdirOptions, RmOptions, Sandbox, SandboxDriver, ShellResult } from './types.ts';

/** The driver contract as adapters have implemented it. */
interface DriverContract {
  exec(
    command: string,
    options: { cwd: string; env?: Record<string, string>; timeoutMs?: number; signal?: AbortSignal },
  ): Promise<ShellResult>;
  readFile(path: string): Promise<string>;
  readFileBuffer(path: string): Promise<Uint8Array>;
  writeFile(path: string, content: string | Uint8Array): Promise<void>;
  stat(path: string): Promise<FileStat>;
  readdir(path: string): Promise<string[]>;
  exists(path: string): Promise<boolean>;
  mkdir(path: string, options?: MkdirOptions): Promise<void>;
  rm(path: string, options?: RmOptions): Promise<void>;
}

describe('SandboxDriver', () => {
  it('has the members adapters implement, no more and no fewer', () => {
    expectTypeOf<SandboxDriver>().branded.toEqualTypeOf<DriverContract>();
    expectTypeOf<keyof SandboxDriver>().toEqualTypeOf<Exclude<keyof Sandbox, 'cwd' | 'resolvePath'>>();
    // The verbs it shares with `Sandbox` are the same functions, exec's required `cwd` aside.
    expectTypeOf<SandboxDriver['readFile']>().toEqualTypeOf<Sandbox['readFile']>();
    // @ts-expect-error -- a driver's exec is never called without the directory to run in
    const exec = (driver: SandboxDriver) => driver.exec('ls', {});
    expect(exec).toBeTypeOf('function');
  });
});
