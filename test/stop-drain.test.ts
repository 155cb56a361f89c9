/**
 * `flue.stop()` drains, then disconnects persistence (seed 004, start()): new work is refused with
 * `RuntimeUnavailableError` ('draining'), a running response runs on to its settlement, and past
 * the grace period what is left is cut off as an interruption the next start() recovers. Every
 * read() waiting in the process settles: with its reply, or with a retryable typed error.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { RuntimeUnavailableError, defineTool, init, useModel, useTool } from '@flue/runtime';
import { sqlite } from '@flue/runtime/node';
import { useScriptedRuntime } from './support/scripted-runtime.ts';

const ctx = useScriptedRuntime();

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'flue-drain-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

let toolStarted = deferred();
let toolGate = deferred();

const fetchRecords = defineTool({
  name: 'fetch_records',
  description: 'Fetch the records.',
  async run() {
    toolStarted.resolve();
    await toolGate.promise;
    return 'Three records.';
  },
});

function Clerk() {
  useModel('anthropic/claude-haiku-4-5');
  useTool(fetchRecords);
  return 'Keep the records.';
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error,
  );
}

test('stop() during a short response lets it settle: its read() resolves; a queued delivery is kept for the next start', async () => {
  const db = join(dir, 'short.db');
  toolStarted = deferred();
  toolGate = deferred();
  const flue = await ctx.start([Clerk], { db: sqlite(db) });
  ctx.server.script({ toolCalls: [{ name: 'fetch_records', arguments: {} }] }, { text: 'Found three records.' });
  const handle = init(Clerk, { id: 'drain-short' });
  const first = await handle.dispatch('Fetch the records');
  const firstReply = handle.read(first);
  await toolStarted.promise;
  // Queued behind the running response: a drain does not start it.
  const second = await handle.dispatch('Then archive them');
  const secondReply = rejection(handle.read(second));

  const stopped = flue.stop();
  const refused = await rejection(handle.dispatch('One more'));
  expect(refused).toBeInstanceOf(RuntimeUnavailableError);
  expect(refused).toMatchObject({ type: 'runtime_unavailable', status: 503, meta: { state: 'draining' } });

  toolGate.resolve();
  expect((await firstReply).text).toBe('Found three records.');
  const waiting = await secondReply;
  expect(waiting).toBeInstanceOf(RuntimeUnavailableError);
  expect(waiting).toMatchObject({ meta: { state: 'draining', submissionId: second.submissionId } });
  expect((waiting as RuntimeUnavailableError).details).toContain('read it again');
  await stopped;
  expect(ctx.server.requests).toHaveLength(2);

  // The next start runs the kept delivery.
  ctx.server.script({ text: 'Archived.' });
  await ctx.start([Clerk], { db: sqlite(db) });
  expect((await handle.read(second)).text).toBe('Archived.');
  expect((await handle.read(first)).text).toBe('Found three records.');
});

test('stop() during a hung response cuts it off after graceMs: read() rejects with the typed error, and the next start settles it once', async () => {
  const db = join(dir, 'hung.db');
  const flue = await ctx.start([Clerk], { db: sqlite(db) });
  ctx.server.script({ text: ['Once upon a time'], hangAfterChunks: 4 });
  const handle = init(Clerk, { id: 'drain-hung' });
  const receipt = await handle.dispatch('Tell a story');
  const reply = rejection(handle.read(receipt));
  await ctx.server.waitForRequests(1);

  // The stream never ends on its own: stop() resolving means the grace period cut it off.
  await flue.stop({ graceMs: 100 });
  const error = await reply;
  expect(error).toBeInstanceOf(RuntimeUnavailableError);
  expect(error).toMatchObject({ type: 'runtime_unavailable', meta: { state: 'draining', submissionId: receipt.submissionId } });

  ctx.server.script({ text: 'And they lived happily.' });
  await ctx.start([Clerk], { db: sqlite(db) });
  const settled: unknown[] = [];
  const recovered = await handle.read(receipt, {
    onEvent: (chunk) => {
      if (chunk.type === 'submission-settled') settled.push(chunk);
    },
  });
  expect(recovered.text).toContain('And they lived happily.');
  expect(settled).toHaveLength(1);
  expect(settled[0]).toMatchObject({ outcome: 'completed' });
});

test('stop() refuses a graceMs that is not a non-negative number, naming the field', async () => {
  const flue = await ctx.start([Clerk]);
  await expect(flue.stop({ graceMs: -1 })).rejects.toThrow(
    /options\.graceMs must be a non-negative, finite number of milliseconds; got -1/,
  );
  await expect(flue.stop({ graceMs: Number.NaN })).rejects.toThrow(TypeError);
  await flue.stop();
});
