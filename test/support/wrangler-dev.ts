/**
 * Test support: a Flue project built with `flue build` and served by `wrangler dev` on loopback,
 * offline, stopped by process group. Shared by the end-to-end, interop and page tests.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import { packageRoot } from '../../src/build/package-root.ts';
import { offlineEnv } from '../../src/build/test-project.ts';

export interface DevServer {
  /** e.g. `http://127.0.0.1:PORT` */
  base: string;
  /** wrangler's process id, also its process group's (workerd runs in that group). */
  pid: number;
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
    probe.on('error', reject);
  });
}

/** `flue build` in `cwd`; throws with its output when it fails. */
export function buildProject(cwd: string): void {
  const built = spawnSync(process.execPath, [path.join(packageRoot(), 'bin/flue.js'), 'build'], {
    cwd,
    env: offlineEnv(),
    encoding: 'utf8',
  });
  if (built.status !== 0) throw new Error(`flue build failed in ${cwd}:\n${built.stdout}\n${built.stderr}`);
}

/**
 * `wrangler dev` on the generated config (or `config`, relative to `cwd`), with `vars` as Worker
 * vars and `extraArgs` appended; resolves once it is ready.
 */
export async function startWranglerDev(
  cwd: string,
  vars: Record<string, string>,
  readyMs = 90_000,
  config = '.flue.wrangler.json',
  extraArgs: string[] = [],
): Promise<DevServer> {
  const bin = path.join(packageRoot(), 'node_modules/wrangler/bin/wrangler.js');
  // A port found free can be taken before wrangler binds it (by another test starting a server at
  // the same moment): then wrangler exits saying so, and it starts again on another port.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const args = ['dev', '--config', config, '--ip', '127.0.0.1', '--port', String(port)];
    for (const [name, value] of Object.entries(vars)) args.push('--var', `${name}:${value}`);
    args.push(...extraArgs);
    const child = spawn(process.execPath, [bin, ...args], { cwd, env: offlineEnv(), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      return await whenReady(child, port, readyMs);
    } catch (error) {
      if (attempt < 3 && error instanceof PortTaken) continue;
      throw error;
    }
  }
}

/** wrangler dev could not bind a port it was given. */
class PortTaken extends Error {}

/** Resolves with the server once `child` says it is ready; rejects when it exits first or takes longer than `readyMs`. */
async function whenReady(child: ChildProcess, port: number, readyMs: number): Promise<DevServer> {
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`wrangler dev did not start within ${readyMs} ms:\n${output}`)), readyMs);
    const onData = (data: Buffer) => {
      output += data.toString();
      if (output.includes('Ready on')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      const message = `wrangler dev exited with ${code}:\n${output}`;
      reject(output.includes('Address already in use') ? new PortTaken(message) : new Error(message));
    });
  });
  return {
    base: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    async stop() {
      if (child.pid === undefined || child.exitCode !== null) return;
      const signal = (name: NodeJS.Signals) => {
        try {
          process.kill(-child.pid!, name); // the process group: wrangler and workerd
        } catch {
          // already gone
        }
      };
      signal('SIGTERM');
      const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 10_000));
      if ((await Promise.race([exited, timeout])) === 'timeout') signal('SIGKILL');
    },
  };
}
