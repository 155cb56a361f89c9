// The history benchmarks' builder (bench/history-segments.ts): copies of a real exchange, written
// through the store, must be a history the runtime takes as its own — it wakes on it, answers the
// next message, and sends the model the last compaction's summary and the exchanges it kept.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { dispatch, init } from '@flue/runtime';
import { sqlite, start } from '@flue/runtime/node';
import { type ScriptedModelServer, startScriptedModelServer } from '@flue/runtime/testing';
import { COMPACT_EVERY, KEEP_EXCHANGES, SEED_KEYS, appendSegment, planHistory } from '../bench/history-segments.ts';
import { HistoryAgent, historyProvider } from '../bench/node/history-agent.ts';
import { AGENT_NAME, INSTANCE_ID, answer, keyOfQuestion, question, scriptedReply } from '../bench/node/history-script.ts';
import { conversationKey } from '../src/runtime/store/conversation-key.ts';
import { SqlStore } from '../src/runtime/store/sql-store.ts';

let server: ScriptedModelServer;
let dir: string;

beforeAll(async () => {
  server = await startScriptedModelServer({ fallback: (request) => scriptedReply(request.messages) });
  dir = mkdtempSync(join(tmpdir(), 'flue-history-segments-'));
});

afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

async function exchange(file: string, key: string): Promise<string> {
  const flue = await start({ agents: [HistoryAgent], db: sqlite(file), providers: [historyProvider(server.url)], env: {} });
  try {
    const receipt = await dispatch(HistoryAgent, { id: INSTANCE_ID, message: question(key) });
    return (await init(HistoryAgent, { id: INSTANCE_ID }).read(receipt)).text;
  } finally {
    await flue.stop();
  }
}

test('a woken conversation built of copied segments answers from the last summary and the kept exchanges', async () => {
  const file = join(dir, 'history.db');
  for (const key of SEED_KEYS) expect(await exchange(file, key)).toBe(answer(key));

  const adapter = sqlite(file);
  await adapter.migrate();
  const store = new SqlStore(await adapter.connect());
  const stream = conversationKey(AGENT_NAME, INSTANCE_ID);
  const planned = planHistory(store.readBatches(stream, -1).map((batch) => batch.records));
  const segments = 2;
  let cursor = planned.cursor;
  for (let i = 0; i < segments; i++) cursor = appendSegment(store, stream, planned.plan, cursor);
  expect(cursor.exchange).toBe(segments * COMPACT_EVERY);
  const submissions = store.listSubmissions();
  expect(new Set(submissions.map((row) => row.id)).size).toBe(SEED_KEYS.length + segments * COMPACT_EVERY);
  expect(submissions.every((row) => row.status === 'settled')).toBe(true);
  await adapter.close();

  const before = server.requests.length;
  expect(await exchange(file, 'next')).toBe(answer('next'));
  const sent = server.requests[before]!.messages.filter((message) => message.role === 'user').map((message) => message.content);
  const last = segments * COMPACT_EVERY - 1;
  // The summary of the last compaction, then the questions it kept, then the new one: nothing older.
  expect(sent[0]).toContain(`Summary of the conversation up to ${question(`k${last}`)}`);
  const kept = Array.from({ length: KEEP_EXCHANGES }, (_, i) => `k${last - KEEP_EXCHANGES + 1 + i}`);
  expect(sent.slice(1).map(keyOfQuestion)).toEqual([...kept, 'next']);
});
