import { afterAll, beforeAll, expect, test } from 'vitest';
import { useModel } from '@flue/runtime';
import { sqlite } from '@flue/runtime/node';
import { scriptedProvider, startScriptedModelServer, type ScriptedModelServer } from '@flue/runtime/testing';
import { registerProviders } from '../src/runtime/model/providers.ts';
import { SqlStore } from '../src/runtime/store/sql-store.ts';
import { deltaCommitted, engineOn, until } from './support/engine.ts';
import { parseDeliveredMessage } from '../src/runtime/engine/delivered-message.ts';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModelServer();
  registerProviders([scriptedProvider({ baseUrl: server.url, id: 'anthropic', models: ['claude-haiku-4-5'], api: 'anthropic-messages' })]);
});
afterAll(async () => server.close());

function Talker() {
  useModel('anthropic/claude-haiku-4-5');
  return 'Talk.';
}

test('stop() cuts a stalled model stream off after its grace period; the next engine continues it', async () => {
  const adapter = sqlite();
  await adapter.migrate();
  const driver = await adapter.connect();
  const store = new SqlStore(driver);
  const first = await engineOn(store, [Talker]);
  server.script({ text: ['Once upon ', 'a time'], hangAfterChunks: 4 });
  const { receipt } = await first.admit('Talker', { id: 't1', message: parseDeliveredMessage('Tell a story') }, 'dispatch');
  await until(() => deltaCommitted(driver)); // the trailing flush committed the partial
  // The stream never ends on its own: stop() resolving at all means it cut the stream off.
  await first.stop(100);
  expect(store.getSubmission(receipt.submissionId)!.status).toBe('running');

  server.script({ text: 'and they lived happily.' });
  const second = await engineOn(store, [Talker]);
  for (const stream of second.view.keysWithOpenWork()) void second.runQueue(stream);
  const reply = await second.read('Talker', 't1', receipt.submissionId);
  expect(reply.text).toContain('and they lived happily.');
  const resumed = server.requests[1]!;
  expect(resumed.messages.map((m) => m.content).join('\n')).toContain('Once upon a time');
  expect(resumed.messages.some((m) => m.content.includes('stream_interrupted'))).toBe(true);
  expect(store.getSubmission(receipt.submissionId)).toMatchObject({ status: 'settled', outcome: 'completed', attemptCount: 2 });
  await second.stop();
  await adapter.close();
});
