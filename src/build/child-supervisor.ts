/**
 * The child process a dev server runs (`wrangler dev` under `flue dev`, the built Node server under
 * `flue dev --target node`): started, its output passed on and watched for the URL it serves,
 * stopped with a signal and a grace before SIGKILL, started again after a rebuild. The dev command
 * decides when; this module only knows how.
 */
import type { ChildProcess } from 'node:child_process';

export interface ChildSupervisorOptions {
  /** Starts one child, output piped; called at `start()` and at each restart. */
  spawn: () => ChildProcess;
  /** Everything the child writes, on stdout or stderr. */
  output: (text: string) => void;
  /** The line the child prints once it serves; group 1 is its URL. */
  readyPattern: RegExp;
  /** Each time the child says it is ready. */
  onReady?: (url: string) => void;
  /** When the child is ready at a URL other than the last one announced (the first time included). */
  onNewUrl?: (url: string) => void;
  /** The child exited on its own: not stopped by `stop()` or `restart()`. */
  onExit: (code: number | null, signal: NodeJS.Signals | null) => void;
  /** How long a stopped child has to exit before it is killed. */
  graceMs: number;
}

export interface ChildSupervisor {
  start(): void;
  /**
   * Stops the running child (if any) with `signal`, SIGKILL after the grace; resolves once it
   * exited. A restart is `stop()`, then `start()` unless the dev command is ending meanwhile.
   */
  stop(signal: NodeJS.Signals): Promise<void>;
}

/** How much of the child's stdout is kept to find a ready line split across chunks. */
const READY_WINDOW = 4096;
const ANSI_ESCAPE = /\u001b\[[0-9;]*m/g;

export function superviseChild(options: ChildSupervisorOptions): ChildSupervisor {
  let child: ChildProcess | undefined;
  let lastUrl: string | undefined;
  const stopped = new WeakSet<ChildProcess>();

  const start = () => {
    const proc = options.spawn();
    child = proc;
    let window = '';
    proc.stdout?.on('data', (data: Buffer) => {
      const text = data.toString('utf8');
      options.output(text);
      window = (window + text).slice(-READY_WINDOW);
      const url = options.readyPattern.exec(window.replace(ANSI_ESCAPE, ''))?.[1];
      if (url === undefined) return;
      window = '';
      if (url !== lastUrl) {
        lastUrl = url;
        options.onNewUrl?.(url);
      }
      options.onReady?.(url);
    });
    proc.stderr?.on('data', (data: Buffer) => options.output(data.toString('utf8')));
    proc.on('exit', (code, signal) => {
      if (child === proc) child = undefined;
      if (!stopped.has(proc)) options.onExit(code, signal);
    });
  };

  const stop = (signal: NodeJS.Signals) =>
    new Promise<void>((done) => {
      const proc = child;
      if (proc === undefined || proc.exitCode !== null || proc.signalCode !== null) return done();
      stopped.add(proc);
      const kill = setTimeout(() => proc.kill('SIGKILL'), options.graceMs);
      proc.once('exit', () => {
        clearTimeout(kill);
        done();
      });
      proc.kill(signal);
    });

  return { start, stop };
}

/**
 * Ends a dev command on SIGINT (exit code 130) or SIGTERM (143), as a shell expects of a process
 * that stopped on that signal. Returns the function that removes the listeners.
 */
export function onTerminationSignal(finish: (exitCode: 130 | 143) => void): () => void {
  const onSigint = () => finish(130);
  const onSigterm = () => finish(143);
  process.on('SIGINT', onSigint);
  process.on('SIGTERM', onSigterm);
  return () => {
    process.off('SIGINT', onSigint);
    process.off('SIGTERM', onSigterm);
  };
}
