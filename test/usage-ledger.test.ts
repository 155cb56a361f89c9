/**
 * The usage ledger and budgets through the public API on Node: `getUsage()` after settled
 * submissions, a per-submission budget that stops a response at its next turn boundary, and a
 * per-conversation budget that refuses new deliveries (dispatch and HTTP) until the static is raised.
 */
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  AgentRunError,
  BudgetExceededError,
  type ConversationUsage,
  defineSubagent,
  defineTool,
  getAgentInstance,
  getUsage,
  init,
  useAgentFinish,
  useModel,
  useSubagent,
  useTool,
} from '@flue/runtime';
import { type Flue, sqlite, start } from '@flue/runtime/node';
import { createAgentRouter } from '@flue/runtime/routing';
import {
  type RecordedRequest,
  type ScriptedModelServer,
  type ScriptedResponse,
  scriptedProvider,
  startScriptedModelServer,
} from '@flue/runtime/testing';
import { expectFlueError, rejection } from './api/helpers.ts';

/** A priced model: $3 per million input tokens, $15 per million output tokens. */
const MODEL = 'priced/model';
const PRICE = { input: 3, output: 15, cacheRead: 0, cacheWrite: 0 };

/** Every scripted model call reports 100 input and 10 output tokens. */
const USAGE = { input: 100, output: 10 };

function reply(request: RecordedRequest): ScriptedResponse {
  const first = request.messages.find((message) => message.role === 'user')?.content ?? '';
  const toolAnswered = request.messages.some((message) => message.role === 'tool');
  if (first === 'tools' && !toolAnswered) return { toolCalls: [{ name: 'note', arguments: {} }], usage: USAGE };
  if (first === 'delegate' && !toolAnswered) {
    return { toolCalls: [{ name: 'task', arguments: { agent: 'clerk', prompt: 'file it' } }], usage: USAGE };
  }
  if (first === 'oversee' && !toolAnswered) {
    return { toolCalls: [{ name: 'task', arguments: { agent: 'worker', prompt: 'loop' } }], usage: USAGE };
  }
  if (first === 'loop' && !toolAnswered) return { toolCalls: [{ name: 'note', arguments: {} }], usage: USAGE };
  if (first === 'ponder' && !toolAnswered) return { toolCalls: [{ name: 'ponder', arguments: {} }], usage: USAGE };
  return { text: 'Done.', usage: USAGE };
}

const note = defineTool({ name: 'note', description: 'Takes a note.', run: () => 'noted' });

function Metered() {
  useModel(MODEL);
  useTool(note);
  return 'Answer.';
}

const clerk = defineSubagent({ name: 'clerk', description: 'Files things.', agent: () => 'You file things.' });

function Manager() {
  useModel(MODEL);
  useSubagent(clerk);
  return 'Delegate.';
}

const worker = defineSubagent({
  name: 'worker',
  description: 'Works in turns.',
  agent: () => {
    useTool(note);
    return 'You work.';
  },
});

/** Its budget is spent by its own first turn and its delegate's first: the delegate's second turn is past it. */
function Overseer() {
  useModel(MODEL);
  useSubagent(worker);
  return 'Oversee.';
}
Overseer.budget = { perSubmission: { maxTokens: 220 } };

function Capped() {
  useModel(MODEL);
  useTool(note);
  return 'Answer.';
}
Capped.budget = { perSubmission: { maxTokens: 110 } };

/** A tool whose work is a model call of its own, in the harness's scratch conversation. */
const ponder = defineTool({
  name: 'ponder',
  description: 'Thinks it over with a focused model call.',
  harness: true,
  async run({ harness }) {
    return (await harness.prompt('think it over')).text;
  },
});

function Ponderer() {
  useModel(MODEL);
  useTool(ponder);
  // A hook's harness call: it appends nothing and writes no state, so no hook record carries it.
  useAgentFinish(async ({ harness }) => {
    await harness.prompt('review the answer');
  });
  return 'Answer.';
}

/** Its first turn and the tool's harness call use up the budget: the turn after the tool is past it. */
function PonderCapped() {
  useModel(MODEL);
  useTool(ponder);
  return 'Answer.';
}
PonderCapped.budget = { perSubmission: { maxTokens: 220 } };

function Thrifty() {
  useModel(MODEL);
  return 'Answer.';
}
Thrifty.budget = { perConversation: { maxTokens: 100 } } as { perConversation: { maxTokens: number } };

let server: ScriptedModelServer;
let flue: Flue;
beforeAll(async () => {
  server = await startScriptedModelServer({ fallback: reply });
  flue = await start({
    agents: [Metered, Manager, Capped, Thrifty, Overseer, Ponderer, PonderCapped],
    db: sqlite(),
    providers: [scriptedProvider({ baseUrl: server.url, id: 'priced', models: ['model'], cost: PRICE })],
    env: {},
  });
});
afterAll(async () => {
  await flue.stop({ graceMs: 0 });
  await server.close();
});

async function ask(agent: typeof Metered, id: string, body: string) {
  const handle = init(agent, { id });
  return handle.read(await handle.dispatch(body));
}

describe('getUsage()', () => {
  it('returns one entry per settled submission, each summing its model calls, and the total of them', async () => {
    await ask(Metered, 'ledger', 'tools');
    await ask(Metered, 'ledger', 'plain');
    const usage = (await getUsage(Metered, 'ledger')) as ConversationUsage;
    expect(usage.submissions).toHaveLength(2);
    const [first, second] = usage.submissions;
    expect(first).toMatchObject({ modelCalls: 2, toolCalls: 1, attempts: 1 });
    expect(first!.usage).toMatchObject({ input: 200, output: 20, cacheRead: 0, cacheWrite: 0, totalTokens: 220 });
    expect(second).toMatchObject({ modelCalls: 1, toolCalls: 0, attempts: 1 });
    expect(second!.usage.totalTokens).toBe(110);
    // Cost in the model's price units: 100 input tokens at 3 and 10 output tokens at 15 per million, per call.
    expect(second!.usage.cost.input).toBeCloseTo(0.0003, 12);
    expect(second!.usage.cost.output).toBeCloseTo(0.00015, 12);
    expect(second!.usage.cost.total).toBeCloseTo(0.00045, 12);
    expect(first!.usage.cost.total).toBeCloseTo(0.0009, 12);
    expect(usage.total.totalTokens).toBe(330);
    expect(usage.total.cost.total).toBeCloseTo(first!.usage.cost.total + second!.usage.cost.total, 12);
    expect(usage.submissions.map((entry) => entry.submissionId).every((id) => id.startsWith('sub_'))).toBe(true);
  });

  it('counts the model calls of a delegated task in the entry of the submission that delegated', async () => {
    await ask(Manager, 'manager', 'delegate');
    const usage = await getUsage(Manager, 'manager');
    // The parent's two turns and the child's one: three calls of 110 tokens; the task call is the tool call.
    expect(usage?.submissions).toEqual([expect.objectContaining({ modelCalls: 3, toolCalls: 1, attempts: 1 })]);
    expect(usage?.total.totalTokens).toBe(330);
  });

  it('counts the model calls a harness makes, in a tool and in a hook, in the entry of the submission they worked for', async () => {
    await ask(Ponderer, 'ponderer', 'ponder');
    const usage = await getUsage(Ponderer, 'ponderer');
    // Two turns, the tool's harness prompt and the useAgentFinish harness prompt: four calls of 110 tokens.
    expect(usage?.submissions).toEqual([expect.objectContaining({ modelCalls: 4, toolCalls: 1, attempts: 1 })]);
    expect(usage?.total.totalTokens).toBe(440);
    expect(usage?.total.cost.total).toBeCloseTo(0.0018, 12);
  });

  it('has no Durable Object counts on Node', async () => {
    const usage = await getUsage(Metered, 'ledger');
    expect(usage?.durableObject).toBeUndefined();
    expect(usage?.submissions.every((entry) => entry.durableObject === undefined)).toBe(true);
  });

  it('is null for an instance never contacted', async () => {
    expect(await getUsage(Metered, 'never-contacted')).toBeNull();
  });
});

describe('budget.perSubmission', () => {
  it('stops the response at the next turn boundary: read() rejects with BudgetExceededError as the cause, and the ledger shows one model call', async () => {
    const asked = () => server.requests.length;
    const before = asked();
    const handle = init(Capped, { id: 'capped' });
    const receipt = await handle.dispatch('tools');
    const error = await rejection(handle.read(receipt));
    expect(error).toBeInstanceOf(AgentRunError);
    expect((error as AgentRunError).cause).toMatchObject({
      type: 'budget_exceeded',
      meta: { scope: 'submission', limit: 'maxTokens', budget: 110, spent: 110 },
    });
    const usage = await getUsage(Capped, 'capped');
    expect(usage?.submissions).toEqual([
      expect.objectContaining({ submissionId: receipt.submissionId, modelCalls: 1, toolCalls: 1, attempts: 1 }),
    ]);
    // The tool ran, but the model was never asked again after it.
    expect(asked() - before).toBe(1);
  });
});

describe('budget.perSubmission and harness calls', () => {
  it("counts a tool's harness calls at the next turn boundary: the turn after the tool is never asked for", async () => {
    const asked = () => server.requests.length;
    const before = asked();
    const handle = init(PonderCapped, { id: 'ponder-capped' });
    const error = await rejection(handle.read(await handle.dispatch('ponder')));
    expect((error as AgentRunError).cause).toMatchObject({ type: 'budget_exceeded', meta: { budget: 220, spent: 220 } });
    // The first turn and the tool's harness prompt.
    expect(asked() - before).toBe(2);
    expect((await getUsage(PonderCapped, 'ponder-capped'))?.submissions).toEqual([expect.objectContaining({ modelCalls: 2 })]);
  });
});

describe('budget.perSubmission inside a delegated task', () => {
  it("a delegate's turn boundary checks the budget of the submission it works for: the delegate stops, and the submission fails", async () => {
    const asked = () => server.requests.length;
    const before = asked();
    const handle = init(Overseer, { id: 'overseer' });
    const receipt = await handle.dispatch('oversee');
    const error = await rejection(handle.read(receipt));
    expect((error as AgentRunError).cause).toMatchObject({
      type: 'budget_exceeded',
      meta: { scope: 'submission', budget: 220, spent: 220 },
    });
    // The parent's turn and the delegate's first; the delegate's second turn was never asked for.
    expect(asked() - before).toBe(2);
    expect((await getUsage(Overseer, 'overseer'))?.submissions).toEqual([expect.objectContaining({ modelCalls: 2 })]);
  });
});

describe('budget.perConversation', () => {
  it('refuses new deliveries at admission on dispatch and HTTP, storing nothing, until the static is raised', async () => {
    await ask(Thrifty, 'thrifty', 'plain');
    const before = await getAgentInstance(Thrifty, 'thrifty');
    const handle = init(Thrifty, { id: 'thrifty' });
    const refused = expectFlueError(await rejection(handle.dispatch('more')), BudgetExceededError, 'budget_exceeded');
    expect(refused.meta).toEqual({ scope: 'conversation', limit: 'maxTokens', budget: 100, spent: 110 });
    expect(refused.message).toContain('budget.perConversation.maxTokens');

    const app = new Hono().route('/agents/thrifty', createAgentRouter(Thrifty));
    const response = await app.fetch(
      new Request('http://flue.test/agents/thrifty/thrifty', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'user', body: 'more' }),
      }),
    );
    expect(response.status).toBe(402);
    expect(await response.json()).toMatchObject({ error: { type: 'budget_exceeded', meta: { scope: 'conversation' } } });

    // Nothing was stored: the ledger and the stream head are where the first reply left them.
    expect((await getUsage(Thrifty, 'thrifty'))?.submissions).toHaveLength(1);
    expect(await getAgentInstance(Thrifty, 'thrifty')).toEqual(before);

    // A deploy raises the static: the conversation continues.
    Thrifty.budget = { perConversation: { maxTokens: 1000 } };
    await expect(ask(Thrifty, 'thrifty', 'more')).resolves.toMatchObject({ text: 'Done.' });
    expect((await getUsage(Thrifty, 'thrifty'))?.total.totalTokens).toBe(220);
  });
});

vi.setConfig({ testTimeout: 20_000 });
