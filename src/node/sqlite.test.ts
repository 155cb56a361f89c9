import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { expect, test } from 'vitest';
import { PersistedFormatVersionError } from '../runtime/common/errors.ts';
import { SqlStore } from '../runtime/store/sql-store.ts';
import { sqlite } from './sqlite.ts';
import { storedConversationKey } from '../runtime/store/conversation-key.ts';

const tmp = () => mkdtempSync(join(tmpdir(), 'flue-sqlite-'));

test('a file path creates missing parent folders, opens in WAL mode and stamps the current format version (2)', async () => {
  const path = join(tmp(), 'nested', 'deeper', 'flue.db');
  const adapter = sqlite(path);
  await adapter.migrate();
  await adapter.connect();
  await adapter.close();
  expect(existsSync(path)).toBe(true);
  const db = new DatabaseSync(path);
  expect(db.prepare('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' });
  expect(db.prepare(`SELECT value FROM flue_meta WHERE key = 'format_version'`).get()).toEqual({ value: '5' });
  db.close();
});

test('a store stamped with another format version is refused before anything is read or written', async () => {
  const path = join(tmp(), 'flue.db');
  const db = new DatabaseSync(path);
  db.exec(`CREATE TABLE flue_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO flue_meta VALUES ('format_version', '6')`);
  db.close();
  const adapter = sqlite(path);
  let error: unknown;
  try {
    await adapter.migrate();
  } catch (caught) {
    error = caught;
  }
  await adapter.close();
  expect(error).toBeInstanceOf(PersistedFormatVersionError);
  expect((error as PersistedFormatVersionError).type).toBe('persisted_format_version_unsupported');
  expect((error as PersistedFormatVersionError).meta).toEqual({ storedVersion: '6', supportedVersion: '5' });
  const after = new DatabaseSync(path);
  expect(after.prepare(`SELECT value FROM flue_meta`).get()).toEqual({ value: '6' });
  expect(after.prepare(`SELECT count(*) AS n FROM sqlite_master WHERE name IN ('flue_log', 'flue_batches')`).get()).toEqual({ n: 0 });
  after.close();
});

test('a store with flue tables but no stamp is refused as unversioned', async () => {
  const path = join(tmp(), 'flue.db');
  const db = new DatabaseSync(path);
  db.exec(`CREATE TABLE flue_batches (x INTEGER)`);
  db.close();
  const adapter = sqlite(path);
  await expect(async () => adapter.migrate()).rejects.toMatchObject({ meta: { storedVersion: 'unversioned' } });
  await adapter.close();
});

test('batches append under dense sequences, all-or-nothing with the writes of their transaction', async () => {
  const adapter = sqlite();
  await adapter.migrate();
  const store = new SqlStore(await adapter.connect());
  store.createConversation({ key: storedConversationKey('s'), agent: 'A', instanceId: 'i', incarnation: 'inc_1' });
  expect(store.head(storedConversationKey('s'))).toBe(-1);
  expect(store.append(storedConversationKey('s'), [{ type: 'agent_start_run', submissionId: 'a' }])).toBe(0);
  expect(() =>
    store.transaction(() => {
      store.append(storedConversationKey('s'), [{ type: 'agent_start_run', submissionId: 'b' }]);
      store.writeState(storedConversationKey('s'), 'k', 1, 1);
      throw new Error('boom');
    }),
  ).toThrow('boom');
  expect(store.head(storedConversationKey('s'))).toBe(0);
  expect(store.readState(storedConversationKey('s')).has('k')).toBe(false);
  expect(store.append(storedConversationKey('s'), [{ type: 'agent_start_run', submissionId: 'c' }])).toBe(1);
  expect(store.readBatches(storedConversationKey('s'), 0).map((b) => b.seq)).toEqual([1]);
  expect(() => store.append(storedConversationKey('s'), [])).toThrow(/at least one record/);
  await adapter.close();
});

test('settled submissions are never rewritten: the first terminal state wins', async () => {
  const adapter = sqlite();
  await adapter.migrate();
  const store = new SqlStore(await adapter.connect());
  store.storeSubmission({
    id: 'sub_1',
    conversation: storedConversationKey('s'),
    kind: 'dispatch',
    payload: { message: { kind: 'user', body: 'x' } },
    acceptedAt: 'now',
  });
  store.markSettled([{ id: 'sub_1', settlement: null }], 'completed', null, 1);
  store.markSettled([{ id: 'sub_1', settlement: null }], 'failed', 'late', 2);
  expect(store.getSubmission('sub_1')).toMatchObject({ status: 'settled', outcome: 'completed', error: null });
  expect(store.listSubmissions()[0]).toMatchObject({ id: 'sub_1', outcome: 'completed' });
  await adapter.close();
});

test('a write waits out a lock another process holds instead of failing with "database is locked"', async () => {
  const path = join(tmp(), 'flue.db');
  const adapter = sqlite(path);
  await adapter.migrate();
  const store = new SqlStore(await adapter.connect());
  store.createConversation({ key: storedConversationKey('s'), agent: 'A', instanceId: 'i', incarnation: 'inc_1' });
  // Another process (a restarted Flue process recovering the WAL, a backup, the sqlite3 shell)
  // holds the write lock for a moment. Our driver is synchronous, so the holder must live in a
  // separate process to be able to let go while this one waits.
  const holder = spawn(
    process.execPath,
    [
      '--no-warnings',
      '--input-type=module',
      '-e',
      `import { DatabaseSync } from 'node:sqlite';
       const db = new DatabaseSync(${JSON.stringify(path)});
       db.exec('BEGIN IMMEDIATE');
       db.exec("INSERT INTO flue_meta (key, value) VALUES ('held', 'yes')");
       console.log('locked');
       setTimeout(() => { db.exec('COMMIT'); db.close(); }, 300);`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const exited = once(holder, 'exit');
  await once(holder.stdout, 'data');
  expect(store.append(storedConversationKey('s'), [{ type: 'agent_start_run', submissionId: 'a' }])).toBe(0);
  expect(await exited).toEqual([0, null]);
  expect(store.readBatches(storedConversationKey('s'), -1).map((b) => b.seq)).toEqual([0]);
  const db = new DatabaseSync(path);
  expect(db.prepare(`SELECT value FROM flue_meta WHERE key = 'held'`).get()).toEqual({ value: 'yes' });
  db.close();
  await adapter.close();
});

test('a Node without node:sqlite gets an error naming its version and the Node it needs, not a TypeError', () => {
  const getBuiltinModule = process.getBuiltinModule;
  process.getBuiltinModule = ((id: string) => (id === 'node:sqlite' ? undefined : getBuiltinModule(id))) as typeof process.getBuiltinModule;
  try {
    expect(() => sqlite().migrate()).toThrow(
      `[flue] sqlite() needs Node.js 22.19 or newer, where node:sqlite is built in (this is ${process.version}).`,
    );
    // A database file's folder is made only once the database can open.
    const folder = join(tmp(), 'never');
    expect(() => sqlite(join(folder, 'flue.db')).migrate()).toThrow(/needs Node\.js 22\.19/);
    expect(existsSync(folder)).toBe(false);
  } finally {
    process.getBuiltinModule = getBuiltinModule;
  }
});
