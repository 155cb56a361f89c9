/**
 * The usage ledger and budgets in a Durable Object: `getUsage()` from the Worker crosses the RPC
 * like the other verbs; a per-submission budget stops the response at its next turn boundary; a
 * conversation past its budget refuses dispatch (the typed error rebuilt across RPC) and HTTP
 * (402 with the envelope), and stores nothing.
 */
import { env, runInDurableObject } from 'cloudflare:test';
import { afterAll, expect, test } from 'vitest';
import { AgentRunError, BudgetExceededError, getUsage, init } from '@flue/runtime';
import { createAgentRouter } from '@flue/runtime/routing';
import { SPEND_LANE, Spender } from './agents.ts';
import { laneRequests, resetLane, scriptLane } from './lanes.ts';
import './worker.ts';
import { objectSubmissions } from './object-store.ts';

const USAGE = { input: 100, output: 10 };

afterAll(() => resetLane(SPEND_LANE));

/** The object's submissions as its store holds them (a ledger row, or an admission in the log). */
function submissionRows(id: string): Promise<unknown[]> {
  return objectSubmissions((env as unknown as { FLUE_SPENDER_AGENT: DurableObjectNamespace }).FLUE_SPENDER_AGENT.getByName(id));
}

test('getUsage() returns the settled submission with its tokens and cost, and null for an instance never contacted', async () => {
  await scriptLane(SPEND_LANE, { text: 'Done.', usage: USAGE });
  const handle = init(Spender, { id: 'ledger' });
  const receipt = await handle.dispatch('plain');
  await handle.read(receipt);
  const usage = await getUsage(Spender, 'ledger');
  expect(usage?.submissions).toEqual([
    expect.objectContaining({ submissionId: receipt.submissionId, modelCalls: 1, toolCalls: 0, attempts: 1 }),
  ]);
  expect(usage?.total).toMatchObject({ input: 100, output: 10, totalTokens: 110 });
  expect(usage?.total.cost.total).toBeCloseTo(0.00045, 12);
  expect(await getUsage(Spender, 'never-contacted')).toBeNull();
});

test('the ledger carries what the Durable Object counts of itself, recorded by the settlement at no row of its own', async () => {
  const usage = (await getUsage(Spender, 'ledger'))!;
  // Until the settlement: the admission's and the run's rows, the backstop the admission armed
  // (the run started at once, so no alarm fired and none was set again), the dispatch RPC.
  const recorded = usage.submissions[0]!.durableObject!;
  expect(recorded.rowsWritten).toBeGreaterThan(3);
  expect(recorded.alarmsSet).toBe(1);
  expect(recorded.rpcsServed).toBeGreaterThanOrEqual(1);
  const first = usage.durableObject!;
  expect(first.rowsWritten).toBeGreaterThanOrEqual(recorded.rowsWritten);
  expect(first.bytesStored).toBeGreaterThan(0);
  // Reading counts the RPC and writes nothing.
  const second = (await getUsage(Spender, 'ledger'))!.durableObject!;
  expect(second.rpcsServed).toBe(first.rpcsServed + 1);
  expect(second.rowsWritten).toBe(first.rowsWritten);
  expect(second.alarmsSet).toBe(first.alarmsSet);
  // The counts have no table of their own.
  const tables = await runInDurableObject(
    (env as unknown as { FLUE_SPENDER_AGENT: DurableObjectNamespace }).FLUE_SPENDER_AGENT.getByName('ledger'),
    (_instance, state) => state.storage.sql.exec(`SELECT name FROM sqlite_master WHERE name LIKE '%meter%'`).toArray(),
  );
  expect(tables).toEqual([]);
});

test('a conversation at its budget refuses dispatch and HTTP with budget_exceeded, and stores nothing', async () => {
  const refused = await init(Spender, { id: 'ledger' })
    .dispatch('more')
    .then(
      () => undefined,
      (caught: unknown) => caught,
    );
  expect(refused).toBeInstanceOf(BudgetExceededError);
  expect(refused).toMatchObject({ type: 'budget_exceeded', meta: { scope: 'conversation', limit: 'maxTokens', budget: 110, spent: 110 } });
  const response = await createAgentRouter(Spender).fetch(
    new Request('http://flue.test/ledger', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'user', body: 'more' }),
    }),
  );
  expect(response.status).toBe(402);
  expect(await response.json()).toMatchObject({ error: { type: 'budget_exceeded', meta: { scope: 'conversation' } } });
  expect(await submissionRows('ledger')).toHaveLength(1);
});

test('a response past its per-submission budget stops at the next turn boundary: read() rejects with the typed cause', async () => {
  await resetLane(SPEND_LANE);
  await scriptLane(SPEND_LANE, { toolCalls: [{ name: 'note', arguments: {} }], usage: USAGE }, { text: 'never asked', usage: USAGE });
  const handle = init(Spender, { id: 'capped' });
  const receipt = await handle.dispatch('tools');
  const error = await handle.read(receipt).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(AgentRunError);
  expect((error as AgentRunError).cause).toMatchObject({ type: 'budget_exceeded', meta: { scope: 'submission', spent: 110 } });
  expect((await getUsage(Spender, 'capped'))?.submissions).toEqual([expect.objectContaining({ modelCalls: 1, toolCalls: 1 })]);
  expect(await laneRequests(SPEND_LANE)).toHaveLength(1);
});

test("a tool's harness calls count against the budget: the turn after the tool is never asked for", async () => {
  await resetLane(SPEND_LANE);
  await scriptLane(
    SPEND_LANE,
    { toolCalls: [{ name: 'ponder', arguments: {} }], usage: { input: 10, output: 0 } },
    { text: 'Thought.', usage: USAGE },
    { text: 'never asked', usage: USAGE },
  );
  const handle = init(Spender, { id: 'ponder' });
  const error = await handle.read(await handle.dispatch('ponder')).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect((error as AgentRunError).cause).toMatchObject({ type: 'budget_exceeded', meta: { scope: 'submission', spent: 120 } });
  // The turn and the harness prompt, both in the ledger.
  expect((await getUsage(Spender, 'ponder'))?.submissions).toEqual([expect.objectContaining({ modelCalls: 2, toolCalls: 1 })]);
  expect(await laneRequests(SPEND_LANE)).toHaveLength(2);
});
