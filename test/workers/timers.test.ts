/**
 * `useTimer()` on Cloudflare: a conversation's timers share its Durable Object's one alarm with
 * its submissions. After the response that scheduled a timer, the alarm waits for the timer; an
 * early alarm fires nothing; a new instance of the object (an eviction, a deploy) keeps the alarm
 * no later than the timer; the timer's delivery runs like any other, and the idle object then
 * keeps no alarm once that work's backstop lapses.
 */
import { env, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { afterEach, expect, test } from 'vitest';
import { getAgentInstance, init } from '@flue/runtime';
import { ECHO_LANE, Echo } from './agents.ts';
import { laneRequests, resetLane, scriptLane, until } from './lanes.ts';
import { untilAtRest } from './at-rest.ts';
import { objectRows } from './object-store.ts';
import './worker.ts';

const stubOf = (id: string) => (env as unknown as { FLUE_ECHO_AGENT: DurableObjectNamespace }).FLUE_ECHO_AGENT.getByName(id);
const alarmOf = (id: string) => runInDurableObject(stubOf(id), (_i, state) => state.storage.getAlarm());
const rows = (id: string, sql: string) => objectRows(stubOf(id), sql);

afterEach(async () => resetLane(ECHO_LANE));

/** Resets the object: its next call constructs a fresh instance, as after an eviction or a deploy. */
async function resetObject(id: string): Promise<void> {
  await runInDurableObject(stubOf(id), (_instance, state) => {
    try {
      state.abort('test reset');
    } catch {
      // abort() throws in the calling context by design
    }
  }).catch(() => {});
}

/** Runs a response that schedules one timer `inMs` ahead; answers its due time as stored. */
async function scheduleOne(id: string, inMs: number): Promise<number> {
  await scriptLane(ECHO_LANE, { toolCalls: [{ name: 'remind', arguments: { name: 'ping', inMs } }] }, { text: 'Scheduled.' });
  const handle = init(Echo, { id });
  expect((await handle.read(await handle.dispatch('Remind me.'))).text).toBe('Scheduled.');
  const [timer] = await rows(id, 'SELECT name, due_at FROM flue_timers');
  expect(timer).toMatchObject({ name: 'ping' });
  return Number(timer!.due_at);
}

test('the alarm waits for the timer, an early alarm fires nothing, the timer wakes the conversation, then no alarm is left', async () => {
  const id = 'timer-shared';
  const due = await scheduleOne(id, 1_500);
  // The pass that ran the response ends by arming the one alarm for the timer (not deleting it).
  expect(await until(async () => ((await alarmOf(id)) === due ? true : undefined))).toBe(true);

  // An alarm that runs before the timer is due delivers nothing and re-arms for the timer.
  expect(await runDurableObjectAlarm(stubOf(id))).toBe(true);
  expect(await rows(id, 'SELECT name FROM flue_timers')).toEqual([{ name: 'ping' }]);
  expect(await alarmOf(id)).toBe(due);
  expect(await rows(id, `SELECT id FROM flue_submissions WHERE id LIKE 'sub_tmr_%'`)).toEqual([]);

  await scriptLane(ECHO_LANE, { text: 'Pinged.' });
  await until(async () =>
    (await rows(id, `SELECT 1 FROM flue_submissions WHERE id LIKE 'sub_tmr_%' AND outcome = 'completed'`)).length === 1 ? true : undefined,
  );
  const wake = (await laneRequests(ECHO_LANE)).at(-1)!.messages.at(-1)!;
  expect(wake.content).toContain('type="timer"');
  expect(wake.content).toContain('ping is due.');
  expect(await rows(id, 'SELECT name FROM flue_timers')).toEqual([]);
  // Idle, no timer left: the object keeps no alarm once the delivery's backstop lapses.
  await untilAtRest(stubOf(id));
});

test('a new instance of the object arms the alarm for a pending timer, and the timer fires after the reset', async () => {
  const id = 'timer-evicted';
  const due = await scheduleOne(id, 1_200);
  await until(async () => ((await alarmOf(id)) === due ? true : undefined));
  // As if the alarm had been lost: only the constructor of the next instance can bring it back.
  await runInDurableObject(stubOf(id), (_i, state) => state.storage.deleteAlarm());
  await resetObject(id);
  expect(await getAgentInstance(Echo, id)).not.toBeNull(); // constructs the new instance
  expect(await alarmOf(id)).toBe(due);

  await scriptLane(ECHO_LANE, { text: 'Pinged after the reset.' });
  await until(async () =>
    (await rows(id, `SELECT 1 FROM flue_submissions WHERE id LIKE 'sub_tmr_%' AND outcome = 'completed'`)).length === 1 ? true : undefined,
  );
  expect(await rows(id, 'SELECT name FROM flue_timers')).toEqual([]);
  await untilAtRest(stubOf(id));
});
