/**
 * The shipped `useApprovalGate()` on Cloudflare: a trusted decision through `decideApproval()`
 * runs the stored arguments once (the same decision again is a no-op, another one 409) and cancels
 * the expiry, so no alarm is left once the work's backstop lapses; an undecided request expires through the object's alarm into a
 * recorded deny, after which deciding is 410.
 */
import { env, runInDurableObject } from 'cloudflare:test';
import { afterEach, expect, test } from 'vitest';
import { ApprovalConflictError, ApprovalExpiredError, decideApproval, init, listApprovals } from '@flue/runtime';
import { ECHO_LANE, Echo, openCrawlGate, refunds } from './agents.ts';
import { laneRequests, resetLane, scriptLane, until } from './lanes.ts';
import { untilAtRest } from './at-rest.ts';
import { objectRows } from './object-store.ts';
import './worker.ts';

const stubOf = (id: string) => (env as unknown as { FLUE_ECHO_AGENT: DurableObjectNamespace }).FLUE_ECHO_AGENT.getByName(id);
const alarmOf = (id: string) => runInDurableObject(stubOf(id), (_i, state) => state.storage.getAlarm());
const rows = (id: string, sql: string) => objectRows(stubOf(id), sql);

afterEach(async () => {
  refunds.length = 0;
  await resetLane(ECHO_LANE);
});

async function request(id: string, approvalId: string): Promise<void> {
  await scriptLane(ECHO_LANE, { toolCalls: [{ id: approvalId, name: 'refund', arguments: { order: 'A1' } }] });
  const handle = init(Echo, { id });
  await handle.read(await handle.dispatch('Refund A1.'));
}

async function refusal(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a refusal');
    },
    (error: unknown) => error,
  );
}

test('a decision runs the stored arguments once, first wins, and cancels the expiry: no alarm is left', async () => {
  const id = 'approve-decided';
  await request(id, 'call_w1');
  const [pending] = await listApprovals(Echo, id);
  expect(pending).toMatchObject({ approvalId: 'call_w1', toolName: 'refund', input: { order: 'A1' }, argsDigest: expect.any(String) });
  // Waiting for the expiry, the object's one alarm is armed for it.
  expect(await until(async () => ((await alarmOf(id)) === Date.parse(pending!.expiresAt!) ? true : undefined))).toBe(true);

  await scriptLane(ECHO_LANE, { text: 'Refund done.' });
  const receipt = await decideApproval(Echo, id, {
    approvalId: 'call_w1',
    decision: 'approve',
    approver: 'ops',
    argsDigest: pending!.argsDigest!,
  });
  expect((await init(Echo, { id }).read(receipt.submissionId)).text).toBe('Refund done.');
  expect(refunds).toEqual([{ order: 'A1', approvalId: 'call_w1' }]);
  expect(await decideApproval(Echo, id, { approvalId: 'call_w1', decision: 'approve', approver: 'ops' })).toMatchObject({
    deduplicated: true,
  });
  expect(await refusal(decideApproval(Echo, id, { approvalId: 'call_w1', decision: 'deny', approver: 'ops' }))).toBeInstanceOf(
    ApprovalConflictError,
  );
  expect(await listApprovals(Echo, id)).toEqual([]);
  expect(await rows(id, 'SELECT name FROM flue_timers')).toEqual([]);
  await untilAtRest(stubOf(id));
  expect(refunds).toHaveLength(1);
});

test('an undecided request expires through the alarm into a recorded deny; deciding afterwards is 410', async () => {
  const id = 'approve-fast-expiring';
  await request(id, 'call_w2');
  await scriptLane(ECHO_LANE, { text: 'It expired.' });
  await until(async () =>
    (await rows(id, `SELECT 1 FROM flue_submissions WHERE id LIKE 'sub_tmr_%' AND outcome = 'completed'`)).length === 1 ? true : undefined,
  );
  const refused = await refusal(decideApproval(Echo, id, { approvalId: 'call_w2', decision: 'approve', approver: 'ops' }));
  expect(refused).toBeInstanceOf(ApprovalExpiredError);
  expect(refused).toMatchObject({ status: 410 });
  expect(await listApprovals(Echo, id)).toEqual([]);
  expect(refunds).toEqual([]);
  await untilAtRest(stubOf(id));
});

test('expiry racing a decision: a decision admitted before the deadline wins though it runs after it; one after the deadline is 410', async () => {
  const id = 'approve-fast-progress-race';
  await request(id, 'call_w3');
  const expiresAt = Date.parse((await listApprovals(Echo, id))[0]!.expiresAt!);
  // Keep the conversation busy past the deadline: the decision waits in its queue.
  await scriptLane(ECHO_LANE, { toolCalls: [{ name: 'crawl', arguments: {} }] }, { text: 'Crawled; the refund was decided.' });
  const handle = init(Echo, { id });
  const crawling = handle.read(await handle.dispatch('Crawl first.'));
  await until(async () => ((await laneRequests(ECHO_LANE)).length === 2 ? true : undefined));
  const receipt = await decideApproval(Echo, id, { approvalId: 'call_w3', decision: 'approve', approver: 'ops' });
  // Past the deadline on the wall clock (the thing under test), while the decision still waits.
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt - Date.now()) + 50));
  expect(refunds).toEqual([]);
  expect(await refusal(decideApproval(Echo, id, { approvalId: 'call_w3', decision: 'deny', approver: 'ops' }))).toBeInstanceOf(
    ApprovalExpiredError,
  );
  openCrawlGate();
  expect((await crawling).text).toBe('Crawled; the refund was decided.');
  expect((await init(Echo, { id }).read(receipt.submissionId)).text).toBe('Crawled; the refund was decided.');
  expect(refunds).toEqual([{ order: 'A1', approvalId: 'call_w3' }]);
  // One outcome, the decision's: the expiry came due while the crawl ran, and its delivery, queued
  // after the decision, found nothing to expire (as on Node). No timer and no alarm are left.
  const expiries = await rows(id, `SELECT outcome FROM flue_submissions WHERE id LIKE 'sub_tmr_%'`);
  expect(expiries.every((row) => row.outcome === 'completed')).toBe(true);
  expect(await rows(id, 'SELECT name FROM flue_timers')).toEqual([]);
  await untilAtRest(stubOf(id));
});
