/**
 * Crash-test plumbing: spawn Flue child processes (test/crash/fixtures/child.ts) on Node 22, read
 * their JSON-lines output, kill them at precise moments, and inspect the sqlite file read-only.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import type { ChildConfig, ChildLine } from './fixtures/child.ts';
import { storeRows } from '../support/store-rows.ts';
import { LOG_ROWS } from '../support/log-sql.ts';
import { unpackRecords } from '../../src/runtime/store/record-packing.ts';

const here = dirname(fileURLToPath(import.meta.url));
export const REPO = resolve(here, '../..');
const CHILD = join(here, 'fixtures/child.ts');

/** Node 22 for the children: the pinned `node` devDependency, else this process if it is 22+. */
export const NODE_BIN = (() => {
  const pinned = join(REPO, 'node_modules/.bin/node');
  if (existsSync(pinned)) return pinned;
  if (Number(process.versions.node.split('.')[0]) >= 22) return process.execPath;
  throw new Error('crash tests need Node 22 (node_modules/.bin/node is missing); run npm install');
})();

export async function poll<T>(what: string, fn: () => T | undefined | false, timeoutMs = 30_000, everyMs = 15): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = fn();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export interface Child {
  readonly pid: number;
  readonly lines: ChildLine[];
  stderr(): string;
  /** Resolves with the first output line matching; rejects on timeout or early exit. */
  waitFor<T extends ChildLine['type']>(
    type: T,
    match?: (line: Extract<ChildLine, { type: T }>) => boolean,
    timeoutMs?: number,
  ): Promise<Extract<ChildLine, { type: T }>>;
  send(command: Record<string, unknown>): void;
  /** SIGKILL, resolved once the process is gone. */
  kill(): Promise<void>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly alive: boolean;
}

const live = new Set<Child>();

export function spawnChild(config: ChildConfig, env: Record<string, string>): Child {
  const proc: ChildProcessWithoutNullStreams = spawn(NODE_BIN, ['--no-warnings', CHILD, JSON.stringify(config)], {
    cwd: REPO,
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: ChildLine[] = [];
  let stderr = '';
  let buffer = '';
  let alive = true;
  const listeners = new Set<() => void>();
  proc.stdout.setEncoding('utf8');
  proc.stdout.on('data', (data: string) => {
    buffer += data;
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const text = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (text.trim() === '') continue;
      try {
        lines.push(JSON.parse(text) as ChildLine);
      } catch {
        stderr += `[stdout] ${text}\n`;
      }
    }
    for (const listener of [...listeners]) listener();
  });
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (data: string) => {
    stderr += data;
  });
  proc.stdin.on('error', () => {}); // writes racing a kill
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolveExit) => {
    proc.on('exit', (code, signal) => {
      alive = false;
      live.delete(child);
      for (const listener of [...listeners]) listener();
      resolveExit({ code, signal });
    });
  });
  const child: Child = {
    pid: proc.pid!,
    lines,
    stderr: () => stderr,
    get alive() {
      return alive;
    },
    exited,
    waitFor(type, match = () => true, timeoutMs = 30_000) {
      return new Promise((resolveLine, reject) => {
        const check = () => {
          const found = lines.find((line) => line.type === type && match(line as never));
          if (found !== undefined) {
            done();
            resolveLine(found as never);
          } else if (!alive) {
            done();
            reject(new Error(`child ${proc.pid} exited before printing "${type}".\nstdout: ${JSON.stringify(lines)}\nstderr:\n${stderr}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(
            new Error(
              `timed out after ${timeoutMs} ms waiting for child line "${type}".\nstdout: ${JSON.stringify(lines)}\nstderr:\n${stderr}`,
            ),
          );
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        check();
      });
    },
    send(command) {
      proc.stdin.write(`${JSON.stringify(command)}\n`);
    },
    async kill() {
      if (alive) proc.kill('SIGKILL');
      await exited;
    },
  };
  live.add(child);
  return child;
}

/** For afterEach: SIGKILL every child still running. */
export async function killAll(): Promise<void> {
  await Promise.all([...live].map((child) => child.kill()));
}

/** Waits for a normal end; fails with the child's output if it does not come. */
export async function waitExit(child: Child, timeoutMs = 30_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(
            `child ${child.pid} did not exit within ${timeoutMs} ms.\nstdout: ${JSON.stringify(child.lines)}\nstderr:\n${child.stderr()}`,
          ),
        ),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([child.exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

// ── Scratch space ───────────────────────────────────────────────────────────────────────────

export interface Scratch {
  dir: string;
  db: string;
  side: string;
  env: Record<string, string>;
  cleanup(): void;
}

export function scratch(): Scratch {
  const dir = mkdtempSync(join(tmpdir(), 'flue-crash-'));
  return {
    dir,
    db: join(dir, 'flue.sqlite'),
    side: dir,
    env: { FLUE_CRASH_SIDE: dir },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export interface SideEvent {
  event: string;
  pid: number;
  tool?: string;
  step?: string;
  toolCallId?: string;
  [key: string]: unknown;
}

/** Executions recorded by the agents' side channel (survives SIGKILL). */
export function sideEvents(side: string): SideEvent[] {
  const file = join(side, 'events.jsonl');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as SideEvent);
}

// ── Read-only database inspection ───────────────────────────────────────────────────────────

export interface SubmissionInfo {
  id: string;
  status: string;
  outcome: string | null;
  attemptCount: number;
  joinedInto: string | null;
  abortRequested: boolean;
  /** First attempt's start (ms since epoch), or null before any claim. */
  startedAt: number | null;
}

export interface DbView {
  submissions: SubmissionInfo[];
  /** Every record of the stream, in order, with the batch seq it landed in. */
  records: { seq: number; record: Record<string, any> }[];
  steps: { toolCallId: string; step: string; value: unknown }[];
  /** Committed persistent state (`usePersistentState`), by name. */
  state: Record<string, unknown>;
}

/**
 * A fresh read-only connection per call, so the test never holds a snapshot or a lock while a
 * child writes (WAL readers do not block the writer). The busy timeout rides out the moment a
 * freshly started child rebuilds the WAL index a killed one left behind.
 */
export function inspectDb(path: string, stream?: string): DbView {
  const db = new DatabaseSync(path, { readOnly: true, timeout: 5_000 });
  try {
    const tables = new Set(
      db
        .prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`)
        .all()
        .map((row) => String(row.name)),
    );
    if (!tables.has('flue_submissions')) return { submissions: [], records: [], steps: [], state: {} };
    const where = stream === undefined ? '' : ' WHERE stream = ?';
    const args = stream === undefined ? [] : [stream];
    const submissions = db
      .prepare(
        `SELECT id, status, outcome, attempt_count, joined_into, abort_requested_at, started_at FROM flue_submissions${where} ORDER BY ord`,
      )
      .all(...args)
      .map((row) => ({
        id: String(row.id),
        status: String(row.status),
        outcome: row.outcome === null ? null : String(row.outcome),
        attemptCount: Number(row.attempt_count),
        joinedInto: row.joined_into === null ? null : String(row.joined_into),
        abortRequested: row.abort_requested_at !== null,
        startedAt: row.started_at === null ? null : Number(row.started_at),
      }));
    const records = db
      .prepare(`SELECT seq, records FROM ${LOG_ROWS}${where} ORDER BY stream, seq`)
      .all(...args)
      .flatMap((row) =>
        (unpackRecords(String(row.records), false).records as Record<string, any>[]).map((record) => ({ seq: Number(row.seq), record })),
      );
    const steps = storeRows(db, `SELECT tool_call_id, step, value FROM flue_steps${where}`, ...args).map((row) => ({
      toolCallId: String(row.tool_call_id),
      step: String(row.step),
      value: JSON.parse(String(row.value)),
    }));
    const state = Object.fromEntries(
      storeRows(db, `SELECT name, value FROM flue_state${where}`, ...args).map((row) => [
        String(row.name),
        JSON.parse(String(row.value)) as unknown,
      ]),
    );
    return { submissions, records, steps, state };
  } finally {
    db.close();
  }
}

export function streamOf(agent: string, id: string): string {
  return `agents/${agent}/${id}`;
}

/** The text committed so far for streamed steps (assistant_delta records), per step id. */
export function committedDeltas(view: DbView): Map<string, string> {
  const byStep = new Map<string, string>();
  for (const { record } of view.records) {
    if (record.type === 'assistant_delta' && record.kind === 'text')
      byStep.set(record.stepId, (byStep.get(record.stepId) ?? '') + record.delta);
  }
  return byStep;
}

/** submission_settled records per submission id, in log order. */
export function settledRecords(view: DbView): Map<string, { seq: number; index: number; record: Record<string, any> }[]> {
  const out = new Map<string, { seq: number; index: number; record: Record<string, any> }[]>();
  view.records.forEach(({ seq, record }, index) => {
    if (record.type !== 'submission_settled') return;
    const list = out.get(record.submissionId) ?? [];
    list.push({ seq, index, record });
    out.set(record.submissionId, list);
  });
  return out;
}
