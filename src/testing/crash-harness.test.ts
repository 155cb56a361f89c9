/**
 * The crash harness itself: misuse is refused with clear errors, a point that is never reached is
 * reported, the dead runtime does nothing more, and close() leaves the process clean.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import * as v from 'valibot';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { defineTool, dispatch, init, useModel, useTool } from '../runtime/index.ts';
import { crashProbe } from '../runtime/store/crash-probe.ts';
import { configuredRuntime } from '../runtime/host/runtime.ts';
import { start } from '../node/start.ts';
import { sqlite } from '../node/sqlite.ts';
import {
  type CrashHarness,
  CrashHarnessError,
  CrashPointNotReachedError,
  type ScriptedModelServer,
  crashHarness,
  scriptedProvider,
  startScriptedModelServer,
} from './index.ts';

const lookup = defineTool({
  name: 'lookup',
  description: 'Looks a key up.',
  input: v.object({ key: v.string() }),
  run: ({ data }) => ({ output: `value-of-${data.key}` }),
});

const note = defineTool({
  name: 'note',
  description: 'Writes a note.',
  input: v.object({ text: v.string() }),
  durable: true,
  async run({ step }) {
    return { output: await step.do('write', () => 'written') };
  },
});

function Assistant() {
  useModel('anthropic/claude-haiku-4-5');
  useTool(lookup);
  useTool(note);
  return 'You assist.';
}

function Unlisted() {
  useModel('anthropic/claude-haiku-4-5');
  return 'Not in the harness.';
}

let server: ScriptedModelServer;
let lab: CrashHarness | undefined;

beforeAll(async () => {
  server = await startScriptedModelServer();
});
afterAll(async () => {
  await server.close();
});
afterEach(async () => {
  await lab?.close();
  lab = undefined;
});

async function open(): Promise<CrashHarness> {
  server.reset();
  lab = await crashHarness({
    agents: [Assistant],
    providers: [scriptedProvider({ baseUrl: server.url, id: 'anthropic', models: ['claude-haiku-4-5'], api: 'anthropic-messages' })],
    env: {},
  });
  return lab;
}

describe('crashHarness', () => {
  it('reports a crash point that is never reached: crashed and settle() reject, the report still reads', async () => {
    const lab = await open();
    server.script({ text: 'No tools needed.' });
    lab.crashAt({ point: 'tool', name: 'lookup' });
    await dispatch(Assistant, { id: 'h1', message: 'Hi.' });

    const missed = lab.crashed;
    await expect(missed).rejects.toBeInstanceOf(CrashPointNotReachedError);
    await expect(missed).rejects.toThrow(
      '[flue] crashHarness: crash point "tool" "lookup" was armed but never reached; all 1 submission(s) settled without reaching it.',
    );
    await expect(lab.settle()).rejects.toBeInstanceOf(CrashPointNotReachedError);
    const report = lab.report();
    expect(report.submissions.map((s) => [s.outcome, s.settlements])).toEqual([['completed', 1]]);
    expect(report).toMatchObject({ toolRuns: {}, stepRuns: {}, crashes: [] });
    expect(lab.up).toBe(true);
  });

  it('reports a point missed by work that hangs, by name and at its deadline, and one armed with nothing to run', async () => {
    const lab = await open();
    lab.crashAt({ point: 'tool', name: 'note', timeoutMs: 50 });
    await expect(lab.crashed).rejects.toThrow(
      '[flue] crashHarness: crash point "tool" "note" was armed but not reached within 50 ms (crashAt timeoutMs); no submission is open.',
    );

    // The model stream stalls: nothing settles and the runtime stays busy.
    server.script({ text: ['Once ', 'upon'], hangAfterChunks: 1 });
    lab.crashAt({ point: 'settlement', timeoutMs: 200 });
    const receipt = await dispatch(Assistant, { id: 'hang', message: 'Tell me a story.' });
    const { submissionId } = receipt;
    const missed = lab.crashed;
    await expect(missed).rejects.toBeInstanceOf(CrashPointNotReachedError);
    await expect(missed).rejects.toThrow(
      `[flue] crashHarness: crash point "settlement" was armed but not reached within 200 ms (crashAt timeoutMs); still open: ${submissionId} (Assistant/hang, 1 attempt(s)).`,
    );
    // settle() reports the same miss at once, not at its own (longer) timeout.
    const error = await missed.catch((caught: unknown) => caught);
    await expect(lab.settle({ timeoutMs: 60_000 })).rejects.toBe(error);
    const handle = init(Assistant, { id: 'hang' });
    await handle.abort();
    await expect(handle.read(receipt)).rejects.toThrow('aborted');
    expect(lab.report().submissions.map((s) => [s.outcome, s.settlements])).toEqual([['aborted', 1]]);
  });

  it('reports a point missed when the runtime goes idle with work it cannot drive, though nothing settles', async () => {
    // Work of an agent this harness does not register, left queued in the file by another runtime.
    const path = join(mkdtempSync(join(tmpdir(), 'flue-crash-idle-')), 'flue.sqlite');
    const other = await start({
      agents: [Unlisted],
      db: sqlite(path),
      env: {},
      providers: [scriptedProvider({ baseUrl: server.url, id: 'anthropic', models: ['claude-haiku-4-5'], api: 'anthropic-messages' })],
    });
    const { submissionId } = await dispatch(Unlisted, { id: 'orphan', message: 'Hi.' });
    await other.stop({ graceMs: 0 });

    server.reset();
    lab = await crashHarness({ agents: [Assistant], path, providers: [], env: {} });
    lab.crashAt({ point: 'model' });
    await expect(lab.crashed).rejects.toThrow(
      `[flue] crashHarness: crash point "model" was armed but never reached; the runtime went idle with 1 submission(s) open that it does not drive: ${submissionId} (Unlisted/orphan, `,
    );
    await expect(lab.settle()).rejects.toBeInstanceOf(CrashPointNotReachedError);
    await lab.close();
    rmSync(dirname(path), { recursive: true, force: true });
  });

  it('refuses unknown tools, agents and points with clear errors', async () => {
    const lab = await open();
    expect(() => lab.crashAt({ point: 'tool', name: 'lokup' })).toThrow(CrashHarnessError);
    expect(() => lab.crashAt({ point: 'tool', name: 'lokup' })).toThrow(
      '[flue] crashHarness: no agent of the harness declares a tool named "lokup" (declared: lookup, note). Tool names are the defineTool() names passed to useTool().',
    );
    expect(() => lab.crashAt({ point: 'step', tool: 'nope', name: 'write' })).toThrow('named "nope"');
    expect(() => lab.crashAt({ point: 'step', tool: 'note', name: '' })).toThrow('needs the step name');
    expect(() => lab.crashAt({ point: 'model', agent: Unlisted })).toThrow('agent "Unlisted" is not one of the harness\'s agents');
    expect(() => lab.crashAt({ point: 'model', nth: 0 })).toThrow('nth must be a positive integer');
    expect(() => lab.crashAt({ point: 'model', timeoutMs: 0 })).toThrow(
      'timeoutMs must be a positive, finite number of milliseconds; got 0.',
    );
    expect(() => lab.crashAt({ point: 'reboot' } as never)).toThrow('point one of admission, model, tool, step, settlement');
    expect(() => lab.crashed).toThrow('nothing is armed');

    lab.crashAt({ point: 'step', tool: 'note', name: 'write' });
    expect(() => lab.crashAt({ point: 'model' })).toThrow('crash point "step" "note/write" is still armed; one crash point at a time');
    await expect(lab.restart()).rejects.toThrow('restart() is for a crashed runtime, and the runtime is up');
  });

  it('the dead runtime runs nothing more: a sibling call in the crashed batch never starts; no runtime until restart()', async () => {
    const lab = await open();
    server.script(
      {
        toolCalls: [
          { id: 'call_a', name: 'lookup', arguments: { key: 'a' } },
          { id: 'call_b', name: 'note', arguments: { text: 'b' } },
        ],
      },
      { text: 'Done.' },
    );
    lab.crashAt({ point: 'tool', name: 'lookup' });
    await dispatch(Assistant, { id: 'h2', message: 'Look up a and write a note.' });
    await lab.crashed;
    expect(lab.up).toBe(false);
    expect(configuredRuntime()).toBeUndefined();
    await expect(dispatch(Assistant, { id: 'h2', message: 'Anyone there?' })).rejects.toThrow('needs a configured Flue runtime');
    await expect(lab.settle()).rejects.toThrow('the runtime is down after crash 1 at "tool" in tool "lookup"');
    expect(lab.report().submissions.map((s) => [s.outcome, s.settlements])).toEqual([[null, 0]]);

    await lab.restart();
    const report = await lab.settle();
    expect(report.submissions.map((s) => [s.outcome, s.settlements])).toEqual([['completed', 1]]);
    // lookup: the crashed run only (ordinary, not re-run); note: the recovery run only (its first
    // run would have started after lookup's, in the dead runtime).
    expect(report.toolRuns).toEqual({ lookup: 1, note: 1 });
    expect(report.stepRuns).toEqual({ 'note/write': 1 });
  });

  it('close() leaves no runtime, no probe and no file behind, even while crashed', async () => {
    const crashed = await open();
    server.script({ text: 'Hello.' });
    crashed.crashAt({ point: 'settlement' });
    await dispatch(Assistant, { id: 'h3', message: 'Hi.' });
    await crashed.crashed;
    await crashed.close();
    expect(configuredRuntime()).toBeUndefined();
    expect(crashProbe()).toBeUndefined();
    expect(existsSync(crashed.path)).toBe(false);
    await expect(crashed.restart()).rejects.toThrow('restart() after close()');

    // A clean close while up, and the process is free for a plain start() afterwards.
    const up = await open();
    await up.close();
    expect(configuredRuntime()).toBeUndefined();
    expect(crashProbe()).toBeUndefined();
    const flue = await start({ agents: [Assistant], env: {}, providers: [] });
    await flue.stop();
  });

  it('refuses to open beside another harness or a configured runtime', async () => {
    await open();
    await expect(crashHarness({ agents: [Assistant] })).rejects.toThrow('another crash harness is open in this process');
    await lab!.close();
    lab = undefined;
    const flue = await start({ agents: [Assistant], env: {}, providers: [] });
    try {
      await expect(crashHarness({ agents: [Assistant] })).rejects.toThrow('a Flue runtime is already configured in this process');
    } finally {
      await flue.stop();
    }
    await expect(crashHarness({ agents: [] })).rejects.toThrow('options.agents must list at least one agent');
  });
});
