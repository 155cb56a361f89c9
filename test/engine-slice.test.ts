import { afterAll, beforeAll, expect, test } from 'vitest';
import * as v from 'valibot';
import { useModel, useTool } from '@flue/runtime';
import { sqlite } from '@flue/runtime/node';
import { scriptedProvider, startScriptedModelServer, type ScriptedModelServer } from '@flue/runtime/testing';
import { parseDeliveredMessage } from '../src/runtime/engine/delivered-message.ts';
import { ConversationEngine } from '../src/runtime/engine/engine.ts';
import { AgentRegistry } from '../src/runtime/authoring/identity.ts';
import { registerProviders } from '../src/runtime/model/providers.ts';
import { SqlStore } from '../src/runtime/store/sql-store.ts';
import { conversationKey } from '../src/runtime/store/conversation-key.ts';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModelServer();
  registerProviders([scriptedProvider({ baseUrl: server.url, id: 'scripted', models: ['model'] })]);
});
afterAll(async () => server.close());

let tickRuns = 0;

function Stepper() {
  useModel('scripted/model');
  useTool({
    name: 'tick',
    description: 'Tick.',
    input: v.object({}),
    run: () => {
      tickRuns += 1;
      return 'tock';
    },
  });
  return 'Tick three times.';
}

test('a response that outlives its wall-time slice yields at a turn boundary and continues without spending an attempt', async () => {
  const adapter = sqlite();
  await adapter.migrate();
  const store = new SqlStore(await adapter.connect());
  const registry = new AgentRegistry();
  registry.register(Stepper);
  // A zero budget yields at every turn boundary, as a Durable Object's run does after ~10 minutes.
  // The test drives the queue itself (runNext below), one attempt at a time: wakes need no action.
  const engine = new ConversationEngine({ store, registry, env: {}, wake: () => undefined, sliceBudgetMs: 0 });
  server.script(
    { toolCalls: [{ name: 'tick', arguments: {} }] },
    { toolCalls: [{ name: 'tick', arguments: {} }] },
    { text: 'Ticked twice.' },
  );
  const { receipt } = await engine.admit('Stepper', { id: 's1', message: parseDeliveredMessage('go') }, 'dispatch');
  const stream = conversationKey('Stepper', 's1');
  let passes = 0;
  while (engine.view.openSubmissions(stream).length > 0) {
    expect(await engine.runNext(stream)).toBe(true);
    if (++passes > 20) throw new Error('did not settle');
  }
  // A pass per tool-calling step (each yields after its tool batch); the last step's batch settles.
  expect(passes).toBe(3);
  const reply = await engine.read('Stepper', 's1', receipt.submissionId);
  expect(reply.text).toBe('Ticked twice.');
  expect(store.getSubmission(receipt.submissionId)).toMatchObject({ outcome: 'completed', attemptCount: 1 });
  expect(server.requests).toHaveLength(3);
  // Each requested call ran once and the model saw its real result: a yield never separates a
  // model step from its tool calls (a continuation would take them for calls a crash cut off).
  expect(tickRuns).toBe(2);
  expect(server.requests[2]!.messages.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual(['"tock"', '"tock"']);
  await adapter.close();
});
