/**
 * The journal harness of the recovery tables (recovery.test.ts): given a conversation's log and
 * ledger (and a crash point), run one attempt of the engine and answer the batches it appended.
 *
 * It drives the engine only from outside — `new ConversationEngine(…)`, `runNext`, `admit`,
 * `abort` — over a `SqlStore` seeded through the store's own methods, and kills it at a point the
 * crash probe reports, so the loop's internals can change shape without touching the tables.
 *
 * A test-support module (`.fixtures.ts`): scripts/check-imports.mjs skips fixtures like test
 * files, so it may use the Node host's `sqlite()` adapter, whose default database is
 * `:memory:` (node:sqlite, no file).
 */
import { sqlite } from '../../node/sqlite.ts';
import { ConversationEngine } from './engine.ts';
import { Conversation } from './conversation.ts';
import { CHECKPOINT_VERSION, encodeCheckpoint } from './conversation-checkpoint.ts';
import { parseDeliveredMessage } from './delivered-message.ts';
import { RunStopped } from './run-signals.ts';
import { type ScriptedStep, scriptedModel } from './scripted-stream.fixtures.ts';
import { type Agent, AgentRegistry } from '../authoring/identity.ts';
import { registerProviders } from '../model/providers.ts';
import { type ProbeEvent, installCrashProbe } from '../store/crash-probe.ts';
import { lazyRows } from '../store/schema.ts';
import type { ConversationRecord } from '../store/records.ts';
import { type SqlDriver, SqlStore, type SqlValue, type SubmissionStatus } from '../store/sql-store.ts';
import { type ConversationKey, conversationKey, storedConversationKey } from '../store/conversation-key.ts';

/** The model every table agent uses (`useModel(TABLE_MODEL)`). */
export const TABLE_MODEL = 'table/model';
/** Another model of the same scripted provider: an agent whose render changed its model. */
export const NEXT_MODEL = 'table/next';
const model = scriptedModel('table', ['model', 'next']);

/** The conversation every case runs in: `agents/<agent>/t1`, born with these ids. */
const INSTANCE = 't1';
export const BIRTH = { conversationId: 'conv_t', uid: 'inst_t' } as const;
const TS = '2026-01-01T00:00:00.000Z';

/** A ledger row as an earlier attempt or admission left it. */
export interface GivenSubmission {
  id: string;
  /** The delivered user message. */
  body: string;
  /** Attempts already claimed (the row is `running`); absent or 0: `queued`. */
  attempts?: number;
  /** When the first attempt started (epoch ms; default now): the deadline counts from it. */
  startedAt?: number;
  /** The last attempt yielded at a turn boundary: the next claim continues it. */
  continuation?: true;
}

export interface Given {
  /** Batches after the birth record. */
  log?: ConversationRecord[][];
  /** In admission order. */
  submissions: GivenSubmission[];
  /** Other streams of the store (a task's child conversation) and their batches. */
  streams?: Record<string, ConversationRecord[][]>;
  /** Recorded durable step memos: `key` is `<issuing step id>:<tool call id>`. */
  steps?: { key: string; step: string; value: unknown }[];
  /** An abort was requested (and is durable) before this attempt. */
  abortRequested?: true;
}

/** Where the attempt dies, as the crash harness would kill it: a probe point, optionally narrowed. */
export interface CrashAt {
  point: Exclude<ProbeEvent['point'], 'admission'>;
  tool?: string;
  step?: string;
}

export interface Attempt {
  agent: Agent;
  given: Given;
  script: readonly ScriptedStep[];
  crashAt?: CrashAt;
  /** The engine's `sliceBudgetMs`; a negative budget is one already spent when the wake starts. */
  sliceBudgetMs?: number;
  /**
   * A stored checkpoint of the conversation's fold through this batch of the given log (0: the
   * birth record), as a process that died after writing later batches leaves it.
   */
  checkpointAt?: number;
}

export interface LedgerRow {
  status: SubmissionStatus;
  outcome: string | null;
  attempts: number;
  /** The attempt yielded: the next wake continues it without spending an attempt. */
  continuation: boolean;
}

export interface AttemptResult {
  /** The batches the attempt appended to the conversation, normalized (see `normalize`). */
  appends: unknown[][];
  /** Batches appended to other streams (child conversations), by stream. */
  streams: Record<string, unknown[][]>;
  /** Every ledger row after the attempt, by submission id (a generated one as its placeholder). */
  ledger: Record<string, LedgerRow>;
  /** The conversation's committed persistent state after the attempt. */
  state: Record<string, unknown>;
  /** Recorded durable step memos, by `<key>/<step>`. */
  steps: Record<string, unknown>;
  /** The crash point was reached (the attempt died there). */
  crashed: boolean;
  /** Script steps no model call took. */
  scriptLeft: number;
  /** The batch after which the engine's first read of the conversation's log started (-1: its start). */
  firstRead: number | undefined;
}

function streamOf(agent: Agent): ConversationKey {
  return conversationKey(agentName(agent), INSTANCE);
}

function agentName(agent: Agent): string {
  return new AgentRegistry().register(agent);
}

/** Seeds a fresh in-memory store, runs one attempt of the head submission, reports what it appended. */
export async function runAttempt(attempt: Attempt): Promise<AttemptResult> {
  registerProviders([model.provider]);
  const adapter = sqlite();
  await adapter.migrate();
  const driver = new FreezableDriver(await adapter.connect());
  const store = new SqlStore(driver);
  const stream = streamOf(attempt.agent);
  seed(store, agentName(attempt.agent), stream, attempt.given);
  if (attempt.checkpointAt !== undefined) {
    const conv = new Conversation('live');
    for (const batch of store.readBatches(stream, -1, attempt.checkpointAt + 1)) conv.apply(batch);
    store.writeCheckpoint(stream, attempt.checkpointAt, CHECKPOINT_VERSION, encodeCheckpoint(conv, 'inc_t'));
  }
  let firstRead: number | undefined;
  const read = store.readBatchesSized.bind(store);
  store.readBatchesSized = (key, after, ...rest) => {
    if (key === stream && firstRead === undefined) firstRead = after;
    return read(key, after, ...rest);
  };
  const heads = new Map(
    [stream, ...Object.keys(attempt.given.streams ?? {}).map(storedConversationKey)].map((key) => [key, store.head(key)]),
  );
  try {
    const crashed = await runOnce(attempt, store, driver);
    return { ...report(store, stream, heads), crashed, scriptLeft: model.left, firstRead };
  } finally {
    adapter.close();
  }
}

/** One `runNext` of a fresh engine over the store; true when it died at the crash point. */
async function runOnce(attempt: Attempt, store: SqlStore, driver: FreezableDriver): Promise<boolean> {
  const registry = new AgentRegistry();
  const name = registry.register(attempt.agent);
  const engine = new ConversationEngine({
    store,
    registry,
    env: {},
    wake: () => {},
    ...(attempt.sliceBudgetMs === undefined ? {} : { sliceBudgetMs: attempt.sliceBudgetMs }),
  });
  model.play(attempt.script, {
    deliver: async (body) => {
      await engine.admit(name, { id: INSTANCE, message: parseDeliveredMessage(body) }, 'dispatch');
    },
    abort: () => engine.abort(name, INSTANCE),
  });
  let crashed = false;
  const previous = installCrashProbe((event) => {
    if (crashed || !matches(attempt.crashAt, event)) return;
    // As the process dying here: nothing more is stored, and the engine's work is cut off.
    crashed = true;
    driver.frozen = true;
    void engine.stop(0);
    throw new RunStopped();
  });
  try {
    await engine.runNext(streamOf(attempt.agent));
  } finally {
    installCrashProbe(previous);
    driver.frozen = false;
  }
  return crashed;
}

/** What the store holds after the attempt: batches appended past `heads`, the ledger, state and memos. */
function report(
  store: SqlStore,
  stream: ConversationKey,
  heads: Map<ConversationKey, number>,
): Omit<AttemptResult, 'crashed' | 'scriptLeft' | 'firstRead'> {
  const ids = new Placeholders();
  const appended = (key: ConversationKey) =>
    store.readBatches(key, heads.get(key) ?? -1).map((batch) => batch.records.map((record) => normalize(record, ids)));
  const appends = appended(stream);
  const streams: Record<string, unknown[][]> = {};
  for (const row of store.driver.query('SELECT stream FROM flue_streams WHERE stream <> ? ORDER BY stream', stream)) {
    const batches = appended(storedConversationKey(row.stream));
    if (batches.length > 0) streams[String(row.stream)] = batches;
  }
  const ledger: Record<string, LedgerRow> = {};
  for (const row of store.driver.query('SELECT id, continuation FROM flue_submissions ORDER BY ord')) {
    const submission = store.getSubmission(String(row.id))!;
    ledger[ids.replace(submission.id)] = {
      status: submission.status,
      outcome: submission.outcome,
      attempts: submission.attemptCount,
      continuation: row.continuation === 1,
    };
  }
  const steps: Record<string, unknown> = {};
  for (const row of lazyRows(
    store.driver,
    'SELECT tool_call_id, step FROM flue_steps WHERE stream = ? ORDER BY tool_call_id, step',
    stream,
  )) {
    const memo = store.readStep(stream, String(row.tool_call_id), String(row.step));
    if (memo.found) steps[`${row.tool_call_id}/${row.step}`] = memo.value;
  }
  return { appends, streams, ledger, state: Object.fromEntries(store.readState(stream)), steps };
}

function seed(store: SqlStore, agent: string, stream: ConversationKey, given: Given): void {
  store.transaction(() => {
    store.createConversation({ key: stream, agent, instanceId: INSTANCE, incarnation: 'inc_t' });
    store.append(stream, [{ type: 'conversation_created', ...BIRTH, ts: TS }]);
    for (const batch of given.log ?? []) store.append(stream, batch);
    for (const [name, batches] of Object.entries(given.streams ?? {})) {
      const other = storedConversationKey(name);
      store.createConversation({ key: other, agent, instanceId: INSTANCE, incarnation: 'inc_t' });
      for (const batch of batches) store.append(other, batch);
    }
    for (const submission of given.submissions) {
      store.storeSubmission({
        id: submission.id,
        conversation: stream,
        kind: 'dispatch',
        payload: { message: { kind: 'user', body: submission.body } },
        acceptedAt: TS,
      });
      for (let claim = 0; claim < (submission.attempts ?? 0); claim++) {
        const now = submission.startedAt ?? Date.now();
        store.claimAttempt(submission.id, { attemptId: `attempt_given_${claim}`, now, maxAttempts: 10, timeoutMs: 3_600_000 });
      }
      if (submission.continuation) store.markContinuation(submission.id);
    }
    for (const memo of given.steps ?? []) store.writeStep(stream, memo.key, memo.step, memo.value);
    if (given.abortRequested) store.requestAbort(stream, Date.now());
  });
}

function matches(crashAt: CrashAt | undefined, event: ProbeEvent): boolean {
  if (crashAt === undefined || event.point !== crashAt.point) return false;
  if (crashAt.tool !== undefined && (!('tool' in event) || event.tool !== crashAt.tool)) return false;
  return crashAt.step === undefined || ('step' in event && event.step === crashAt.step);
}

/** The store's driver, with a switch that makes every statement throw (a dead process writes nothing). */
export class FreezableDriver implements SqlDriver {
  frozen = false;
  private readonly inner: SqlDriver;

  constructor(inner: SqlDriver) {
    this.inner = inner;
  }

  query(sql: string, ...params: SqlValue[]) {
    if (this.frozen) throw new RunStopped();
    return this.inner.query(sql, ...params);
  }

  run(sql: string, ...params: SqlValue[]): void {
    if (this.frozen) throw new RunStopped();
    this.inner.run(sql, ...params);
  }

  transaction<T>(fn: () => T): T {
    if (this.frozen) throw new RunStopped();
    return this.inner.transaction(fn);
  }
}

// ── Normalization ───────────────────────────────────────────────────────────────────────────

/** Ids the runtime generates: a prefix and a ULID, alone or inside a derived id (`msg_in_sub_…`). */
const GENERATED_ID = /([a-z]+)_[0-9A-HJKMNP-TV-Z]{26}\b/g;

/** Generated ids become `<prefix>_1`, `<prefix>_2`… in order of first appearance. */
class Placeholders {
  private readonly seen = new Map<string, string>();
  private readonly counts = new Map<string, number>();

  replace(value: string): string {
    return value.replace(GENERATED_ID, (id: string, prefix: string) => {
      let placeholder = this.seen.get(id);
      if (placeholder === undefined) {
        const count = (this.counts.get(prefix) ?? 0) + 1;
        this.counts.set(prefix, count);
        placeholder = `${prefix}_${count}`;
        this.seen.set(id, placeholder);
      }
      return placeholder;
    });
  }
}

/**
 * A record as the tables write it: generated ids replaced by placeholders, wall-clock values by
 * `'ts'` (timestamps) and `'ms'` (durations). A resource snapshot keeps only whether it is a
 * baseline: what it lists is narration's business (tested with narration), not recovery's.
 */
function normalize(record: ConversationRecord, ids: Placeholders): unknown {
  if (record.type === 'resource_snapshot') return { type: record.type, baseline: record.baseline };
  return clean(record, ids);
}

function clean(value: unknown, ids: Placeholders): unknown {
  if (typeof value === 'string') return ids.replace(value);
  if (Array.isArray(value)) return value.map((item) => clean(item, ids));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (key === 'ts' || key === 'timestamp') out[key] = 'ts';
    else if (key === 'durationMs') out[key] = 'ms';
    else out[key] = clean(item, ids);
  }
  return out;
}
