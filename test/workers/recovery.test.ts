import { env, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { afterEach, expect, test } from 'vitest';
import { init } from '@flue/runtime';
import { PROVISION_LANE, Provisioner, stepRuns } from './agents.ts';
import { laneRequests, resetLane, scriptLane, until } from './lanes.ts';
import './worker.ts';

const stubOf = (id: string) =>
  (env as unknown as { FLUE_PROVISIONER_AGENT: DurableObjectNamespace }).FLUE_PROVISIONER_AGENT.getByName(id);

afterEach(async () => resetLane(PROVISION_LANE));

test('read() survives the object being reset mid-response; durable steps and state survive the reset', async () => {
  stepRuns.length = 0;
  await scriptLane(
    PROVISION_LANE,
    { toolCalls: [{ name: 'count_up', arguments: {} }] },
    { toolCalls: [{ name: 'provision', arguments: { customer: 'acme' } }] },
    { text: 'Provisioned acme.' },
  );
  const handle = init(Provisioner, { id: 'r1' });
  const receipt = await handle.dispatch('Provision acme');
  const reading = handle.read(receipt);
  // Reset the object while the slow `seed` step runs (after `tenant` was recorded).
  await until(() => (stepRuns.includes('seed') ? true : undefined));
  await runInDurableObject(stubOf('r1'), (_instance, state) => {
    try {
      state.abort('test reset');
    } catch {
      // abort() throws in the calling context by design
    }
  }).catch(() => {});
  // The backstop alarm would fire in 30 s; run it now.
  await until(async () => ((await runDurableObjectAlarm(stubOf('r1'))) ? true : undefined), 20_000);
  const reply = await reading;
  expect(reply.text).toBe('Provisioned acme.');
  // `tenant` finished before the reset and was replayed; `seed` ran again (at-least-once).
  expect(stepRuns.filter((s) => s === 'tenant')).toHaveLength(1);
  expect(stepRuns.filter((s) => s === 'seed').length).toBeGreaterThanOrEqual(2);
  const requests = await laneRequests(PROVISION_LANE);
  const toolResult = requests.at(-1)!.messages.filter((m) => m.role === 'tool').at(-1)!;
  expect(JSON.parse(toolResult.content)).toEqual({ tenant: 'tenant-acme', seeded: 3 });
  const state = await runInDurableObject(stubOf('r1'), (_i, s) => s.storage.sql.exec(`SELECT value FROM flue_state WHERE name = 'provisioned'`).toArray());
  expect(state).toEqual([{ value: '1' }]);
  const attempts = await runInDurableObject(stubOf('r1'), (_i, s) => s.storage.sql.exec('SELECT attempt_count FROM flue_submissions').toArray());
  expect(attempts).toEqual([{ attempt_count: 2 }]);
});
