import { env, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { afterEach, expect, test } from 'vitest';
import { dispatch, getUsage, init } from '@flue/runtime';
import { ECHO_LANE, Echo } from './agents.ts';
import { laneRequests, resetLane, scriptLane, until } from './lanes.ts';
import { untilAtRest } from './at-rest.ts';
import { BACKSTOP_MS } from '../../src/durable-objects/alarm-plan.ts';
import { resetObject } from './reset-object.ts';
import './worker.ts';
import { objectHasStore, objectRows, objectSubmissions } from './object-store.ts';

type AgentStub = DurableObjectStub;
const echoStub = (id: string) => (env as unknown as { FLUE_ECHO_AGENT: DurableObjectNamespace }).FLUE_ECHO_AGENT.getByName(id) as AgentStub;

afterEach(async () => resetLane(ECHO_LANE));

function rows(stub: AgentStub, sql: string) {
  return objectRows(stub, sql);
}

test('admission writes the submission and arms the backstop; the response runs at once, not from the alarm; at rest the object keeps no alarm', async () => {
  await scriptLane(ECHO_LANE, { text: ['Hel', 'lo'], chunkDelayMs: 150 });
  const receipt = await dispatch(Echo, { id: 'd1', message: 'hi' });
  expect(receipt.submissionId).toMatch(/^sub_/);
  const stub = echoStub('d1');
  // Admitted to an idle conversation: its input record is the admission, and the ledger has no row.
  expect(await objectSubmissions(stub)).toEqual([expect.objectContaining({ id: receipt.submissionId, inLog: true })]);
  // The model request went out while the only alarm armed is the backstop, seconds away: the run
  // did not wait for the alarm to fire.
  await until(async () => ((await laneRequests(ECHO_LANE)).length === 1 ? true : undefined));
  const armed = await runInDurableObject(stub, (_i, state) => state.storage.getAlarm());
  expect(armed).toBeGreaterThan(Date.now() + 20_000);

  const reply = await init(Echo, { id: 'd1' }).read(receipt);
  expect(reply.text).toBe('Hello');
  await untilAtRest(stub);
  expect(await objectSubmissions(stub)).toEqual([expect.objectContaining({ status: 'settled', outcome: 'completed', inLog: true })]);
  expect(await rows(stub, 'SELECT id FROM flue_submissions')).toEqual([]);
});

test("a new object writes nothing as it starts: its first call makes the store, in that call's commit", async () => {
  await scriptLane(ECHO_LANE, { text: 'Made.' });
  const stub = echoStub('d-new');
  // runInDurableObject constructs the object: its constructor read the database and wrote nothing.
  expect(await objectHasStore(stub)).toBe(false);
  const handle = init(Echo, { id: 'd-new' });
  expect((await handle.read(await handle.dispatch('hi'))).text).toBe('Made.');
  expect(await objectHasStore(stub)).toBe(true);
  expect(await objectSubmissions(stub)).toEqual([expect.objectContaining({ status: 'settled', outcome: 'completed' })]);
});

test("a read of the receipt its dispatch answered polls through the admission's RPC session; later reads, and reads after a reset, ask the object", async () => {
  await scriptLane(ECHO_LANE, { text: ['Hel', 'lo'], chunkDelayMs: 50 }, { text: 'Again.', chunkDelayMs: 50 }, { text: 'Again.' });
  const handle = init(Echo, { id: 'd-session' });
  const receipt = await handle.dispatch('hi');
  expect((await handle.read(receipt)).text).toBe('Hello');
  // Until the settlement the object served the admission alone: the read was no request of its own.
  const usage = await getUsage(Echo, 'd-session');
  expect(usage!.submissions[0]!.durableObject!.rpcsServed).toBe(1);
  // The first read took the session: a second read of the receipt, and one by id, call the object.
  expect((await handle.read(receipt)).text).toBe('Hello');
  expect((await handle.read(receipt.submissionId)).text).toBe('Hello');
  // The instance that handed out the session is gone before the read: the read asks the new one.
  const again = await handle.dispatch('again');
  await resetObject(echoStub('d-session'));
  expect((await handle.read(again)).text).toBe('Again.');
});

test('a dispatch while busy joins the live response at its next turn boundary', async () => {
  await scriptLane(ECHO_LANE, { toolCalls: [{ name: 'lookup', arguments: { key: 'a' } }], chunkDelayMs: 200 }, { text: 'Both answered.' });
  const handle = init(Echo, { id: 'd2' });
  const first = await handle.dispatch('first question');
  await until(async () => ((await laneRequests(ECHO_LANE)).length === 1 ? true : undefined));
  const second = await handle.dispatch('second question');
  const [a, b] = await Promise.all([handle.read(first), handle.read(second)]);
  expect(a.text).toBe('Both answered.');
  expect(b.text).toBe('Both answered.');
  const requests = await laneRequests(ECHO_LANE);
  expect(requests).toHaveLength(2);
  const contents = requests[1]!.messages.map((m) => m.content);
  expect(contents.indexOf('second question')).toBeGreaterThan(contents.findIndex((c) => c.includes('value-of-a')));
  const joined = await rows(echoStub('d2'), `SELECT id, joined_into FROM flue_submissions ORDER BY ord`);
  expect(joined[1]!.joined_into).toBe(first.submissionId);
});

test("a tool sees the Durable Object identity it runs under, on every turn of the object's life", async () => {
  await scriptLane(ECHO_LANE, { toolCalls: [{ name: 'whereabouts', arguments: {} }] }, { text: 'Found.' });
  await scriptLane(ECHO_LANE, { toolCalls: [{ name: 'whereabouts', arguments: {} }] }, { text: 'Found again.' });
  const handle = init(Echo, { id: 'where-1' });
  expect((await handle.read(await handle.dispatch('where?'))).text).toBe('Found.');
  expect((await handle.read(await handle.dispatch('and now?'))).text).toBe('Found again.');
  const identity = { bindingName: 'FLUE_ECHO_AGENT', className: 'FlueEchoAgent', name: 'where-1', id: echoStub('where-1').id.toString() };
  const requests = await laneRequests(ECHO_LANE);
  const seen = [requests[1]!, requests[3]!].map((request) => request.messages.map((m) => m.content).find((c) => c.includes('bindingName')));
  expect(seen.map((content) => JSON.parse(content!))).toEqual([identity, identity]);
});

test('admission errors cross the RPC boundary as the same typed classes', async () => {
  await scriptLane(ECHO_LANE, { text: 'ok' });
  const created = await dispatch(Echo, { id: 'd3', message: 'hi', uid: null });
  let error: unknown;
  try {
    await dispatch(Echo, { id: 'd3', message: 'again', uid: null });
  } catch (caught) {
    error = caught;
  }
  expect((error as { type?: string }).type).toBe('agent_instance_exists');
  expect((error as { uid?: string }).uid).toBe(created.uid);
  expect((error as { status?: number }).status).toBe(409);
  await init(Echo, { id: 'd3' }).read(created);
  await expect(init(Echo, { id: 'never-contacted' }).read('sub_x')).rejects.toMatchObject({ type: 'agent_instance_not_found' });
});

test('an emptied queue leaves its backstop to lapse: the next turn arms no alarm, and the lapsed alarm runs nothing and leaves none', async () => {
  await scriptLane(ECHO_LANE, { text: 'done' }, { text: 'again' });
  const stub = echoStub('d4');
  const alarm = () => runInDurableObject(stub, (_i, state) => state.storage.getAlarm());
  const handle = init(Echo, { id: 'd4' });
  await handle.read(await handle.dispatch('hi'));
  const backstop = await until(async () => (await alarm()) ?? undefined);
  expect(backstop).toBeLessThanOrEqual(Date.now() + BACKSTOP_MS);
  // The second turn finds the backstop armed and keeps it: the first turn set the one alarm.
  expect((await handle.read(await handle.dispatch('again'))).text).toBe('again');
  expect(await alarm()).toBe(backstop);
  const settled = (await getUsage(Echo, 'd4'))!.submissions;
  expect(settled.map((entry) => entry.durableObject?.alarmsSet)).toEqual([1, 0]);
  // When it lapses it finds the queue empty and leaves no alarm; an alarm run after that is a no-op.
  expect(await runDurableObjectAlarm(stub)).toBe(true);
  expect(await alarm()).toBeNull();
  expect(await runDurableObjectAlarm(stub)).toBe(false);
  expect((await laneRequests(ECHO_LANE)).length).toBe(2);
});
