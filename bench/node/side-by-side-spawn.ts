/**
 * One run of a side-by-side child (side-by-side-child.ts, or a revision's copy of it): spawned with
 * `<runtime> <scenario> <model server url>`, it prints `@@settled` when its first reply settled and
 * `@@result <json>` with its figures before it exits.
 */
import { spawn } from 'node:child_process';

export interface ChildOutcome {
  result: Record<string, unknown>;
  /** Spawn to the child's `@@settled` line (cold scenario only). */
  settledMs?: number;
}

/** Runs `child` to its end; rejects, naming `label`, when it fails or prints no result. */
export function runSideBySideChild(child: string, args: readonly string[], label: string, env?: NodeJS.ProcessEnv): Promise<ChildOutcome> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const proc = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', child, ...args], {
      ...(env === undefined ? {} : { env }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let settledMs: number | undefined;
    proc.stdout.setEncoding('utf8');
    proc.stderr.setEncoding('utf8');
    proc.stdout.on('data', (data: string) => {
      if (settledMs === undefined && (stdout + data).includes('@@settled\n')) settledMs = performance.now() - started;
      stdout += data;
    });
    proc.stderr.on('data', (data: string) => {
      stderr += data;
    });
    proc.on('error', reject);
    proc.on('close', (code) => {
      const line = stdout.split('\n').find((candidate) => candidate.startsWith('@@result '));
      if (code !== 0 || line === undefined) {
        reject(new Error(`${label}: child exited with ${code}\n${stderr}${stdout}`));
        return;
      }
      resolve({ result: JSON.parse(line.slice('@@result '.length)) as Record<string, unknown>, settledMs });
    });
  });
}
