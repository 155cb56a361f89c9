/**
 * A model stream that stalls, through the engine: stop() cuts it off and the next engine continues
 * it; while nobody follows the conversation what it streamed is held (flush-policy.ts), and a
 * reader that arrives gets it at once.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { observe, useModel } from '@flue/runtime';
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
  // A reader follows the stream (the stop ends its read), so the trailing flush commits the partial.
  first.read('Talker', 't1', receipt.submissionId, { onEvent: () => {} }).catch(() => {});
  await until(() => deltaCommitted(driver));
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

test('a stream nobody follows writes nothing while it streams; an updates reader arriving gets the held text at once', async () => {
  const adapter = sqlite();
  await adapter.migrate();
  const driver = await adapter.connect();
  const engine = engineOn(new SqlStore(driver), [Talker]);
  // Both deltas, each 300 ms after the one before (past the followed schedule's first 250 ms),
  // then the stream stalls: held text stays held for as long as nobody reads.
  server.script({ text: ['Once upon ', 'a time'], chunkDelayMs: 300, hangAfterChunks: 4 });
  const heard: string[] = [];
  const unobserve = observe((event) => {
    if (event.type === 'text_delta') heard.push(String(event.text));
  });
  try {
    await engine.admit('Talker', { id: 't1', message: parseDeliveredMessage('Tell a story') }, 'dispatch');
    await until(() => heard.join('') === 'Once upon a time');
    expect(deltaCommitted(driver)).toBe(false);

    const { head } = engine.streamHead('Talker', 't1')!;
    const answer = await engine.updates('Talker', 't1', head, { waitMs: 0, maxBatches: 100 });
    expect(answer).toMatchObject({ kind: 'ok', upToDate: true });
    const deltas = answer.kind === 'ok' ? answer.chunks.filter((chunk) => chunk.type === 'message-delta') : [];
    expect(deltas.map((chunk) => (chunk as { delta: string }).delta).join('')).toBe('Once upon a time');
    expect(deltaCommitted(driver)).toBe(true);
  } finally {
    unobserve();
    await engine.stop(100);
    await adapter.close();
  }
});
