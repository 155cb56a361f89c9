/**
 * A cron tick through the Worker's `scheduled` handler (workflows-and-schedules.md §5.1): one
 * signal per tick however often the tick fires, and the agent reads its attributes with
 * `useDelivery()`.
 */
import { createExecutionContext, createScheduledController, runInDurableObject, waitOnExecutionContext } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { afterEach, expect, test } from 'vitest';
import { init } from '@flue/runtime';
import { scheduledIdempotencyKey } from '@flue/runtime/workflows';
import { laneRequests, resetLane, scriptLane, until } from './lanes.ts';
import { DIGEST_ID, DIGEST_LANE, Digest, cronReceipts, digestDeliveries } from './workflows.ts';
import worker from './worker.ts';

const handlers = worker as { scheduled(controller: ScheduledController, env: unknown, ctx: ExecutionContext): Promise<void> };
const digestStub = () => (env as unknown as { FLUE_DIGEST_AGENT: DurableObjectNamespace }).FLUE_DIGEST_AGENT.getByName(DIGEST_ID);

async function fire(cron: string, scheduledTime: number): Promise<void> {
  const controller = createScheduledController({ cron, scheduledTime });
  const ctx = createExecutionContext();
  await handlers.scheduled(controller, env, ctx);
  await waitOnExecutionContext(ctx);
}

afterEach(async () => resetLane(DIGEST_LANE));

test('a cron tick delivers its signal once even when fired twice; the agent sees its attributes through useDelivery()', async () => {
  await scriptLane(DIGEST_LANE, { text: 'Digest for Monday.' }, { text: 'Digest for Tuesday.' });
  const cron = '0 9 * * *';
  const monday = Date.UTC(2026, 10, 30, 9);

  await fire(cron, monday);
  await fire(cron, monday); // the same tick again: a platform retry or a manual re-trigger
  expect(cronReceipts).toHaveLength(2);
  const [first, again] = cronReceipts;
  expect(again).toEqual({ ...first, deduplicated: true });
  const reply = await init(Digest, { id: DIGEST_ID }).read(first!);
  expect(reply.text).toBe('Digest for Monday.');

  const submissions = () =>
    runInDurableObject(digestStub(), (_instance, state) =>
      state.storage.sql
        .exec(
          `SELECT id, json_extract(payload, '$.idempotencyKey') AS k, json_extract(payload, '$.message') AS m FROM flue_submissions ORDER BY ord`,
        )
        .toArray(),
    );
  const rows = await submissions();
  expect(rows).toHaveLength(1);
  expect(rows[0]!.k).toBe(scheduledIdempotencyKey({ cron, scheduledTime: monday }));
  expect(JSON.parse(rows[0]!.m as string)).toEqual({
    kind: 'signal',
    type: 'schedule',
    body: 'Summarize what happened since the last digest.',
    attributes: { cron, scheduledAt: '2026-11-30T09:00:00.000Z' },
  });

  // The agent read the tick from useDelivery() while rendering for it.
  expect(digestDeliveries.at(-1)).toEqual({
    kind: 'signal',
    type: 'schedule',
    body: 'Summarize what happened since the last digest.',
    attributes: { cron, scheduledAt: '2026-11-30T09:00:00.000Z' },
  });
  expect(digestDeliveries.at(-1)!.origin).toBe('app'); // the Worker's own scheduled handler delivered it
  const requests = await laneRequests(DIGEST_LANE);
  expect(requests).toHaveLength(1);
  expect(requests[0]!.system).toContain('scheduled for 2026-11-30T09:00:00.000Z by "0 9 * * *"');
  expect(requests[0]!.messages.at(-1)!.content).toContain('type="schedule"');

  // The next tick is a new delivery into the same conversation.
  const tuesday = monday + 86_400_000;
  await fire(cron, tuesday);
  const next = cronReceipts.at(-1)!;
  expect(next.submissionId).not.toBe(first!.submissionId);
  expect((await init(Digest, { id: DIGEST_ID }).read(next)).text).toBe('Digest for Tuesday.');
  expect(await submissions()).toHaveLength(2);
  await until(async () => ((await laneRequests(DIGEST_LANE)).length === 2 ? true : undefined));
  const history = (await laneRequests(DIGEST_LANE))[1]!.messages.map((m) => m.content);
  expect(history).toContain('Digest for Monday.');
  expect(history.filter((c) => c.includes('type="schedule"'))).toHaveLength(2);
  expect(digestDeliveries.at(-1)).toMatchObject({ attributes: { scheduledAt: '2026-12-01T09:00:00.000Z' } });
});
