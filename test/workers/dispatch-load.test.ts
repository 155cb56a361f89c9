/**
 * Load on the Cloudflare host: 1,000 concurrent dispatch() calls to one conversation's Durable
 * Object, each an RPC from the Worker, with responses run by the object that admitted them. Nothing is timed;
 * the delivery guarantees are checked in the object's own SQLite (test/support/delivery-checks.ts):
 * every dispatch gets its own submission, every submission settles exactly once (a joined delivery
 * in its host's settlement), the log applies deliveries in acceptance order, and none is lost.
 */
import { env, runInDurableObject } from 'cloudflare:test';
import { afterEach, expect, test } from 'vitest';
import { dispatch, getUsage, init, type DispatchReceipt } from '@flue/runtime';
import { LOAD_LANE, Load, holds } from './agents.ts';
import { laneRequests, resetLane, scriptLane, until } from './lanes.ts';
import { untilAtRest } from './at-rest.ts';
import { LEDGER_SQL, LOG_SQL, durableConversation, expectDeliveredOnce } from '../support/delivery-checks.ts';
import './worker.ts';

const COUNT = 1_000;
const bodies = Array.from({ length: COUNT }, (_, i) => `load-${i}`);

afterEach(async () => {
  await resetLane(LOAD_LANE);
  holds.released = holds.started;
});

const loadStub = (id: string) => (env as unknown as { FLUE_LOAD_AGENT: DurableObjectNamespace }).FLUE_LOAD_AGENT.getByName(id);

/** The object's ledger and log once it is at rest: its queue ran empty and its last backstop lapsed. */
async function durableOf(id: string) {
  const stub = loadStub(id);
  await untilAtRest(stub);
  return runInDurableObject(stub, (_object, state) => {
    const stream = `agents/Load/${id}`;
    return durableConversation(state.storage.sql.exec(LEDGER_SQL, stream).toArray(), state.storage.sql.exec(LOG_SQL, stream).toArray());
  });
}

/** Every `load-<n>` body of a model request's user messages, in order. */
const bodiesSeen = (messages: { role: string; content: string }[]) =>
  messages.filter((m) => m.role === 'user').flatMap((m) => m.content.match(/load-\d+/g) ?? []);

test(`${COUNT} concurrent dispatches in one burst are each accepted, applied in order and settled once`, async () => {
  // One step per model request. How admissions interleave with the runs decides how many
  // responses run, so script one reply per possible response.
  await scriptLane(LOAD_LANE, ...Array.from({ length: COUNT }, () => ({ text: 'ok' })));
  const id = 'load-burst';

  const receipts = await Promise.all(bodies.map((body) => dispatch(Load, { id, message: body })));
  const handle = init(Load, { id });
  const replies = await Promise.all(receipts.map((receipt) => handle.read(receipt)));
  expect(replies.map((reply) => reply.submissionId)).toEqual(receipts.map((receipt) => receipt.submissionId));
  // A response answers in one step, or in more when deliveries admitted while a step streamed join
  // at its end (how admissions interleave with the run decides): its reply holds one 'ok' a step.
  expect(replies.filter((reply) => !/^ok(\n\nok)*$/.test(reply.text))).toEqual([]);

  const durable = await durableOf(id);
  const hostOf = expectDeliveredOnce(receipts, bodies, durable);
  // One model request per step of each response (the script never calls the tool), and the last
  // one carries every delivery exactly once, in acceptance order.
  const requests = await laneRequests(LOAD_LANE);
  const stepsOf = new Map(receipts.map((receipt, i) => [hostOf.get(receipt.submissionId)!, replies[i]!.text.split('\n\n').length]));
  expect(requests).toHaveLength([...stepsOf.values()].reduce((sum, steps) => sum + steps, 0));
  const bodyOf = new Map(receipts.map((receipt, i) => [receipt.submissionId, bodies[i]!]));
  expect(bodiesSeen(requests.at(-1)!.messages)).toEqual(durable.accepted.map((row) => bodyOf.get(row.id)));
  // The backstop is armed by the first admission; the rest find it armed (one setAlarm, a billed row,
  // per admission before). A few more only if the burst outlived a backstop and its alarm re-armed.
  const { alarmsSet } = (await getUsage(Load, id))!.durableObject!;
  expect(alarmsSet).toBeGreaterThanOrEqual(1);
  expect(alarmsSet).toBeLessThan(10);
});

test(`${COUNT} dispatches in waves: each wave joins the response its first delivery started, in order and once`, async () => {
  const WAVES = 10;
  const PER_WAVE = COUNT / WAVES;
  // Per wave: a `hold` call (the response waits in its tool until the test releases it), then text.
  await scriptLane(
    LOAD_LANE,
    ...Array.from({ length: WAVES }, (_, wave) => [{ toolCalls: [{ name: 'hold', arguments: {} }] }, { text: `wave ${wave}` }]).flat(),
  );
  const id = 'load-waves';
  const handle = init(Load, { id });

  // A wave's first delivery starts a response on the idle object; the other 99 are admitted while
  // that response is held in its tool call, so at its turn boundary they must all join it. Reads
  // of every receipt stay pending together across the waves.
  const receipts: DispatchReceipt[] = [];
  const reads: ReturnType<typeof handle.read>[] = [];
  for (let wave = 0; wave < WAVES; wave++) {
    const base = wave * PER_WAVE;
    const first = await dispatch(Load, { id, message: bodies[base]! });
    await until(() => (holds.started === wave + 1 ? true : undefined), 30_000);
    const rest = await Promise.all(bodies.slice(base + 1, base + PER_WAVE).map((body) => dispatch(Load, { id, message: body })));
    receipts.push(first, ...rest);
    reads.push(...[first, ...rest].map((receipt) => handle.read(receipt)));
    holds.released = wave + 1;
    await handle.read(first);
  }
  const replies = await Promise.all(reads);
  expect(replies.map((reply) => reply.submissionId)).toEqual(receipts.map((receipt) => receipt.submissionId));
  expect(replies.map((reply) => reply.text)).toEqual(receipts.map((_, i) => `wave ${Math.floor(i / PER_WAVE)}`));

  const durable = await durableOf(id);
  const hostOf = expectDeliveredOnce(receipts, bodies, durable);
  expect(durable.accepted.map((row) => row.id)).toEqual(receipts.map((receipt) => receipt.submissionId));
  expect([...new Set(hostOf.values())]).toEqual(receipts.filter((_, i) => i % PER_WAVE === 0).map((receipt) => receipt.submissionId));
  const requests = await laneRequests(LOAD_LANE);
  expect(requests).toHaveLength(WAVES * 2);
  expect(bodiesSeen(requests.at(-1)!.messages)).toEqual(bodies);
});
