import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import * as v from 'valibot';
import { sqlite } from '../../node/sqlite.ts';
import { scriptedProvider } from '../../testing/scripted-provider.ts';
import { type ScriptedModelServer, startScriptedModelServer } from '../../testing/scripted-model-server.ts';
import { useModel, useTool } from '../index.ts';
import { parseDeliveredMessage } from './delivered-message.ts';
import { ConversationEngine } from './engine.ts';
import { IDLE_FOLDS_KEPT } from './conversation-view.ts';
import {
  AgentInstanceExistsError,
  AgentInstanceNotFoundError,
  AgentRunError,
  RuntimeUnavailableError,
  SubmissionConflictError,
} from '../common/errors.ts';
import { AgentRegistry } from '../authoring/identity.ts';
import { registerProviders } from '../model/providers.ts';
import { SqlStore } from '../store/sql-store.ts';
import { type ConversationKey, conversationKey, storedConversationKey } from '../store/conversation-key.ts';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModelServer();
  registerProviders([scriptedProvider({ baseUrl: server.url, id: 'engine-unit', models: ['model'] })]);
});
afterAll(async () => server.close());

function Echo() {
  useModel('engine-unit/model');
  useTool({ name: 'ping', description: 'Ping.', input: v.object({}), run: () => 'pong' });
  return 'Answer briefly.';
}

let store: SqlStore;
let engine: ConversationEngine;
let wakes: string[];

beforeEach(async () => {
  const adapter = sqlite();
  await adapter.migrate();
  store = new SqlStore(await adapter.connect());
  const registry = new AgentRegistry();
  registry.register(Echo);
  wakes = [];
  // The test drives the queue itself, as a host does when woken.
  engine = new ConversationEngine({ store, registry, env: {}, wake: (stream) => wakes.push(stream) });
});

const message = (body: string) => parseDeliveredMessage(body);

/**
 * The log's own word on settlement: `submission_settled` records per submission, read from the raw
 * batches (the fold keeps one settlement per id, so it would hide a second record).
 */
function settledRecords(stream: ConversationKey): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const batch of store.readBatches(stream, -1)) {
    for (const record of batch.records) {
      if (record.type === 'submission_settled') counts[record.submissionId] = (counts[record.submissionId] ?? 0) + 1;
    }
  }
  return counts;
}

/** The ledger's word: each row's status and outcome. */
const ledger = (...ids: string[]) => ids.map((id) => [id, store.getSubmission(id)?.status, store.getSubmission(id)?.outcome]);

describe('admission', () => {
  it('creates the conversation with the first submission, wakes its queue and answers a receipt', async () => {
    const { receipt, head } = await engine.admit('Echo', { id: 'a1', message: message('hi') }, 'dispatch');
    expect(receipt.submissionId).toMatch(/^sub_/);
    expect(receipt.uid).toMatch(/^inst_/);
    expect(head).toBe(0);
    expect(wakes).toEqual(['agents/Echo/a1']);
    expect(engine.getInstance('Echo', 'a1')).toEqual({ id: 'a1', uid: receipt.uid });
    expect(engine.getInstance('Echo', 'other')).toBeNull();
    expect(engine.view.keysWithOpenWork()).toEqual(['agents/Echo/a1']);
  });

  it('honours the uid condition: null creates only, a string continues only that incarnation', async () => {
    const { receipt } = await engine.admit('Echo', { id: 'a1', message: message('hi'), uid: null }, 'dispatch');
    await expect(engine.admit('Echo', { id: 'a1', message: message('again'), uid: null }, 'dispatch')).rejects.toBeInstanceOf(
      AgentInstanceExistsError,
    );
    await expect(engine.admit('Echo', { id: 'a1', message: message('x'), uid: 'inst_other' }, 'dispatch')).rejects.toBeInstanceOf(
      AgentInstanceNotFoundError,
    );
    await expect(engine.admit('Echo', { id: 'a2', message: message('x'), uid: receipt.uid }, 'dispatch')).rejects.toBeInstanceOf(
      AgentInstanceNotFoundError,
    );
    await engine.admit('Echo', { id: 'a1', message: message('continue'), uid: receipt.uid }, 'dispatch');
    expect(store.openSubmissions(storedConversationKey('agents/Echo/a1'))).toHaveLength(2);
  });

  it('converges a keyed replay on the original and refuses a different payload under the same key', async () => {
    const first = await engine.admit('Echo', { id: 'a1', message: message('hi'), idempotencyKey: 'k1' }, 'dispatch');
    const replay = await engine.admit('Echo', { id: 'a1', message: message('hi'), idempotencyKey: 'k1' }, 'dispatch');
    expect(replay.receipt).toMatchObject({ submissionId: first.receipt.submissionId, deduplicated: true });
    expect(replay.head).toBe(-1);
    await expect(engine.admit('Echo', { id: 'a1', message: message('changed'), idempotencyKey: 'k1' }, 'dispatch')).rejects.toBeInstanceOf(
      SubmissionConflictError,
    );
    expect(store.openSubmissions(storedConversationKey('agents/Echo/a1'))).toHaveLength(1);
  });
});

describe('the queue', () => {
  it('runs the head submission through a tool call to a completed settlement', async () => {
    server.script({ toolCalls: [{ name: 'ping', arguments: {} }] }, { text: 'Done.' });
    const { receipt } = await engine.admit('Echo', { id: 'a1', message: message('ping please') }, 'dispatch');
    await engine.runQueue(storedConversationKey('agents/Echo/a1'));
    expect(engine.view.openSubmissions(storedConversationKey('agents/Echo/a1'))).toEqual([]);
    const reply = await engine.read('Echo', 'a1', receipt.submissionId);
    expect(reply).toMatchObject({ text: 'Done.', submissionId: receipt.submissionId });
    expect(store.getSubmission(receipt.submissionId)).toMatchObject({ outcome: 'completed', attemptCount: 1 });
    expect(settledRecords(conversationKey('Echo', 'a1'))).toEqual({ [receipt.submissionId]: 1 });
    const history = engine.history('Echo', 'a1')!;
    expect(history.settlements.map((settlement) => settlement.outcome)).toEqual(['completed']);
  });

  it('claims the first attempt of a delivery to an idle conversation with its admission, and writes no claim to run it', async () => {
    const key = storedConversationKey('agents/Echo/a1');
    server.script({ text: 'Both.' });
    const first = await engine.admit('Echo', { id: 'a1', message: message('one') }, 'dispatch');
    const behind = await engine.admit('Echo', { id: 'a1', message: message('two') }, 'dispatch');
    // Only the delivery with nothing ahead of it is claimed as it is admitted.
    expect(store.getSubmission(first.receipt.submissionId)).toMatchObject({ status: 'running', attemptCount: 1, maxAttempts: 10 });
    expect(store.getSubmission(behind.receipt.submissionId)).toMatchObject({ status: 'queued', attemptCount: 0 });
    const statements: string[] = [];
    const run = store.driver.run.bind(store.driver);
    store.driver.run = (sql, ...params) => {
      statements.push(sql.replace(/\s+/g, ' ').trim());
      return run(sql, ...params);
    };
    await engine.runQueue(key);
    // The head ran under its admission's claim: no statement claimed an attempt.
    expect(statements.some((sql) => sql.startsWith("UPDATE flue_submissions SET status = 'running'"))).toBe(false);
    // The head and the delivery it joined settle together, in one statement.
    expect(statements.filter((sql) => sql.includes("UPDATE flue_submissions SET status = 'settled'"))).toHaveLength(1);
    expect(store.getSubmission(first.receipt.submissionId)).toMatchObject({ outcome: 'completed', attemptCount: 1 });
    expect(store.getSubmission(behind.receipt.submissionId)).toMatchObject({
      outcome: 'completed',
      joinedInto: first.receipt.submissionId,
    });
    expect(await engine.read('Echo', 'a1', first.receipt.submissionId)).toMatchObject({ text: 'Both.' });
  });

  it('a claim made at admission counts as an attempt when another process runs it (a crash between admission and the wake)', async () => {
    const key = storedConversationKey('agents/Echo/a1');
    server.script({ text: 'Ran once.' });
    const requestsBefore = server.requests.length;
    const { receipt } = await engine.admit('Echo', { id: 'a1', message: message('hi') }, 'dispatch');
    const admitted = store.getSubmission(receipt.submissionId)!;
    const registry = new AgentRegistry();
    registry.register(Echo);
    const restarted = new ConversationEngine({ store, registry, env: {}, wake: () => {} });
    await restarted.runQueue(key);
    const settled = store.getSubmission(receipt.submissionId)!;
    expect(settled).toMatchObject({ outcome: 'completed', attemptCount: 2 });
    expect(settled.attemptId).not.toBe(admitted.attemptId);
    expect(server.requests).toHaveLength(requestsBefore + 1);
    expect(await restarted.read('Echo', 'a1', receipt.submissionId)).toMatchObject({ text: 'Ran once.' });
  });

  it('joins deliveries queued behind the head into its response, each settled with the leader', async () => {
    server.script({ text: 'Both answered.' });
    const requests = server.requests.length;
    const one = await engine.admit('Echo', { id: 'a1', message: message('one') }, 'dispatch');
    const two = await engine.admit('Echo', { id: 'a1', message: message('two') }, 'dispatch');
    expect(await engine.runNext(storedConversationKey('agents/Echo/a1'))).toBe(true);
    expect(server.requests.length).toBe(requests + 1);
    expect((await engine.read('Echo', 'a1', two.receipt.submissionId)).text).toBe('Both answered.');
    const settlements = engine.history('Echo', 'a1')!.settlements;
    expect(settlements.map((s) => [s.submissionId, s.answeredBySubmissionId])).toEqual([
      [one.receipt.submissionId, one.receipt.submissionId],
      [two.receipt.submissionId, one.receipt.submissionId],
    ]);
    expect(await engine.runNext(storedConversationKey('agents/Echo/a1'))).toBe(false);
    // Exactly one settlement record each, and the ledger settles the joined row with its leader.
    expect(settledRecords(conversationKey('Echo', 'a1'))).toEqual({ [one.receipt.submissionId]: 1, [two.receipt.submissionId]: 1 });
    expect(ledger(one.receipt.submissionId, two.receipt.submissionId)).toEqual([
      [one.receipt.submissionId, 'settled', 'completed'],
      [two.receipt.submissionId, 'settled', 'completed'],
    ]);
    expect(engine.view.openSubmissions(storedConversationKey('agents/Echo/a1'))).toEqual([]);
  });

  it('a failed leader settles its joined deliveries failed too, each once, in the log and the ledger', async () => {
    // The first turn joins nothing (the second delivery arrives while the tool runs); the next
    // turn boundary joins it, then the model call fails.
    let second: Promise<{ receipt: { submissionId: string } }> | undefined;
    function Joiner() {
      useModel('engine-unit/model');
      useTool({
        name: 'ping',
        description: 'Ping.',
        input: v.object({}),
        run: async () => {
          second ??= engine.admit('Joiner', { id: 'j1', message: message('two') }, 'dispatch');
          await second;
          return 'pong';
        },
      });
      return 'Answer briefly.';
    }
    const registry = new AgentRegistry();
    registry.register(Joiner);
    engine = new ConversationEngine({ store, registry, env: {}, wake: () => undefined });
    server.script({ toolCalls: [{ name: 'ping', arguments: {} }] }, { status: 400, errorBody: 'bad request' });
    const one = await engine.admit('Joiner', { id: 'j1', message: message('one') }, 'dispatch');
    expect(await engine.runNext(storedConversationKey('agents/Joiner/j1'))).toBe(true);
    const two = (await second!).receipt.submissionId;
    expect(store.getSubmission(two)?.joinedInto).toBe(one.receipt.submissionId);
    expect(settledRecords(conversationKey('Joiner', 'j1'))).toEqual({ [one.receipt.submissionId]: 1, [two]: 1 });
    expect(ledger(one.receipt.submissionId, two)).toEqual([
      [one.receipt.submissionId, 'settled', 'failed'],
      [two, 'settled', 'failed'],
    ]);
    expect(engine.view.openSubmissions(storedConversationKey('agents/Joiner/j1'))).toEqual([]);
  });

  it('settles an aborted submission as aborted, without calling the model', async () => {
    const { receipt } = await engine.admit('Echo', { id: 'a1', message: message('hi') }, 'dispatch');
    const requests = server.requests.length;
    expect(engine.abort('Echo', 'a1')).toBe(true);
    await engine.runQueue(storedConversationKey('agents/Echo/a1'));
    await expect(engine.read('Echo', 'a1', receipt.submissionId)).rejects.toBeInstanceOf(AgentRunError);
    expect(store.getSubmission(receipt.submissionId)?.outcome).toBe('aborted');
    expect(settledRecords(conversationKey('Echo', 'a1'))).toEqual({ [receipt.submissionId]: 1 });
    expect(server.requests.length).toBe(requests);
    expect(engine.abort('Echo', 'a1')).toBe(false);
    // The attempt claimed with the admission is not remembered once the submission settled unrun.
    expect((engine as unknown as { admittedClaims: Set<string> }).admittedClaims.size).toBe(0);
  });

  it('fails a submission whose model call fails', async () => {
    server.script({ status: 400, errorBody: 'bad request' });
    const { receipt } = await engine.admit('Echo', { id: 'a1', message: message('hi') }, 'dispatch');
    await engine.runQueue(storedConversationKey('agents/Echo/a1'));
    const error = await engine.read('Echo', 'a1', receipt.submissionId).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AgentRunError);
    expect((error as AgentRunError).outcome).toBe('failed');
    expect(store.getSubmission(receipt.submissionId)).toMatchObject({ status: 'settled', outcome: 'failed' });
    expect(settledRecords(conversationKey('Echo', 'a1'))).toEqual({ [receipt.submissionId]: 1 });
    expect(engine.view.openSubmissions(storedConversationKey('agents/Echo/a1'))).toEqual([]);
  });
});

describe('remote polls', () => {
  it('a poll that sees no settlement answers empty after its own bound; polls parked together end at theirs', async () => {
    const { receipt } = await engine.admit('Echo', { id: 'a1', message: message('hi') }, 'dispatch');
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    try {
      const ended: string[] = [];
      const poll = (waitMs: number, name: string) =>
        engine.poll('Echo', 'a1', receipt.submissionId, { afterSeq: 0, waitMs, batches: false }).then((answer) => {
          ended.push(name);
          return answer;
        });
      const [short, long] = [poll(20, 'short'), poll(60, 'long')];
      await vi.advanceTimersByTimeAsync(20);
      expect(ended).toEqual(['short']);
      expect(await short).toEqual({ batches: [] });
      await vi.advanceTimersByTimeAsync(40);
      expect(await long).toEqual({ batches: [] });
    } finally {
      vi.useRealTimers();
    }
  });

  it('a parked poll answers the settlement as soon as it is written, long before its bound', async () => {
    server.script({ text: 'Done.' });
    const { receipt } = await engine.admit('Echo', { id: 'a1', message: message('hi') }, 'dispatch');
    const parked = engine.poll('Echo', 'a1', receipt.submissionId, { afterSeq: 0, waitMs: 60_000, batches: false });
    await engine.runQueue(storedConversationKey('agents/Echo/a1'));
    expect(await parked).toMatchObject({ settled: { outcome: 'completed', reply: { text: 'Done.' } } });
  });
});

describe('a long-running process', () => {
  /** Conversations of `Echo` born in the store and looked at once: their folds are kept, and idle. */
  function lookAtMany(count: number): void {
    for (let i = 0; i < count; i++) {
      const key = conversationKey('Echo', `other${i}`);
      store.createConversation({ key, agent: 'Echo', instanceId: `other${i}`, incarnation: `inc_${i}` });
      store.append(key, [{ type: 'conversation_created', conversationId: `conv_${i}`, uid: `inst_${i}`, ts: new Date().toISOString() }]);
      engine.getInstance('Echo', `other${i}`);
    }
  }

  it('keeps a bounded number of idle folds, and a dropped conversation goes on from its history', async () => {
    const key = storedConversationKey('agents/Echo/first');
    server.script({ text: 'One.' }, { text: 'Two.' });
    await engine.admit('Echo', { id: 'first', message: message('turn one') }, 'dispatch');
    await engine.runQueue(key);
    lookAtMany(IDLE_FOLDS_KEPT * 3);
    expect([...engine.view.conversations()].length).toBeLessThanOrEqual(IDLE_FOLDS_KEPT);
    expect([...engine.view.conversations()].map((live) => live.key)).not.toContain(key);
    const { receipt } = await engine.admit('Echo', { id: 'first', message: message('turn two') }, 'dispatch');
    await engine.runQueue(key);
    expect(await engine.read('Echo', 'first', receipt.submissionId)).toMatchObject({ text: 'Two.' });
    expect(server.requests.at(-1)!.messages.map((entry) => entry.content)).toEqual(['turn one', 'One.', 'turn two']);
    expect(engine.history('Echo', 'first')!.settlements.map((settlement) => settlement.outcome)).toEqual(['completed', 'completed']);
  });

  it('a watcher parked on an idle conversation keeps its fold, and sees the next turn while other conversations come and go', async () => {
    const key = storedConversationKey('agents/Echo/watched');
    server.script({ text: 'One.' }, { text: 'Two.' });
    await engine.admit('Echo', { id: 'watched', message: message('turn one') }, 'dispatch');
    await engine.runQueue(key);
    const head = engine.streamHead('Echo', 'watched')!.head;
    const parked = engine.updates('Echo', 'watched', head, { waitMs: 10_000, maxBatches: 100 });
    lookAtMany(IDLE_FOLDS_KEPT * 3);
    await engine.admit('Echo', { id: 'watched', message: message('turn two') }, 'dispatch');
    await engine.runQueue(key);
    const answer = await parked;
    expect(answer).toMatchObject({ kind: 'ok' });
    expect(answer.kind === 'ok' && answer.nextSeq).toBeGreaterThan(head);
  });
});

describe('stop', () => {
  it('refuses new work once stopping, and readers still waiting get a retryable error', async () => {
    const { receipt } = await engine.admit('Echo', { id: 'a1', message: message('hi') }, 'dispatch');
    const waiting = engine.read('Echo', 'a1', receipt.submissionId);
    await engine.stop(0);
    expect(engine.isStopping).toBe(true);
    await expect(waiting).rejects.toBeInstanceOf(RuntimeUnavailableError);
    await expect(engine.admit('Echo', { id: 'a1', message: message('late') }, 'dispatch')).rejects.toBeInstanceOf(RuntimeUnavailableError);
    // Still open, for the next start: admitted with its first attempt claimed, never begun.
    expect(store.openSubmissionIds(storedConversationKey('agents/Echo/a1'))).toEqual([receipt.submissionId]);
    expect(store.getSubmission(receipt.submissionId)).toMatchObject({ status: 'running', attemptCount: 1, outcome: null });
  });

  it('once stopped, every read is a retryable error and none reaches the store the host then closes', async () => {
    const { receipt } = await engine.admit('Echo', { id: 'a1', message: message('hi') }, 'dispatch');
    await engine.stop(0);
    // The host closes the store after the drain: a watcher polling on must not query it.
    const query = store.driver.query;
    store.driver.query = () => {
      throw new Error('the store is closed');
    };
    try {
      expect(() => engine.getInstance('Echo', 'a1')).toThrow(RuntimeUnavailableError);
      expect(() => engine.history('Echo', 'a1')).toThrow(RuntimeUnavailableError);
      await expect(engine.updates('Echo', 'a1', -1, { waitMs: 0, maxBatches: 10 })).rejects.toBeInstanceOf(RuntimeUnavailableError);
      await expect(engine.poll('Echo', 'a1', receipt.submissionId, { afterSeq: -1, waitMs: 0, batches: true })).rejects.toBeInstanceOf(
        RuntimeUnavailableError,
      );
      await expect(engine.read('Echo', 'a1', receipt.submissionId)).rejects.toBeInstanceOf(RuntimeUnavailableError);
    } finally {
      store.driver.query = query;
    }
  });
});
