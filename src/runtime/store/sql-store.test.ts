import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it, vi } from 'vitest';
import { sqlite } from '../../node/sqlite.ts';
import { ConversationRecordInvariantError } from '../common/errors.ts';
import type { ConversationRecord } from './records.ts';
import { MAX_STATEMENT_BYTES, RowTooLargeError, SPILL_BYTES, SqlStore, guardStatement, migrate } from './sql-store.ts';
import { storedConversationKey } from './conversation-key.ts';
import { createEveryTable, lazyRows, lazyWrite } from './schema.ts';

/** A fresh store holding conversations `s`, `t` and `other`, with nothing in their logs yet. */
async function openStore(): Promise<SqlStore> {
  const adapter = sqlite();
  await adapter.migrate();
  const store = new SqlStore(await adapter.connect());
  for (const name of ['s', 't', 'other']) {
    store.createConversation({ key: storedConversationKey(name), agent: 'A', instanceId: name, incarnation: 'inc' });
  }
  return store;
}

/** node:sqlite as a store driver, without transactions (each statement commits alone). */
const driverOf = (db: DatabaseSync) => ({
  query: (sql: string, ...params: never[]) => db.prepare(sql).all(...params) as never,
  run: (sql: string, ...params: never[]) => void db.prepare(sql).run(...params),
  transaction: <T>(fn: () => T) => fn(),
});

/** An in-memory database stamped as a format-1 store, with nothing else in it yet. */
function formatOneDatabase(): DatabaseSync {
  const db = new DatabaseSync(':memory:');
  db.exec(`CREATE TABLE flue_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO flue_meta VALUES ('format_version', '1')`);
  return db;
}

const encoder = new TextEncoder();
const utf8 = (text: string) => encoder.encode(text).byteLength;

/** A record whose JSON is exactly `bytes` UTF-8 bytes long, padded with `fill`. */
function signalOfSize(bytes: number, fill = 'x'): ConversationRecord[] {
  const make = (body: string): ConversationRecord[] => [
    { type: 'signal', messageId: 'm', origin: 'framework', signalType: 't', body, ts: '2026-01-01T00:00:00.000Z' } as ConversationRecord,
  ];
  const overhead = utf8(JSON.stringify(make('')));
  const fillBytes = utf8(fill);
  let body = fill.repeat(Math.floor((bytes - overhead) / fillBytes));
  body += 'y'.repeat(bytes - overhead - utf8(body));
  const records = make(body);
  expect(utf8(JSON.stringify(records))).toBe(bytes);
  return records;
}

/** Attributes of short ASCII strings adding up to about `bytes` of JSON: large, but no string large alone. */
function asciiAttributes(bytes: number): Record<string, string> {
  const attributes: Record<string, string> = {};
  for (let i = 0; i * 1000 < bytes; i++) attributes[`a${i}`] = 'v'.repeat(1000 - 8 - String(i).length);
  return attributes;
}

function spillRows(store: SqlStore): number {
  return Number(lazyRows(store.driver, 'SELECT count(*) AS n FROM flue_spill')[0]?.n ?? 0);
}

describe('spilled values', () => {
  it('keeps a batch at exactly the threshold in its row and spills one byte more', async () => {
    const store = await openStore();
    store.append(storedConversationKey('s'), signalOfSize(SPILL_BYTES));
    expect(spillRows(store)).toBe(0);
    const over = signalOfSize(SPILL_BYTES + 1);
    store.append(storedConversationKey('s'), over);
    expect(spillRows(store)).toBe(2);
    const marker = String(store.driver.query('SELECT records FROM flue_log WHERE pos = (1 << 32) + 1')[0].records);
    expect(marker.startsWith('~')).toBe(true);
    expect(() => JSON.parse(marker)).toThrow();
    expect(store.readBatches(storedConversationKey('s'), 0)).toEqual([{ seq: 1, records: over }]);
    expect(store.readBatchesSized(storedConversationKey('s'), -1).map((item) => item.bytes)).toEqual([SPILL_BYTES, SPILL_BYTES + 1]);
  });

  it('round-trips multi-byte text split across chunk boundaries byte-identically', async () => {
    const store = await openStore();
    for (const [fill, size] of [
      ['é', 3 * SPILL_BYTES + 1],
      ['€', 2 * SPILL_BYTES + 2],
      ['😀', 4 * SPILL_BYTES + 3],
      ['a😀é€', 5 * SPILL_BYTES - 1],
    ] as const) {
      const records = signalOfSize(size, fill);
      const seq = store.append(storedConversationKey('s'), records);
      const [read] = store.readBatches(storedConversationKey('s'), seq - 1, 1);
      expect(JSON.stringify(read.records)).toBe(JSON.stringify(records));
    }
  });

  it('spills submission payloads, state and step values, and reads empty strings back', async () => {
    const store = await openStore();
    const big = '€'.repeat(SPILL_BYTES);
    const message = { kind: 'user' as const, body: big };
    store.storeSubmission({
      id: 'sub_1',
      conversation: storedConversationKey('s'),
      kind: 'dispatch',
      payload: { message },
      acceptedAt: 'now',
    });
    expect(store.getSubmission('sub_1')!.payload.message).toEqual(message);
    expect(store.openSubmissions(storedConversationKey('s'))[0].payload.message).toEqual(message);

    store.writeState(storedConversationKey('s'), 'big', { text: big }, 0);
    store.writeState(storedConversationKey('s'), 'empty', '', 0);
    expect(store.readState(storedConversationKey('s'))).toEqual(
      new Map<string, unknown>([
        ['big', { text: big }],
        ['empty', ''],
      ]),
    );

    store.writeStep(storedConversationKey('s'), 'call', 'one', [big, '']);
    store.writeStep(storedConversationKey('s'), 'call', 'one', 'ignored: the first write wins');
    store.writeStep(storedConversationKey('s'), 'call', 'empty', '');
    expect(store.readStep(storedConversationKey('s'), 'call', 'one')).toEqual({ found: true, value: [big, ''] });
    expect(store.readStep(storedConversationKey('s'), 'call', 'empty')).toEqual({ found: true, value: '' });
  });

  it('an overwritten state value drops the chunks of the previous one; its history keeps each write under its batch, large ones as markers', async () => {
    const store = await openStore();
    const stateChunks = () => Number(store.driver.query(`SELECT count(*) AS n FROM flue_spill WHERE key LIKE '["state",%'`)[0].n);
    store.writeState(storedConversationKey('s'), 'v', 'a'.repeat(3 * SPILL_BYTES - 2), 0); // plus two quotes
    expect(stateChunks()).toBe(3);
    store.writeState(storedConversationKey('s'), 'v', 'b'.repeat(2 * SPILL_BYTES - 2), 1);
    expect(stateChunks()).toBe(2);
    store.writeState(storedConversationKey('s'), 'v', 'small', 2);
    expect(stateChunks()).toBe(0);
    expect(store.readState(storedConversationKey('s')).get('v')).toBe('small');
    // The history keeps small values; a large one only as the fact of its write, so it costs no chunks.
    expect(store.readStateHistory(storedConversationKey('s'))).toEqual([
      { seq: 0, name: 'v', unkept: true },
      { seq: 1, name: 'v', unkept: true },
      { seq: 2, name: 'v', value: 'small' },
    ]);
    expect(spillRows(store)).toBe(0);
  });

  describe('a damaged chunk is a typed storage error, never a shorter value', () => {
    // Three chunks, so that a middle one exists; ASCII, so that a short value would still decode.
    const damages: [string, (store: SqlStore) => void][] = [
      ['a missing middle chunk', (store) => store.driver.run('DELETE FROM flue_spill WHERE idx = 1')],
      ['a missing last chunk', (store) => store.driver.run('DELETE FROM flue_spill WHERE idx = 2')],
      ['a truncated middle chunk', (store) => store.driver.run('UPDATE flue_spill SET data = substr(data, 1, 10) WHERE idx = 1')],
      [
        'a middle chunk that is not UTF-8',
        (store) => store.driver.run('UPDATE flue_spill SET data = ? WHERE idx = 1', new Uint8Array(SPILL_BYTES).fill(0xff)),
      ],
    ];
    // The whole batch spilled (many strings, none large alone), and one large string kept apart.
    const layouts: [string, ConversationRecord[]][] = [
      [
        'whole',
        [
          {
            type: 'signal',
            messageId: 'm',
            origin: 'framework',
            signalType: 't',
            body: '',
            attributes: asciiAttributes(3 * SPILL_BYTES - 400),
            ts: 'now',
          },
        ],
      ],
      ['apart', signalOfSize(3 * SPILL_BYTES - 5)],
    ];
    it.each(damages.flatMap(([name, damage]) => layouts.map(([layout, records]) => [`${name} (${layout})`, damage, records] as const)))(
      '%s',
      async (_, damage, records) => {
        const written = await openStore();
        const seq = written.append(storedConversationKey('s'), records);
        expect(spillRows(written)).toBe(3);
        damage(written);
        // A store opened after the damage: the writer itself remembers the large string it wrote.
        const store = new SqlStore(written.driver);
        for (const read of [
          () => store.readBatches(storedConversationKey('s'), seq - 1),
          () => store.readBatchesSized(storedConversationKey('s'), seq - 1),
        ]) {
          expect(read).toThrow(ConversationRecordInvariantError);
          expect(read).toThrow(/\(spilled value\)/);
        }
      },
    );
  });

  it('bounds a sized read by bytes, returning at least one batch', async () => {
    const store = await openStore();
    for (let i = 0; i < 5; i++) store.append(storedConversationKey('s'), signalOfSize(3 * SPILL_BYTES));
    expect(store.readBatchesSized(storedConversationKey('s'), -1, 100, 1).map((item) => item.batch.seq)).toEqual([0]);
    expect(store.readBatchesSized(storedConversationKey('s'), -1, 100, 7 * SPILL_BYTES).map((item) => item.batch.seq)).toEqual([0, 1, 2]);
    expect(store.readBatchesSized(storedConversationKey('s'), 1, 2).map((item) => item.batch.seq)).toEqual([2, 3]);
  });

  it('a store created before spilling existed gains the table and keeps its rows', () => {
    const db = formatOneDatabase();
    db.exec(
      `CREATE TABLE flue_batches (stream TEXT NOT NULL, seq INTEGER NOT NULL, records TEXT NOT NULL, PRIMARY KEY (stream, seq)) WITHOUT ROWID`,
    );
    db.exec(`INSERT INTO flue_batches VALUES ('s', 0, '[{"type":"x"}]')`);
    const driver = driverOf(db);
    migrate(driver);
    const store = new SqlStore(driver);
    expect(store.readBatches(storedConversationKey('s'), -1)).toEqual([{ seq: 0, records: [{ type: 'x' }] }]);
  });
});

describe('the log in either format', () => {
  const records = (text: string): ConversationRecord[] => signalOfSize(text.length + 200, text[0]);

  it('a format-1 store keeps writing and reading its log in flue_batches, and its new conversations too', async () => {
    const db = formatOneDatabase();
    const driver = driverOf(db);
    migrate(driver);
    const store = new SqlStore(driver);
    const [a, b] = [storedConversationKey('agents/A/a'), storedConversationKey('agents/A/b')];
    for (const key of [a, b]) store.createConversation({ key, agent: 'A', instanceId: 'x', incarnation: 'inc' });
    store.append(a, records('a'.repeat(100)));
    store.append(b, records('b'.repeat(100)));
    store.append(a, records('c'.repeat(3_000)));
    expect([store.head(a), store.head(b)]).toEqual([1, 0]);
    expect(store.readBatches(a, -1).map((batch) => batch.seq)).toEqual([0, 1]);
    expect(db.prepare('SELECT stream, seq FROM flue_batches ORDER BY stream, seq').all()).toEqual([
      { stream: a, seq: 0 },
      { stream: a, seq: 1 },
      { stream: b, seq: 0 },
    ]);
    expect(db.prepare(`SELECT count(*) AS n FROM sqlite_master WHERE name = 'flue_log'`).get()).toEqual({ n: 0 });
    // Its page rule is the WITHOUT ROWID one: a 3,000-byte batch takes an overflow page there.
    expect(store.logRowOverflowPages(a, 2, 3_000)).toBe(1);
  });

  it('a format-2 store numbers each conversation its log, keeps their batches apart, and refuses a batch of none', async () => {
    const store = await openStore();
    const [s, t] = [storedConversationKey('s'), storedConversationKey('t')];
    store.append(t, records('t'.repeat(100)));
    store.append(s, records('s'.repeat(100)));
    store.append(t, records('u'.repeat(100)));
    expect([store.head(s), store.head(t), store.head(storedConversationKey('nobody'))]).toEqual([0, 1, -1]);
    expect(store.readBatches(t, 0).map((batch) => batch.seq)).toEqual([1]);
    expect(store.driver.query('SELECT stream, log FROM flue_streams ORDER BY log')).toEqual([
      { stream: 's', log: 1 },
      { stream: 't', log: 2 },
      { stream: 'other', log: 3 },
    ]);
    // A store opened later numbers the next conversation after the last one.
    const later = new SqlStore(store.driver);
    later.createConversation({ key: storedConversationKey('u'), agent: 'A', instanceId: 'u', incarnation: 'inc' });
    expect(later.driver.query(`SELECT log FROM flue_streams WHERE stream = 'u'`)).toEqual([{ log: 4 }]);
    expect(() => store.append(storedConversationKey('nobody'), records('n'.repeat(10)))).toThrow(ConversationRecordInvariantError);
    // Its page rule is the rowid one: a 3,000-byte batch stays in its page.
    expect(store.logRowOverflowPages(s, 1, 3_000)).toBe(0);
  });

  it('a store told its database is empty reads nothing to learn so, then logs in this format and asks once it created', () => {
    const db = new DatabaseSync(':memory:');
    const statements: string[] = [];
    const plain = driverOf(db);
    const driver = {
      ...plain,
      query: (sql: string, ...params: never[]) => (statements.push(sql), plain.query(sql, ...params)),
      run: (sql: string, ...params: never[]) => (statements.push(sql), plain.run(sql, ...params)),
    };
    const store = new SqlStore(driver, { empty: true });
    const [s, t] = [storedConversationKey('s'), storedConversationKey('t')];
    expect([store.getConversation(s), store.writesStepTextOnce]).toEqual([undefined, true]);
    expect(statements).toEqual([]);
    // Its host makes the tables before the first write.
    migrate(driver, new Map());
    statements.length = 0;
    store.createConversation({ key: s, agent: 'A', instanceId: 's', incarnation: 'inc' });
    // The writer knows the new conversation's head (-1).
    store.appendSized(s, records('s'.repeat(100)), -1);
    // The stream row and the batch: no read of the stamp, nor of the highest log number.
    expect(statements.map((sql) => sql.split(' ').slice(0, 3).join(' '))).toEqual(['INSERT INTO flue_streams', 'INSERT INTO flue_log']);
    expect(store.getConversation(s)?.instanceId).toBe('s');
    expect(store.getConversation(t)).toBeUndefined();
    store.createConversation({ key: t, agent: 'A', instanceId: 't', incarnation: 'inc' });
    expect(db.prepare('SELECT stream, log FROM flue_streams ORDER BY log').all()).toEqual([
      { stream: 's', log: 1 },
      { stream: 't', log: 2 },
    ]);
    expect(store.readBatches(s, -1).map((batch) => batch.seq)).toEqual([0]);
  });
});

describe('the submission ledger', () => {
  const ledgerOrder = (store: SqlStore) => store.driver.query('SELECT id FROM flue_submissions ORDER BY ord').map((row) => String(row.id));
  const admit = (store: SqlStore, id: string, stream = storedConversationKey('s')) =>
    store.storeSubmission({
      id,
      conversation: stream,
      kind: 'dispatch',
      payload: { message: { kind: 'user', body: id } },
      acceptedAt: 'now',
    });

  it('a new store keys submissions by id and keeps admission order, also once all are settled', async () => {
    const store = await openStore();
    // The ledger is made by its first row, keyed by id.
    expect(store.driver.query(`SELECT sql FROM sqlite_master WHERE name = 'flue_submissions'`)).toEqual([]);
    admit(store, 'a');
    const table = String(store.driver.query(`SELECT sql FROM sqlite_master WHERE name = 'flue_submissions'`)[0]!.sql);
    expect(table).toMatch(/WITHOUT ROWID/);
    store.markSettled([{ id: 'a', settlement: null }], 'completed', null, 1);
    admit(store, 'b');
    admit(store, 'c', storedConversationKey('t'));
    store.markSettled([{ id: 'b', settlement: null }], 'completed', null, 2);
    admit(store, 'd');
    admit(store, 'e');
    expect(ledgerOrder(store)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(store.openSubmissions(storedConversationKey('s')).map((row) => row.id)).toEqual(['d', 'e']);
    expect(store.getSubmission('c')!.conversation).toBe('t');
  });

  it('reads the open queue past its joined deliveries: the head, what may join it, and who joined whom', async () => {
    const store = await openStore();
    const s = storedConversationKey('s');
    for (const id of ['a', 'b', 'c', 'd', 'e']) admit(store, id);
    admit(store, 'other', storedConversationKey('t'));
    store.markSettled([{ id: 'a', settlement: null }], 'completed', null, 1);
    store.claimAttempt('b', { attemptId: 'att', now: 1, maxAttempts: 3, timeoutMs: 1000 });
    store.markJoined(['c', 'd'], 'b');
    store.requestAbort(storedConversationKey('t'), 5);
    expect(store.unjoinedDeliveries(s)).toEqual([
      { id: 'b', kind: 'dispatch', payload: { message: { kind: 'user', body: 'b' } }, status: 'running', abortRequestedAt: null },
      { id: 'e', kind: 'dispatch', payload: { message: { kind: 'user', body: 'e' } }, status: 'queued', abortRequestedAt: null },
    ]);
    expect(store.queueHead(s)?.id).toBe('b');
    expect(store.joinedIds({ id: 'b', conversation: s })).toEqual(['c', 'd']);
    expect(store.openSubmissionIds(s)).toEqual(['b', 'c', 'd', 'e']);
    store.markSettled([{ id: 'b', settlement: null }], 'completed', null, 2);
    store.markSettled([{ id: 'c', settlement: null }], 'completed', null, 2);
    expect(store.joinedIds({ id: 'b', conversation: s })).toEqual(['d']);
    expect(store.queueHead(s)?.id).toBe('e');
    store.requestAbort(s, 7);
    expect(store.unjoinedDeliveries(s).map((row) => [row.id, row.abortRequestedAt])).toEqual([['e', 7]]);
  });

  it('joins and settles a burst in a statement per chunk of rows, each row keeping its own settlement, settled rows untouched', async () => {
    const store = await openStore();
    const s = storedConversationKey('s');
    const ids = Array.from({ length: 200 }, (_, i) => `q${String(i).padStart(3, '0')}`);
    admit(store, 'leader');
    for (const id of ids) admit(store, id);
    store.markSettled([{ id: 'q199', settlement: 'earlier' }], 'failed', 'gone', 1);
    const writes = vi.spyOn(store.driver, 'run');
    store.markJoined(ids, 'leader');
    expect(writes).toHaveBeenCalledTimes(3);
    expect(store.joinedIds({ id: 'leader', conversation: s })).toEqual(ids.slice(0, 199));
    writes.mockClear();
    store.markSettled(
      ['leader', ...ids].map((id) => ({ id, settlement: `of ${id}` })),
      'completed',
      null,
      2,
    );
    expect(writes).toHaveBeenCalledTimes(Math.ceil(201 / 48));
    const rows = store.driver.query('SELECT id, outcome, settled_at, settlement FROM flue_submissions ORDER BY ord');
    expect(rows.map((row) => [row.id, row.outcome, row.settled_at, row.settlement])).toEqual([
      ['leader', 'completed', 2, 'of leader'],
      ...ids.slice(0, 199).map((id) => [id, 'completed', 2, `of ${id}`]),
      ['q199', 'failed', 1, 'earlier'],
    ]);
    expect(store.openSubmissionIds(s)).toEqual([]);
  });

  it('answers the row it stored, claimed only when nothing else is open, whether it read the open queue or was told its highest order', async () => {
    const store = await openStore();
    const s = storedConversationKey('s');
    const claim = { attemptId: 'att', now: 3, maxAttempts: 3, timeoutMs: 1000 };
    const input = (id: string) => ({
      id,
      conversation: s,
      kind: 'dispatch' as const,
      payload: { message: { kind: 'user' as const, body: id } },
      acceptedAt: 'now',
      claim,
    });
    const first = store.storeSubmission(input('a'));
    expect(first).toEqual(store.getSubmission('a'));
    expect(first).toMatchObject({ status: 'running', attemptId: 'att', attemptCount: 1, startedAt: 3, maxAttempts: 3, timeoutMs: 1000 });
    const reads = vi.spyOn(store.driver, 'query');
    const second = store.storeSubmission(input('b'), { maxOrd: first.ord });
    expect(reads).not.toHaveBeenCalled();
    expect(second).toEqual(store.getSubmission('b'));
    expect(second).toMatchObject({ status: 'queued', attemptId: null, attemptCount: 0, startedAt: null });
    expect(second.ord).toBeGreaterThan(first.ord);
    expect(store.openSubmissionIds(s)).toEqual(['a', 'b']);
    expect(store.openSubmissions(s, 1).map((row) => row.id)).toEqual(['a']);
  });

  it('stores a short row whose order it was told as one statement, and a row with a read or chunks in one transaction', async () => {
    const store = await openStore();
    const s = storedConversationKey('s');
    const transactions = vi.spyOn(store.driver, 'transaction');
    const input = (id: string, body = id) => ({
      id,
      conversation: s,
      kind: 'dispatch' as const,
      payload: { message: { kind: 'user' as const, body } },
      acceptedAt: 'now',
    });
    const first = store.storeSubmission(input('a'));
    expect(transactions).toHaveBeenCalledTimes(1);
    const writes = vi.spyOn(store.driver, 'run');
    store.storeSubmission(input('b'), { maxOrd: first.ord });
    expect([transactions.mock.calls.length, writes.mock.calls.length]).toEqual([1, 1]);
    store.storeSubmission(input('c', 'x'.repeat(SPILL_BYTES)), { maxOrd: first.ord + 1 });
    expect(transactions).toHaveBeenCalledTimes(2);
    expect(store.openSubmissions(s).map((row) => [row.id, row.payload.message.kind === 'user' && row.payload.message.body.length])).toEqual(
      [
        ['a', 1],
        ['b', 1],
        ['c', SPILL_BYTES],
      ],
    );
  });

  it('appends a short batch as one statement, and a batch kept in chunks in one transaction', async () => {
    const store = await openStore();
    const s = storedConversationKey('s');
    const transactions = vi.spyOn(store.driver, 'transaction');
    const writes = vi.spyOn(store.driver, 'run');
    const short = signalOfSize(200);
    const long = signalOfSize(SPILL_BYTES + 10);
    expect(store.appendSized(s, short, 0).seq).toBe(1);
    expect([transactions.mock.calls.length, writes.mock.calls.length]).toEqual([0, 1]);
    expect(store.appendSized(s, long, 1)).toEqual({ seq: 2, bytes: SPILL_BYTES + 10 });
    expect(transactions).toHaveBeenCalledTimes(1);
    expect(store.readBatches(s, 0).map((batch) => batch.records)).toEqual([short, long]);
  });

  it('a store created with the rowid ledger keeps it and its rows', () => {
    const db = formatOneDatabase();
    db.exec(`CREATE TABLE flue_submissions (
      ord INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, stream TEXT NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL,
      accepted_at TEXT NOT NULL, status TEXT NOT NULL, attempt_id TEXT, attempt_count INTEGER NOT NULL DEFAULT 0,
      max_attempts INTEGER, timeout_ms INTEGER, started_at INTEGER, abort_requested_at INTEGER,
      continuation INTEGER NOT NULL DEFAULT 0, joined_into TEXT, outcome TEXT, error TEXT, settled_at INTEGER)`);
    db.exec(`CREATE INDEX flue_submissions_open ON flue_submissions (stream, ord) WHERE settled_at IS NULL`);
    db.exec(
      `INSERT INTO flue_submissions (id, stream, kind, payload, accepted_at, status) VALUES ('old', 's', 'dispatch', '{"message":{"kind":"user","body":"old"}}', 'then', 'queued')`,
    );
    const driver = driverOf(db);
    migrate(driver);
    const store = new SqlStore(driver);
    admit(store, 'new');
    expect(String(store.driver.query(`SELECT sql FROM sqlite_master WHERE name = 'flue_submissions'`)[0].sql)).not.toMatch(/WITHOUT ROWID/);
    expect(store.driver.query('SELECT ord FROM flue_submissions ORDER BY ord').map((row) => Number(row.ord))).toEqual([1, 2]);
    expect(store.openSubmissions(storedConversationKey('s')).map((row) => row.id)).toEqual(['old', 'new']);
    expect(store.getSubmission('old')!.payload.message).toEqual({ kind: 'user', body: 'old' });
    // The row an admission answers is the stored one, the order the rowid table gave it included.
    const stored = store.storeSubmission({
      id: 'third',
      conversation: storedConversationKey('s'),
      kind: 'http',
      payload: { message: { kind: 'user', body: 'x'.repeat(300_000) } },
      acceptedAt: 'now',
    });
    expect(stored).toEqual(store.getSubmission('third'));
    expect(stored.ord).toBe(3);
  });
});

describe('the submission kind', () => {
  const insertRow = (db: DatabaseSync, id: string, kind: string) =>
    db.exec(`INSERT INTO flue_submissions (id, ord, stream, kind, payload, accepted_at, status)
      VALUES ('${id}', (SELECT count(*) FROM flue_submissions), 's', '${kind}', '{"message":{"kind":"user","body":"${id}"}}', 'then', 'queued')`);

  it("rows an earlier version stored as 'direct' read as 'http', its dispatches unchanged", () => {
    const db = new DatabaseSync(':memory:');
    migrate(driverOf(db));
    // Earlier versions made the ledger with the store.
    createEveryTable(driverOf(db));
    insertRow(db, 'posted', 'direct');
    insertRow(db, 'sent', 'dispatch');
    const store = new SqlStore(driverOf(db));
    expect(store.getSubmission('posted')).toMatchObject({ kind: 'http', payload: { message: { kind: 'user', body: 'posted' } } });
    expect(store.getSubmission('sent')!.kind).toBe('dispatch');
    expect(store.openSubmissions(storedConversationKey('s')).map((row) => [row.id, row.kind])).toEqual([
      ['posted', 'http'],
      ['sent', 'dispatch'],
    ]);
  });

  it("an HTTP submission is stored as 'direct', as every earlier version wrote it, so a rolled-back runtime reads its rows", () => {
    const db = new DatabaseSync(':memory:');
    migrate(driverOf(db));
    const store = new SqlStore(driverOf(db));
    store.storeSubmission({
      id: 'posted',
      conversation: storedConversationKey('s'),
      kind: 'http',
      payload: { message: { kind: 'user', body: 'x' } },
      acceptedAt: 'now',
    });
    store.storeSubmission({
      id: 'sent',
      conversation: storedConversationKey('s'),
      kind: 'dispatch',
      payload: { message: { kind: 'user', body: 'y' } },
      acceptedAt: 'now',
    });
    expect(db.prepare(`SELECT id, kind FROM flue_submissions ORDER BY ord`).all()).toEqual([
      { id: 'posted', kind: 'direct' },
      { id: 'sent', kind: 'dispatch' },
    ]);
    expect(store.getSubmission('posted')!.kind).toBe('http');
  });
});

describe('the row guard', () => {
  it('counts strings as UTF-8 and refuses statements over the platform row limit, naming the table', async () => {
    expect(() => guardStatement('INSERT INTO t (a) VALUES (?)', ['a'.repeat(MAX_STATEMENT_BYTES)])).not.toThrow();
    expect(() => guardStatement('INSERT INTO t (a) VALUES (?)', ['a'.repeat(MAX_STATEMENT_BYTES + 1)])).toThrow(RowTooLargeError);
    // 700,000 three-byte characters: 2.1 MB although the string is shorter than the limit.
    expect(() => guardStatement('UPDATE flue_state SET value = ?', ['€'.repeat(700_000)])).toThrow(/flue_state/);
    expect(() => guardStatement('INSERT INTO t VALUES (?, ?)', [new Uint8Array(1_000_000), new Uint8Array(1_000_001)])).toThrow(
      /2000001 bytes/,
    );
  });

  it('is on in the node:sqlite driver', async () => {
    const store = await openStore();
    expect(() => store.driver.run('INSERT INTO flue_meta (key, value) VALUES (?, ?)', 'k', 'v'.repeat(MAX_STATEMENT_BYTES + 1))).toThrow(
      /flue_meta.*row limit/,
    );
    expect(store.driver.query(`SELECT * FROM flue_meta WHERE key = 'k'`)).toEqual([]);
  });
});

describe('large strings kept apart', () => {
  const s = storedConversationKey('s');
  const body = 'Grüße "aus" Köln 😀\n'.repeat(Math.ceil((2.5 * SPILL_BYTES) / 24));
  const bodyBytes = utf8(body);
  const chunksOfBody = Math.ceil(bodyBytes / SPILL_BYTES);
  const message = (text = body): ConversationRecord => ({
    type: 'user_message',
    messageId: 'msg_in_sub_1',
    submissionId: 'sub_1',
    deliveryOrigin: 'app',
    body: text,
    ts: 'now',
  });
  const admit = (store: SqlStore, id = 'sub_1', conversation = s, text = body) =>
    store.storeSubmission({ id, conversation, kind: 'dispatch', payload: { message: { kind: 'user', body: text } }, acceptedAt: 'now' });
  const spillKeys = (store: SqlStore) =>
    store.driver
      .query('SELECT key, count(*) AS n FROM flue_spill GROUP BY key ORDER BY key')
      .map((row) => [String(row.key), Number(row.n)]);

  it('a message admitted and then committed is stored once, as raw UTF-8, and a fresh store reads both back', async () => {
    const store = await openStore();
    admit(store);
    const seq = store.appendSized(s, [message()], -1);
    expect(spillKeys(store)).toEqual([[JSON.stringify(['submission', 'sub_1', 'message', 'body']), chunksOfBody]]);
    const stored = store.driver.query(`SELECT data FROM flue_spill ORDER BY idx`).map((row) => row.data as Uint8Array);
    expect(new TextDecoder().decode(Buffer.concat(stored))).toBe(body); // never escaped
    // The batch's size counts the text it names, as the records weigh it.
    expect(seq.bytes).toBeGreaterThan(bodyBytes);
    const fresh = new SqlStore(store.driver);
    expect(fresh.readBatchesSized(s, -1)).toEqual([{ batch: { seq: 0, records: [message()] }, bytes: seq.bytes }]);
    expect(fresh.getSubmission('sub_1')!.payload.message).toEqual({ kind: 'user', body });
    expect(new SqlStore(store.driver).openSubmissions(s)[0]!.payload.message).toEqual({ kind: 'user', body });
    expect(new SqlStore(store.driver).unjoinedDeliveries(s)[0]!.payload.message).toEqual({ kind: 'user', body });
  });

  it('a store woken later commits a message it read from the ledger without writing it again', async () => {
    const first = await openStore();
    admit(first);
    const woken = new SqlStore(first.driver);
    const row = woken.queueHead(s)!;
    woken.append(s, [message((row.payload.message as { body: string }).body)]);
    expect(spillRows(woken)).toBe(chunksOfBody);
    expect(new SqlStore(first.driver).readBatches(s, -1)[0]!.records).toEqual([message()]);
  });

  it('a store that has not seen the text, another conversation, or a rolled-back admission writes its own copy', async () => {
    const store = await openStore();
    admit(store);
    new SqlStore(store.driver).append(s, [message(`${body}`)]);
    expect(spillRows(store)).toBe(2 * chunksOfBody);
    store.append(storedConversationKey('other'), [message()]);
    expect(spillRows(store)).toBe(3 * chunksOfBody);

    const rolledBack = await openStore();
    expect(() =>
      rolledBack.transaction(() => {
        admit(rolledBack, 'sub_gone');
        throw new Error('crash before commit');
      }),
    ).toThrow('crash before commit');
    expect(spillRows(rolledBack)).toBe(0);
    rolledBack.append(s, [message()]);
    expect(spillRows(rolledBack)).toBe(chunksOfBody);
    expect(new SqlStore(rolledBack.driver).readBatches(s, -1)[0]!.records).toEqual([message()]);
  });

  it('remembers at most two large strings, and beyond the newest no more than 32 Mi characters', async () => {
    const store = await openStore();
    const texts = ['a', 'b', 'c'].map((fill) => fill.repeat(2 * SPILL_BYTES));
    texts.forEach((text, i) => admit(store, `sub_${i}`, s, text));
    // Three admitted: the last two are named when committed; the first is forgotten, so it is copied.
    for (const text of [...texts].reverse()) store.append(s, [message(text)]);
    expect(spillRows(store)).toBe(4 * 2);
    const huge = await openStore();
    const large = ['d', 'e'].map((fill) => fill.repeat(17 * SPILL_BYTES));
    large.forEach((text, i) => admit(huge, `sub_${i}`, s, text));
    // Together over 32 Mi characters: only the newest is remembered, so only it is named.
    huge.append(s, [message(large[1])]);
    huge.append(s, [message(large[0])]);
    expect(spillRows(huge)).toBe(3 * 17);
    const bodies = new SqlStore(huge.driver).readBatches(s, -1).map((batch) => (batch.records[0] as { body: string }).body);
    expect(bodies[0] === large[1] && bodies[1] === large[0]).toBe(true);
  });

  it('chunks a record names are not deleted by a repeated admission of the same id, nor by a rolled-back commit', async () => {
    const store = await openStore();
    admit(store);
    store.append(s, [message()]);
    expect(() => admit(store, 'sub_1', s, 'another body '.repeat(SPILL_BYTES / 4))).toThrow();
    expect(() =>
      store.transaction(() => {
        store.append(s, [message()]);
        throw new Error('crash before commit');
      }),
    ).toThrow('crash before commit');
    expect(spillRows(store)).toBe(chunksOfBody);
    const fresh = new SqlStore(store.driver);
    expect(fresh.readBatches(s, -1)).toEqual([{ seq: 0, records: [message()] }]);
    expect(fresh.getSubmission('sub_1')!.payload.message).toEqual({ kind: 'user', body });
  });

  it('a large string output is stored once as its model text, unescaped, and reads back as the same records', async () => {
    const store = await openStore();
    const output = body;
    const outcome = { toolCallId: 'call_1', toolName: 'lookup', isError: false, content: JSON.stringify(output), output, durationMs: 3 };
    const records: ConversationRecord[] = [
      { type: 'tool_results', stepId: 'st', messageId: 'm', submissionId: 'sub_1', outcomes: [outcome], ts: 'now' },
    ];
    const { bytes } = store.appendSized(s, records, -1);
    // Both texts count, as the records weigh them in memory; the rest of the batch is small.
    expect(bytes - utf8(outcome.content) - utf8(output)).toBeGreaterThan(0);
    expect(bytes - utf8(outcome.content) - utf8(output)).toBeLessThan(300);
    expect(spillRows(store)).toBe(Math.ceil(utf8(outcome.content) / SPILL_BYTES));
    const [read] = new SqlStore(store.driver).readBatchesSized(s, -1);
    expect(JSON.stringify(read!.batch.records)).toBe(JSON.stringify(records)); // same keys, same order
    expect(read!.bytes).toBe(bytes);
  });

  it('keeps a string with a lone surrogate, and a value whose rest is too large, in the whole-value layout', async () => {
    const store = await openStore();
    const broken = `${'a'.repeat(SPILL_BYTES)}\ud800`;
    store.append(s, [message(broken)]);
    expect(String(store.driver.query('SELECT records FROM flue_log WHERE pos = (1 << 32) + 0')[0]!.records)).toMatch(/^~spill:\d+:/);
    expect((new SqlStore(store.driver).readBatches(s, -1)[0]!.records[0] as { body: string }).body).toBe(broken);
    const crowded: ConversationRecord = { ...message(), attributes: asciiAttributes(100_000) } as ConversationRecord;
    store.append(s, [crowded]);
    expect(String(store.driver.query('SELECT records FROM flue_log WHERE pos = (1 << 32) + 1')[0]!.records)).toMatch(/^~spill:\d+:/);
    expect(new SqlStore(store.driver).readBatches(s, 0)[0]!.records).toEqual([crowded]);
  });

  it('rows written in the whole-value layout, as versions before wrote them, read back the same', async () => {
    const store = await openStore();
    // Those versions made the ledger with the store.
    createEveryTable(store.driver);
    // What the version before wrote: the JSON of the records (a packed outcome without its content), spilled whole.
    const output = body;
    const legacyRecords = [
      message(),
      {
        type: 'tool_results',
        stepId: 'st',
        messageId: 'm',
        submissionId: 'sub_1',
        outcomes: [{ toolCallId: 'c', toolName: 't', isError: false, output, durationMs: 1 }],
        ts: 'now',
      },
    ];
    const legacy = (key: string, text: string): string => {
      const bytes = encoder.encode(text);
      const chunks = Math.ceil(bytes.byteLength / SPILL_BYTES);
      for (let idx = 0; idx < chunks; idx++) {
        lazyWrite(
          store.driver,
          'INSERT INTO flue_spill (key, idx, data) VALUES (?, ?, ?)',
          key,
          idx,
          bytes.subarray(idx * SPILL_BYTES, (idx + 1) * SPILL_BYTES),
        );
      }
      return `~spill:${chunks}:${key}`;
    };
    store.driver.run(
      'INSERT INTO flue_log (pos, records) VALUES ((1 << 32) + 0, ?)',
      legacy('["batch","s",0]', JSON.stringify(legacyRecords)),
    );
    store.driver.run(
      `INSERT INTO flue_submissions (id, ord, stream, kind, payload, accepted_at, status) VALUES ('sub_1', 1, 's', 'dispatch', ?, 'now', 'queued')`,
      legacy('["submission","sub_1"]', JSON.stringify({ message: { kind: 'user', body } })),
    );
    const fresh = new SqlStore(store.driver);
    expect(fresh.readBatches(s, -1)[0]!.records).toEqual([
      message(),
      {
        ...legacyRecords[1],
        outcomes: [{ toolCallId: 'c', toolName: 't', isError: false, content: JSON.stringify(output), output, durationMs: 1 }],
      },
    ]);
    expect(fresh.getSubmission('sub_1')!.payload.message).toEqual({ kind: 'user', body });
  });

  it('a damaged parts column is a typed storage error', async () => {
    const store = await openStore();
    admit(store);
    store.append(s, [message()]);
    store.driver.run(`UPDATE flue_log SET records = substr(records, 1, 40)`);
    expect(() => new SqlStore(store.driver).readBatches(s, -1)).toThrow(ConversationRecordInvariantError);
    store.driver.run(`UPDATE flue_spill SET data = substr(data, 1, 10) WHERE idx = ?`, chunksOfBody - 1);
    expect(() => new SqlStore(store.driver).getSubmission('sub_1')).toThrow(/holds \d+ bytes, expected/);
  });
});
