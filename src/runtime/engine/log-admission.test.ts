import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { sqlite } from '../../node/sqlite.ts';
import { scriptedProvider } from '../../testing/scripted-provider.ts';
import { type ScriptedModelServer, startScriptedModelServer } from '../../testing/scripted-model-server.ts';
import { useModel } from '../index.ts';
import { parseDeliveredMessage } from './delivered-message.ts';
import { ConversationEngine } from './engine.ts';
import { inputRecord } from './conversation-writer.ts';
import { admittedRow, openAdmission, withoutAdmission } from './log-admission.ts';
import type { AdmissionRecord } from '../store/records.ts';
import { AgentRegistry } from '../authoring/identity.ts';
import { registerProviders } from '../model/providers.ts';
import { SqlStore } from '../store/sql-store.ts';
import { conversationKey } from '../store/conversation-key.ts';
import { CHECKPOINT_EVERY_BATCHES } from './conversation-checkpoint.ts';
import { FreezableDriver } from './recovery-journal.fixtures.ts';
import { RunStopped } from './run-signals.ts';
import { installCrashProbe } from '../store/crash-probe.ts';
import { lazyRows } from '../store/schema.ts';

const key = conversationKey('Echo', 'a1');
const admission = { acceptedAt: '2026-01-01T00:00:00.000Z', attemptId: 'attempt_1', startedAt: 5, maxAttempts: 3, timeoutMs: 60_000 };

describe('the row of a submission admitted in the log', () => {
  it('is read back from its input record: the message, the transport and the claimed attempt', () => {
    const cases = [
      { kind: 'dispatch' as const, payload: { message: { kind: 'user' as const, body: 'hi' } } },
      { kind: 'http' as const, payload: { message: { kind: 'user' as const, body: 'over http' } } },
      { kind: 'dispatch' as const, payload: { message: { kind: 'user' as const, body: 'mine' }, fromAgent: true as const } },
      {
        kind: 'dispatch' as const,
        payload: { message: { kind: 'signal' as const, type: 'deploy', body: 'v2', attributes: { env: 'prod' }, tagName: 'event' } },
      },
    ];
    for (const { kind, payload } of cases) {
      const record = { ...inputRecord({ id: 'sub_1', kind, payload }, undefined, admission.acceptedAt), admission };
      expect(admittedRow(record as AdmissionRecord, key)).toMatchObject({
        id: 'sub_1',
        kind,
        payload,
        acceptedAt: admission.acceptedAt,
        status: 'running',
        attemptId: 'attempt_1',
        attemptCount: 1,
        startedAt: 5,
        maxAttempts: 3,
        timeoutMs: 60_000,
        inLog: true,
      });
    }
  });

  it('is open only while the tail holds its admission and no settlement; a copy of the log holds a plain input record', () => {
    const record = {
      ...inputRecord({ id: 'sub_1', kind: 'dispatch', payload: { message: { kind: 'user', body: 'hi' } } }),
      admission,
    };
    const settled = { type: 'submission_settled' as const, submissionId: 'sub_1', outcome: 'completed' as const, ts: admission.acceptedAt };
    expect(openAdmission([record])?.submissionId).toBe('sub_1');
    expect(openAdmission([settled])).toBeUndefined();
    expect(openAdmission(undefined)).toBeUndefined();
    expect(openAdmission([withoutAdmission(record)])).toBeUndefined();
    expect(withoutAdmission(record)).toEqual(
      inputRecord({ id: 'sub_1', kind: 'dispatch', payload: { message: { kind: 'user', body: 'hi' } } }, undefined, record.ts),
    );
  });
});

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModelServer();
  registerProviders([scriptedProvider({ baseUrl: server.url, id: 'log-admission', models: ['model'] })]);
});
afterAll(async () => server.close());

function Echo() {
  useModel('log-admission/model');
  return 'Answer briefly.';
}

let driver: FreezableDriver;
let store: SqlStore;
let engine: ConversationEngine;

/** An engine over the store as a Durable Object makes it (one conversation's host): a fresh one is a woken object. */
function objectEngine(): ConversationEngine {
  store = new SqlStore(driver, { admitsInLog: true });
  const registry = new AgentRegistry();
  registry.register(Echo);
  return new ConversationEngine({ store, registry, env: {}, wake: () => {} });
}

beforeEach(async () => {
  const adapter = sqlite();
  await adapter.migrate();
  driver = new FreezableDriver(await adapter.connect());
  engine = objectEngine();
  server.reset();
});

const send = async (body: string) => (await engine.admit('Echo', { id: 'a1', message: parseDeliveredMessage(body) }, 'dispatch')).receipt;
// The ledger is made by its first row: none, no table.
const ledgerRows = () => lazyRows(driver, 'SELECT id, status, attempt_count, settled_at FROM flue_submissions ORDER BY ord');
const batches = () => store.readBatches(key, -1).map((batch) => batch.records.map((record) => record.type));

describe('a submission admitted in the log', () => {
  it('is one batch at admission and its settlement record at the end: no ledger row, and its receipt answers', async () => {
    server.script({ text: 'Hello.' });
    const receipt = await send('hi');
    expect(batches()).toEqual([['conversation_created'], ['user_message']]);
    expect(ledgerRows()).toEqual([]);
    expect(driver.query(`SELECT name FROM sqlite_master WHERE name LIKE 'flue_submissions%'`)).toEqual([]);
    expect(engine.view.keysWithOpenWork()).toEqual([key]);
    const transactions = vi.spyOn(store, 'transaction');
    await engine.runQueue(key);
    expect(ledgerRows()).toEqual([]);
    expect(batches().at(-1)).toContain('submission_settled');
    // Its settlement marks no row: the closing batch is written alone, with no transaction around it.
    expect(transactions).not.toHaveBeenCalled();
    transactions.mockRestore();
    expect(engine.view.keysWithOpenWork()).toEqual([]);
    expect((await engine.read('Echo', 'a1', receipt.submissionId)).text).toBe('Hello.');
    // A woken object (a fresh engine) finds it settled and answers it from the log's fold.
    engine = objectEngine();
    expect(engine.view.keysWithOpenWork()).toEqual([]);
    expect((await engine.read('Echo', 'a1', receipt.submissionId)).text).toBe('Hello.');
    expect(engine.usage('Echo', 'a1')?.submissions.map((entry) => entry.submissionId)).toEqual([receipt.submissionId]);
  });

  it('gets its row when another delivery is admitted behind it, so the queue keeps admission order', async () => {
    server.script({ text: 'Both.' });
    const first = await send('one');
    const second = await send('two');
    expect(ledgerRows()).toEqual([
      { id: first.submissionId, status: 'running', attempt_count: 1, settled_at: null },
      { id: second.submissionId, status: 'queued', attempt_count: 0, settled_at: null },
    ]);
    await engine.runQueue(key);
    // The first runs the attempt claimed with its admission: its row spent none more.
    expect(ledgerRows().map((row) => [row.id, row.status, row.attempt_count])).toEqual([
      [first.submissionId, 'settled', 1],
      [second.submissionId, 'settled', 0],
    ]);
    // The second joined the first's response at its first turn boundary, as any queued delivery does.
    expect((await engine.read('Echo', 'a1', first.submissionId)).text).toBe('Both.');
    expect((await engine.read('Echo', 'a1', second.submissionId)).text).toBe('Both.');
  });

  it('left open by a crash is found by the woken object, which claims a second attempt with its row', async () => {
    server.script({ text: 'After the crash.' });
    const receipt = await send('hi');
    // The process dies before running it: a fresh engine over the same database is the woken object.
    engine = objectEngine();
    expect(engine.view.keysWithOpenWork()).toEqual([key]);
    expect(engine.view.queueHead(key)).toMatchObject({ id: receipt.submissionId, attemptCount: 1, inLog: true });
    await engine.runQueue(key);
    expect(ledgerRows()).toEqual([{ id: receipt.submissionId, status: 'settled', attempt_count: 2, settled_at: expect.any(Number) }]);
    expect((await engine.read('Echo', 'a1', receipt.submissionId)).text).toBe('After the crash.');
    expect(batches().filter((types) => types.includes('user_message'))).toHaveLength(1);
  });

  it('is stamped by an abort through the row the abort makes for it', async () => {
    const receipt = await send('hi');
    expect(engine.abort('Echo', 'a1')).toBe(true);
    expect(ledgerRows()).toEqual([{ id: receipt.submissionId, status: 'running', attempt_count: 1, settled_at: null }]);
    await engine.runQueue(key);
    expect(engine.view.settled(engine.view.live('Echo', 'a1'), receipt.submissionId)?.settlement.outcome).toBe('aborted');
  });

  it('keeps its settlement in the page of the next checkpoint: receipts and the usage ledger of a woken object read it there', async () => {
    const ids: string[] = [];
    for (const body of ['one', 'two', 'three']) {
      server.script({ text: `Re ${body}.` });
      ids.push((await send(body)).submissionId);
      await engine.runQueue(key);
    }
    // The next batch carries a checkpoint, and the page of the settlements before it.
    engine.view.live('Echo', 'a1').sinceCheckpoint.batches = CHECKPOINT_EVERY_BATCHES;
    server.script({ text: 'Re four.' });
    ids.push((await send('four')).submissionId);
    const pages = driver.query('SELECT seq, entries FROM flue_settled');
    expect(pages).toHaveLength(1);
    expect(JSON.parse(String(pages[0]!.entries)).map((entry: { id: string }) => entry.id)).toEqual(ids.slice(0, 3));
    await engine.runQueue(key);
    expect(ledgerRows()).toEqual([]);
    engine = objectEngine();
    const usage = engine.usage('Echo', 'a1')!;
    expect(usage.submissions.map((entry) => entry.submissionId)).toEqual(ids);
    expect(usage.submissions.every((entry) => entry.modelCalls === 1)).toBe(true);
    for (const [index, id] of ids.entries()) {
      expect((await engine.read('Echo', 'a1', id)).text).toBe(`Re ${['one', 'two', 'three', 'four'][index]}.`);
    }
  });

  it('pages a checkpoint too large for one row in parts, and a fold rebuilt from the whole log pages nothing twice', async () => {
    const entries = Array.from({ length: 3000 }, (_, index) => ({
      id: `sub_${index}`,
      settlement: JSON.stringify({ seq: index, pad: 'x'.repeat(100) }),
    }));
    store.writeSettledPage(key, 5000, entries);
    const parts = driver.query('SELECT part, length(entries) AS chars FROM flue_settled ORDER BY part');
    expect(parts.length).toBeGreaterThan(1);
    expect(parts.every((part) => Number(part.chars) <= 256 * 1024)).toBe(true);
    expect(store.settledPageEntry(key, 'sub_2999')).toBe(entries[2999]!.settlement);
    expect(store.settledPageEntries(key)).toEqual(entries);
    expect(store.lastSettledPage(key)).toBe(5000);

    driver.run('DELETE FROM flue_settled');
    for (const body of ['one', 'two']) {
      server.script({ text: `Re ${body}.` });
      await send(body);
      await engine.runQueue(key);
    }
    engine.view.live('Echo', 'a1').sinceCheckpoint.batches = CHECKPOINT_EVERY_BATCHES;
    server.script({ text: 'Re three.' });
    await send('three');
    await engine.runQueue(key);
    // The checkpoint is distrusted (another version's): the woken fold replays the whole log.
    driver.run('UPDATE flue_checkpoints SET version = version + 100');
    engine = objectEngine();
    engine.view.live('Echo', 'a1').sinceCheckpoint.batches = CHECKPOINT_EVERY_BATCHES;
    server.script({ text: 'Re four.' });
    await send('four');
    const paged = driver.query('SELECT seq, entries FROM flue_settled ORDER BY seq').map((row) => JSON.parse(String(row.entries)).length);
    expect(paged).toEqual([2, 1]);
    await engine.runQueue(key);
    expect(engine.usage('Echo', 'a1')!.submissions).toHaveLength(4);
  });

  it('is decided without a query per admission: a burst behind it reads the open queue once', async () => {
    await send('first');
    const reads = [
      vi.spyOn(store, 'openSubmissions'),
      vi.spyOn(store, 'openSubmissionIds'),
      vi.spyOn(store, 'newestAdmissionOrSettlement'),
    ];
    for (let index = 0; index < 100; index++) await send(`burst ${index}`);
    for (const read of reads) expect(read).not.toHaveBeenCalled();
    expect(ledgerRows()).toHaveLength(101);
  });

  it('is not made for a keyed delivery, which needs the ledger to find its key again', async () => {
    server.script({ text: 'Keyed.' });
    await engine.admit('Echo', { id: 'a1', message: parseDeliveredMessage('hi'), idempotencyKey: 'k1' }, 'dispatch');
    expect(ledgerRows()).toHaveLength(1);
    await engine.runQueue(key);
  });
});

describe('a submission admitted in the log, when the object dies', () => {
  /** Kills the engine at `point`, as the object dying there: nothing more is stored. */
  function dieAt(point: 'admission' | 'model' | 'settlement'): () => void {
    const previous = installCrashProbe((event) => {
      if (event.point !== point) return;
      driver.frozen = true;
      void engine.stop(0);
      throw new RunStopped();
    });
    return () => {
      installCrashProbe(previous);
      driver.frozen = false;
    };
  }

  /** The object woken after the death: it finds the submission open, runs it and settles it once. */
  async function wakesAndSettles(id: string, attempts: number): Promise<void> {
    engine = objectEngine();
    expect(engine.view.keysWithOpenWork()).toEqual([key]);
    server.script({ text: 'Recovered.' });
    await engine.runQueue(key);
    expect((await engine.read('Echo', 'a1', id)).text).toBe('Recovered.');
    const records = store.readBatches(key, -1).flatMap((batch) => batch.records);
    expect(records.filter((record) => record.type === 'submission_settled').map((record) => record.submissionId)).toEqual([id]);
    expect(records.filter((record) => record.type === 'user_message')).toHaveLength(1);
    expect(ledgerRows()).toEqual([{ id, status: 'settled', attempt_count: attempts, settled_at: expect.any(Number) }]);
    expect(engine.view.keysWithOpenWork()).toEqual([]);
  }

  it('right after its admission committed: the admission stands, and the woken object runs it', async () => {
    const restore = dieAt('admission');
    const sent = await send('hi').catch((error: unknown) => error);
    restore();
    expect(sent).toBeInstanceOf(RunStopped);
    const [admitted] = store
      .readBatches(key, -1)
      .flatMap((batch) => batch.records)
      .filter((record) => record.type === 'user_message');
    await wakesAndSettles((admitted as { submissionId: string }).submissionId, 2);
  });

  it('mid-response: the woken object claims a second attempt, with the row the claim makes', async () => {
    server.script({ text: ['Half', ' an answer'] });
    const receipt = await send('hi');
    const restore = dieAt('model');
    await engine.runQueue(key).catch(() => {});
    restore();
    expect(ledgerRows()).toEqual([]);
    await wakesAndSettles(receipt.submissionId, 2);
  });

  it('at its settlement: nothing of the closing batch is stored, and the woken object answers it again', async () => {
    server.script({ text: 'Lost.' });
    const receipt = await send('hi');
    const restore = dieAt('settlement');
    await engine.runQueue(key).catch(() => {});
    restore();
    expect(
      store
        .readBatches(key, -1)
        .flatMap((batch) => batch.records)
        .some((record) => record.type === 'submission_settled'),
    ).toBe(false);
    await wakesAndSettles(receipt.submissionId, 2);
  });

  it('between the row made for it and the admission that needed it: the row stands, and the queue runs it', async () => {
    const first = await send('one');
    const insert = store.storeSubmission.bind(store);
    let calls = 0;
    store.storeSubmission = (...args) => {
      if (++calls === 2) throw new RunStopped();
      return insert(...args);
    };
    await expect(send('two')).rejects.toBeInstanceOf(RunStopped);
    expect(ledgerRows()).toEqual([{ id: first.submissionId, status: 'running', attempt_count: 1, settled_at: null }]);
    await wakesAndSettles(first.submissionId, 2);
  });
});
