/**
 * No attempt hangs forever in a Durable Object either (durability.md, "Hung calls"): a model stream
 * idle for `modelIdleTimeoutMs` abandons its attempt, which counts against `maxAttempts`, and an
 * attempt still streaming at the deadline settles the submission with `submission_timeout`.
 */
import { afterEach, beforeAll, expect, test } from 'vitest';
import { AgentRunError, type FlueEvent, init, observe } from '@flue/runtime';
import { ECHO_LANE, Echo, STALL_LANE, Staller } from './agents.ts';
import { laneRequests, resetLane, scriptLane } from './lanes.ts';
import './worker.ts';

afterEach(() => resetLane(STALL_LANE));

// The isolate's first model call through the scripted provider waits for its client to load
// (seconds in the test pool, which transforms every module first): made here, on the same
// provider, so the idle windows below time the streams alone.
beforeAll(async () => {
  await scriptLane(ECHO_LANE, { text: 'Ready.' });
  const echo = init(Echo, { id: 'bounds-warm-up' });
  expect(await echo.read(await echo.dispatch('Hi'))).toMatchObject({ text: 'Ready.' });
});

async function failure(id: string): Promise<{ error: AgentRunError; elapsed: number }> {
  const handle = init(Staller, { id });
  const started = Date.now();
  const receipt = await handle.dispatch('Tell me a story.');
  const error = await handle.read(receipt).then(
    () => undefined,
    (failed: unknown) => failed,
  );
  expect(error).toMatchObject({ outcome: 'failed', submissionId: receipt.submissionId });
  return { error: error as AgentRunError, elapsed: Date.now() - started };
}

test('a stream that stalls mid-stream in every attempt: each attempt is abandoned, and the budget settles the submission', async () => {
  const stalls = { text: ['Once', ' upon'], hangAfterChunks: 2 };
  await scriptLane(STALL_LANE, stalls, stalls);
  const recoveries: FlueEvent[] = [];
  const stop = observe((event) => {
    if (event.type === 'submission_recovery' && event.instanceId === 'stalls') recoveries.push(event);
  });
  const { error, elapsed } = await failure('stalls').finally(stop);
  // Observers see each abandoned attempt, the replacement, and the budget's durable give-up.
  expect(recoveries.map((e) => [e.operation, e.outcome, e.attemptCount])).toEqual([
    ['process_submission', 'deferred', 1],
    ['reconcile_submission', 'deferred', 1],
    ['process_submission', 'deferred', 2],
    ['reconcile_submission', 'terminated', 2],
  ]);
  expect(recoveries[0]).toMatchObject({ kind: 'dispatch', maxAttempts: 2, error: { name: 'AttemptStalled' } });
  expect(error).toBeInstanceOf(AgentRunError);
  expect(error.cause).toMatchObject({ type: 'submission_retry_exhausted', meta: { attemptCount: 2, maxAttempts: 2 } });
  expect(elapsed).toBeLessThan(2000); // the idle window ended both attempts, not the deadline
  expect(await laneRequests(STALL_LANE)).toHaveLength(2);
});

test('a stream that keeps trickling past the deadline: the attempt is ended there with submission_timeout', async () => {
  // One chunk every 200 ms, inside the idle window, for longer than the 2 s deadline.
  await scriptLane(STALL_LANE, { text: Array.from({ length: 20 }, (_, i) => `word${i} `), chunkDelayMs: 200 });
  const { error, elapsed } = await failure('trickles');
  expect(error.cause).toMatchObject({ type: 'submission_timeout' });
  expect(elapsed).toBeGreaterThanOrEqual(1950);
  expect(elapsed).toBeLessThan(3500);
  expect(await laneRequests(STALL_LANE)).toHaveLength(1);
});
