/**
 * Shared setup for the crash test files: one scripted model server per file (owned by the test
 * process, so it outlives every child), a scratch directory per test (sqlite file + side channel),
 * children killed after each test, and the assertions every scenario repeats.
 */
import { afterAll, afterEach, beforeAll, beforeEach, expect } from 'vitest';
import type { DispatchReceipt } from '@flue/runtime';
import { type RecordedRequest, type ScriptedModelServer, startScriptedModelServer } from '@flue/runtime/testing';
import type { ChildConfig, ChildLine } from './fixtures/child.ts';
import { type Child, type DbView, type Scratch, inspectDb, killAll, scratch, settledRecords, spawnChild, waitExit } from './harness.ts';

export const INTERRUPTED_MARKER =
  '{"type":"interrupted","message":"Tool execution was interrupted before completion. The outcome is unknown."}';

export type Line<T extends ChildLine['type']> = Extract<ChildLine, { type: T }>;

export interface CrashSuite {
  readonly server: ScriptedModelServer;
  /** This test's scratch space: `db` (sqlite file) and `side` (side-channel directory). */
  readonly s: Scratch;
  child(config: Omit<ChildConfig, 'db' | 'modelUrl'>, env?: Record<string, string>): Child;
  /** Spawns with `then: 'stop'`, expects a clean exit (code 0, no fatal line), returns its lines. */
  runToEnd(config: Omit<ChildConfig, 'db' | 'modelUrl' | 'then'>, env?: Record<string, string>): Promise<ChildLine[]>;
  /** A restart with nothing left to do calls no model and writes nothing. */
  expectQuietRestart(agent: ChildConfig['agent'], id: string, stream: string, before: DbView): Promise<void>;
}

export function useCrashSuite(): CrashSuite {
  let server: ScriptedModelServer | undefined;
  let current: Scratch | undefined;
  beforeAll(async () => {
    server = await startScriptedModelServer();
  });
  afterAll(async () => {
    await server?.close();
  });
  beforeEach(() => {
    server!.reset();
    current = scratch();
  });
  afterEach(async () => {
    await killAll();
    current?.cleanup();
  });

  const suite: CrashSuite = {
    get server() {
      return server!;
    },
    get s() {
      return current!;
    },
    child(config, env = {}) {
      return spawnChild({ db: suite.s.db, modelUrl: suite.server.url, ...config }, { ...suite.s.env, ...env });
    },
    async runToEnd(config, env = {}) {
      const c = suite.child({ ...config, then: 'stop' }, env);
      const exit = await waitExit(c, 30_000);
      expect(exit, `child exit; stderr:\n${c.stderr()}`).toEqual({ code: 0, signal: null });
      expect(
        c.lines.filter((line) => line.type === 'fatal'),
        c.stderr(),
      ).toEqual([]);
      return c.lines;
    },
    async expectQuietRestart(agent, id, stream, before) {
      const requests = suite.server.requests.length;
      await suite.runToEnd({ agent, id });
      expect(suite.server.requests.length).toBe(requests);
      const after = inspectDb(suite.s.db, stream);
      expect(after.records.length).toBe(before.records.length);
      expect(after.submissions).toEqual(before.submissions);
    },
  };
  return suite;
}

export async function dispatchVia(c: Child, message: string): Promise<DispatchReceipt> {
  c.send({ dispatch: message });
  return (await c.waitFor('receipt', (line) => line.message === message)).receipt;
}

export function lineOf<T extends ChildLine['type']>(lines: ChildLine[], type: T): Line<T> {
  const line = lines.find((l): l is Line<T> => l.type === type);
  if (line === undefined) throw new Error(`no "${type}" line in ${JSON.stringify(lines)}`);
  return line;
}

/** The pid a `runToEnd` child reported. */
export function pidOf(lines: ChildLine[]): number {
  return lineOf(lines, 'ready').pid;
}

export function replyOf(lines: ChildLine[], submissionId: string): string {
  const line = lines.find((l) => (l.type === 'reply' || l.type === 'read-error') && l.submissionId === submissionId);
  if (line === undefined) throw new Error(`no reply line for ${submissionId}: ${JSON.stringify(lines)}`);
  if (line.type !== 'reply') throw new Error(`read(${submissionId}) rejected: ${JSON.stringify(line)}`);
  return line.reply.text;
}

export function readErrorOf(lines: ChildLine[], submissionId: string): Line<'read-error'> {
  const line = lines.find((l): l is Line<'read-error'> => l.type === 'read-error' && l.submissionId === submissionId);
  if (line === undefined) throw new Error(`no read-error line for ${submissionId}: ${JSON.stringify(lines)}`);
  return line;
}

/**
 * Every given submission settled exactly once with `outcome` (row and canonical record), in the
 * given (admission) order; nothing in the view is left unsettled.
 */
export function expectSettledExactlyOnce(view: DbView, ids: string[], outcome = 'completed'): void {
  const settled = settledRecords(view);
  for (const id of ids) {
    const row = view.submissions.find((r) => r.id === id);
    expect(row, `submission row ${id}`).toMatchObject({ status: 'settled', outcome });
    expect(settled.get(id)?.length ?? 0, `submission_settled records for ${id}`).toBe(1);
    expect(settled.get(id)![0]!.record.outcome).toBe(outcome);
  }
  expect(view.submissions.filter((r) => r.status !== 'settled')).toEqual([]);
  const positions = ids.map((id) => settled.get(id)![0]!.index);
  expect([...positions].sort((a, b) => a - b)).toEqual(positions);
}

/** The model-visible transcript of one request as `role: text` lines. */
export function transcript(request: RecordedRequest): string[] {
  return request.messages.map((m) => `${m.role}: ${m.content}`);
}

/** Index of the first message matching, or a failure that prints the whole transcript. */
export function indexOf(request: RecordedRequest, predicate: (m: RecordedRequest['messages'][number]) => boolean, what: string): number {
  const index = request.messages.findIndex(predicate);
  if (index < 0) throw new Error(`model request lacks ${what}:\n${transcript(request).join('\n')}`);
  return index;
}

export function messageOf(request: RecordedRequest, predicate: (m: RecordedRequest['messages'][number]) => boolean, what: string) {
  return request.messages[indexOf(request, predicate, what)]!;
}

/** A manually released gate, for scripted steps that must wait for the test. */
export function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}
