/**
 * A conversation that outlives its process: the next process wakes it from its checkpoint and
 * the log after it, and readers of its history (old replies, the history view, the ledger) read
 * the log, through the public API on Node.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { expect, test } from 'vitest';
import { getUsage, init, useModel } from '@flue/runtime';
import { sqlite } from '@flue/runtime/node';
import { configuredRuntime } from '../src/runtime/host/runtime.ts';
import { useScriptedRuntime } from './support/scripted-runtime.ts';
import { LOG_ROWS } from './support/log-sql.ts';

const ctx = useScriptedRuntime();
const MiB = 1024 * 1024;

function Keeper() {
  useModel('anthropic/claude-haiku-4-5');
  return 'Keep.';
}

function rows(path: string, sql: string): Record<string, unknown>[] {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return db.prepare(sql).all() as Record<string, unknown>[];
  } finally {
    db.close();
  }
}

test('a restarted process wakes a conversation from its checkpoint; old replies, the history and the ledger come from the log', async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'flue-long-')), 'flue.db');
  await ctx.start([Keeper], { db: sqlite(path), contextWindow: 100_000_000 });
  ctx.server.script({ text: 'One.' }, { text: 'Two.' }, { text: 'Three.' }, { text: 'Done.' });
  const handle = init(Keeper, { id: 'long' });
  const receipts = [];
  // 9 MiB of messages: past the byte interval, so a later batch (the small fourth message's) carries a checkpoint.
  for (const text of ['a', 'b', 'c'].map((letter) => letter.repeat(3 * MiB)).concat('done')) {
    const receipt = await handle.dispatch(text);
    receipts.push(receipt);
    await handle.read(receipt);
  }
  await ctx.flue!.stop();
  const [checkpoint] = rows(path, 'SELECT seq FROM flue_checkpoints');
  const head = Number(rows(path, `SELECT max(seq) AS seq FROM ${LOG_ROWS}`)[0]!.seq);
  expect(Number(checkpoint!.seq)).toBeGreaterThan(0);
  expect(Number(checkpoint!.seq)).toBeLessThan(head);

  await ctx.start([Keeper], { db: sqlite(path), contextWindow: 100_000_000 });
  ctx.server.script({ text: 'Four.' });
  const next = init(Keeper, { id: 'long' });
  expect((await next.read(await next.dispatch('four'))).text).toBe('Four.');
  // The model saw the whole context, woken from the checkpoint and the batches after it.
  const users = ctx.server.requests.at(-1)!.messages.filter((m) => m.role === 'user');
  expect(users.map((m) => m.content.slice(0, 1))).toEqual(['a', 'b', 'c', 'd', 'f']);
  expect((await next.read(receipts[0]!)).text).toBe('One.');
  expect((await next.read(receipts[1]!)).text).toBe('Two.');
  const history = (await configuredRuntime()!.history('Keeper', 'long'))!;
  expect(history.messages.map((m) => `${m.role}:${(m.parts[0] as { text: string }).text.slice(0, 4)}`)).toEqual([
    'user:aaaa',
    'assistant:One.',
    'user:bbbb',
    'assistant:Two.',
    'user:cccc',
    'assistant:Thre',
    'user:done',
    'assistant:Done',
    'user:four',
    'assistant:Four',
  ]);
  expect(history.settlements).toHaveLength(5);
  const usage = await getUsage(Keeper, 'long');
  expect(usage!.submissions.map((entry) => entry.submissionId)).toEqual([...receipts.map((r) => r.submissionId), expect.any(String)]);
}, 60_000);
