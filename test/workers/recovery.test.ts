import { env, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { afterEach, expect, test } from 'vitest';
import { type DispatchReceipt, getAgentInstance, init } from '@flue/runtime';
import type { FlueAgentDurableObject } from '@flue/runtime/cloudflare';
import { parseDeliveredMessage } from '../../src/runtime/engine/delivered-message.ts';
import { ECHO_LANE, Echo, PROVISION_LANE, Provisioner, TICKER_LANE, Ticker, stepRuns, ticks } from './agents.ts';
import { laneRequests, resetLane, scriptLane, until } from './lanes.ts';
import { resetObject } from './reset-object.ts';
import { objectSubmissions } from './object-store.ts';
import './worker.ts';

const namespace = (binding: string) => (env as unknown as Record<string, DurableObjectNamespace>)[binding]!;
const stubOf = (id: string) => namespace('FLUE_PROVISIONER_AGENT').getByName(id);

afterEach(async () => {
  await Promise.all([PROVISION_LANE, ECHO_LANE, TICKER_LANE].map(resetLane));
});

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
  await resetObject(stubOf('r1'));
  // The backstop alarm would fire in 30 s; run it now.
  await until(async () => ((await runDurableObjectAlarm(stubOf('r1'))) ? true : undefined), 20_000);
  const reply = await reading;
  expect(reply.text).toBe('Provisioned acme.');
  // `tenant` finished before the reset and was replayed; `seed` ran again (at-least-once).
  expect(stepRuns.filter((s) => s === 'tenant')).toHaveLength(1);
  expect(stepRuns.filter((s) => s === 'seed').length).toBeGreaterThanOrEqual(2);
  const requests = await laneRequests(PROVISION_LANE);
  const toolResult = requests
    .at(-1)!
    .messages.filter((m) => m.role === 'tool')
    .at(-1)!;
  expect(JSON.parse(toolResult.content)).toEqual({ tenant: 'tenant-acme', seeded: 3 });
  const state = await runInDurableObject(stubOf('r1'), (_i, s) =>
    s.storage.sql.exec(`SELECT value FROM flue_state WHERE name = 'provisioned'`).toArray(),
  );
  expect(state).toEqual([{ value: '1' }]);
  const attempts = await runInDurableObject(stubOf('r1'), (_i, s) =>
    s.storage.sql.exec('SELECT attempt_count FROM flue_submissions').toArray(),
  );
  expect(attempts).toEqual([{ attempt_count: 2 }]);
});

test.each([
  { left: 'no alarm', alarmIn: null, id: 'lost-alarm' },
  // The backstop a cut-off pass leaves: an hour away here, so only the constructor can explain a prompt wake.
  { left: 'a distant backstop alarm', alarmIn: 3_600_000, id: 'late-alarm' },
])(
  'an object constructed with unsettled work and $left resumes it at once: the first call after the reset wakes the conversation',
  async ({ alarmIn, id }) => {
    // Slow enough that the pass the new alarm starts is still running when the test looks.
    await scriptLane(ECHO_LANE, { text: ['Back ', 'after ', 'the ', 'reset.'], chunkDelayMs: 300 });
    // A fresh stub per call: a stub that reached the object before its reset stays broken.
    const stub = () => namespace('FLUE_ECHO_AGENT').getByName(id);
    // Admitted, its run never started and its backstop undone: the state an instance leaves when it
    // dies between an admission and its run (an eviction, a deploy), its alarm lost or far away.
    const receipt = await runInDurableObject(stub(), async (instance, state): Promise<DispatchReceipt> => {
      // This instance is reset below before it would start the run: it starts none.
      Object.assign(instance, { kick: () => {} });
      const admitted = await (instance as unknown as FlueAgentDurableObject).__flueAdmit(
        id,
        { id, message: parseDeliveredMessage('Still there?') },
        'dispatch',
      );
      if (alarmIn === null) await state.storage.deleteAlarm();
      else await state.storage.setAlarm(Date.now() + alarmIn);
      if (!admitted.ok) throw new Error(admitted.error.message);
      return admitted.value.receipt;
    });
    const stranded = {
      alarm: await runInDurableObject(stub(), (_instance, state) => state.storage.getAlarm()),
      submissions: (await objectSubmissions(stub())).map(({ status, attemptCount, inLog }) => ({ status, attemptCount, inLog })),
    };
    expect(stranded).toEqual({
      alarm: alarmIn === null ? null : expect.any(Number),
      // Admitted to an idle conversation: its input record alone, its first attempt claimed in it.
      submissions: [{ status: 'running', attemptCount: 1, inLog: true }],
    });

    await resetObject(stub());
    // Any call constructs the object again; a read-only one is enough.
    expect(await getAgentInstance(Echo, id)).not.toBeNull();
    // The constructor armed an alarm for now, and the run it started calls the model with the
    // backstop armed. (Between an alarm firing and its wake arming the backstop, getAlarm() is briefly
    // null: wait for the request.)
    await until(async () => ((await laneRequests(ECHO_LANE)).length === 1 ? true : undefined));
    expect(await runInDurableObject(stub(), (_instance, state) => state.storage.getAlarm())).not.toBeNull();
    const reply = await init(Echo, { id }).read(receipt);
    expect(reply.text).toBe('Back after the reset.');
    expect(await laneRequests(ECHO_LANE)).toHaveLength(1);
    const settled = await runInDurableObject(stub(), (_instance, state) =>
      state.storage.sql.exec('SELECT status, outcome, attempt_count FROM flue_submissions').toArray(),
    );
    // The new object found it in the log and claimed the next attempt, with the row the claim made
    // for it: the attempt claimed with the admission died with the old object.
    expect(settled).toEqual([{ status: 'settled', outcome: 'completed', attempt_count: 2 }]);
  },
);

test('a response past its slice budget yields after each turn and goes on as the same attempt, with no alarm to wait for', async () => {
  ticks.length = 0;
  const tick = { toolCalls: [{ name: 'tick', arguments: {} }] };
  await scriptLane(TICKER_LANE, tick, tick, { text: 'Ticked twice.' });
  const stub = namespace('FLUE_TICKER_AGENT').getByName('y1');
  const handle = init(Ticker, { id: 'y1' });
  const receipt = await handle.dispatch('Tick twice.');
  const reading = handle.read(receipt);
  const farAway = () => Date.now() + 60 * 60_000;

  for (const turn of [0, 1]) {
    // The run is inside this turn's tool. Move its backstop an hour out, then let the tool finish:
    // the next run can only come from the queue that yielded going on.
    const parked = await until(() => ticks[turn], 20_000);
    await runInDurableObject(stub, async (_instance, state) => {
      await state.storage.setAlarm(farAway());
      // Released from the object's own context: the tool continues where it resolves.
      parked.release();
    });
    // The next run started (it calls the model again) while the only alarm left was an hour out.
    await until(async () => ((await laneRequests(TICKER_LANE)).length > turn + 1 ? true : undefined), 20_000);
    const row = await runInDurableObject(stub, (_instance, state) =>
      state.storage.sql.exec('SELECT status, attempt_count FROM flue_submissions').toArray(),
    );
    // A continuation of the same attempt, not a retry.
    expect(row).toMatchObject([{ attempt_count: 1 }]);
  }

  const reply = await reading;
  expect(reply.text).toBe('Ticked twice.');
  // Every turn applied once: two tool runs, three model calls, and the last one saw each turn once.
  expect(ticks).toHaveLength(2);
  const requests = await laneRequests(TICKER_LANE);
  expect(requests).toHaveLength(3);
  expect(
    requests[2]!.messages.map((m) => `${m.role}: ${m.role === 'assistant' ? m.toolCalls?.map((c) => c.name).join(',') : m.content}`),
  ).toEqual(['user: Tick twice.', 'assistant: tick', 'tool: "tock"', 'assistant: tick', 'tool: "tock"']);
  const settled = await runInDurableObject(stub, (_instance, state) =>
    state.storage.sql.exec('SELECT status, outcome, attempt_count, continuation FROM flue_submissions').toArray(),
  );
  expect(settled).toEqual([{ status: 'settled', outcome: 'completed', attempt_count: 1, continuation: 0 }]);
});
