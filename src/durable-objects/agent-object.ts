/**
 * The Durable Object base every generated agent class extends: one object is one conversation.
 * Its SQLite holds the conversation's log, submissions, state and step memos through the same
 * store as Node, which it hands the engine and reads only through the engine's read view. RPC
 * admits, aborts and serves reads; the work an admission wakes runs in this instance right after
 * it, guarded by a backstop alarm that resumes it if the instance dies.
 */
import { DurableObject, RpcTarget } from 'cloudflare:workers';
import { ConversationEngine } from '../runtime/engine/engine.ts';
import { SqlStore, knowTables, migrate, schemaObjects } from '../runtime/store/sql-store.ts';
import type { SqlDriver } from '../runtime/store/sql-driver.ts';
import type { ConversationVerbs, VerbName } from '../runtime/engine/verbs.ts';
import type { ConversationUsage } from '../runtime/common/types.ts';
import type { ConversationView } from '../runtime/engine/conversation-view.ts';
import type { AgentRegistry } from '../runtime/authoring/identity.ts';
import { type CloudflareContext, runInCloudflareContext } from './context.ts';
import { type RpcEnvelope, envelope } from './rpc-errors.ts';
import { devStatusUrl, loadDevSourceMap } from '../runtime/host/dev-status.ts';
import { type AdmissionSession, type AgentObjectRpc, VERB_NAMES, receiveVerb } from './rpc-verbs.ts';
import { durableObjectSqlDriver } from './sql-driver.ts';
import { ObjectMeter } from './object-meter.ts';
import { type AlarmStep, type ArmedAlarm, BACKSTOP_MS, afterWork, backstopFor, onObjectStart, unlessArmedBy } from './alarm-plan.ts';
import { coalescedWake } from '../runtime/host/coalesced-wake.ts';
import type { ConversationKey } from '../runtime/store/conversation-key.ts';
import { durableObjectCounters } from '../runtime/engine/usage-ledger.ts';
import { type FlueAgentEntry, workerConfig } from './worker-config.ts';

/** A response yields at a turn boundary after this much wall time in one run (§6.5). */
const SLICE_BUDGET_MS = 10 * 60_000;
/**
 * How long one alarm invocation waits on the work it found running before it returns, below the
 * platform's 15-minute wall-clock limit for an alarm; the backstop it re-armed fires right after.
 */
const ALARM_JOIN_MS = 10 * 60_000;

/**
 * The identity the object's conversation was born under: the class's own, unless a
 * `renamed_classes` migration moved the object here from the class of the agent's earlier
 * identity. Its conversation stays keyed by that identity (`agents/<identity>/<id>`, in records
 * that never change), so the object keeps serving it under it, with the renamed agent's code. An
 * identity another agent of the app holds is never taken over.
 */
function bornIdentity(view: ConversationView, entry: FlueAgentEntry, registry: AgentRegistry): string {
  // One object holds one conversation: its root (task children live under `tasks/`).
  const born = view
    .conversationKeys()
    .filter((key) => key.startsWith('agents/'))
    .map((key) => view.conversationInfo(key)!.agent);
  const earlier = born.includes(entry.identity) ? undefined : born[0];
  if (earlier === undefined) return entry.identity;
  const holder = registry.get(earlier);
  return holder === undefined || holder === entry.agent ? earlier : entry.identity;
}

// The RPC methods are defined below from the verb table; this declares them to TypeScript.
export interface FlueAgentDurableObject extends AgentObjectRpc {}

export class FlueAgentDurableObject extends DurableObject<Record<string, unknown>> {
  /** Set on each generated subclass. */
  static flueEntry: FlueAgentEntry | undefined;
  /**
   * Wall time one run may spend on a response before it yields at a turn boundary and continues
   * as the same attempt; an agent module lowers it for its objects with
   * `extend({ base: (Base) => class extends Base { static override sliceBudgetMs = … } })`.
   */
  static sliceBudgetMs = SLICE_BUDGET_MS;

  private readonly entry: FlueAgentEntry;
  /** The identity this object's conversation is keyed by (see `bornIdentity`). */
  private identity!: string;
  private engine!: ConversationEngine;
  /** What this object counts of itself for the usage ledger. */
  private meter!: ObjectMeter;
  /** The alarm this instance armed (every change goes through `setAlarm`/`deleteAlarm` below). */
  private armed: ArmedAlarm;
  /** Conversation queues this instance is running now. */
  private drives = 0;
  /** Called when the last running queue has stopped. */
  private drained: (() => void)[] = [];
  /** Woken conversations start their queues after the code that woke them (the admission) returns. */
  private readonly kick = coalescedWake<ConversationKey>(
    (key) => this.drive(key),
    (task) => setTimeout(task, 0),
  );
  /** A new object's database, until its first call makes the store's tables (`makeStore`). */
  private unmade: SqlDriver | undefined;
  /** `ctx.id.toString()`, made once: workerd hex-encodes the id at every call, and every run asks for it. */
  private idText: string | undefined;

  constructor(ctx: DurableObjectState, env: Record<string, unknown>) {
    super(ctx, env);
    const Class = new.target as typeof FlueAgentDurableObject;
    const entry = Class.flueEntry;
    if (entry === undefined) throw new Error('[flue] FlueAgentDurableObject must be extended by a generated agent class.');
    const sliceBudgetMs = Class.sliceBudgetMs;
    if (typeof sliceBudgetMs !== 'number' || !(sliceBudgetMs >= 0)) {
      throw new Error(`[flue] ${entry.className}.sliceBudgetMs must be a number of milliseconds ≥ 0 (got ${String(sliceBudgetMs)}).`);
    }
    this.entry = entry;
    void ctx.blockConcurrencyWhile(async () => {
      if (ctx.storage.sql === undefined) {
        throw new Error(
          `[flue] ${entry.className} needs SQLite storage. Introduce it with "new_sqlite_classes" in a wrangler migration (key-value classes cannot be converted in place).`,
        );
      }
      this.meter = new ObjectMeter();
      const driver = durableObjectSqlDriver(ctx.storage, (rows) => this.meter.rowsWritten(rows));
      // A new object's tables are made by its first call (`makeStore`), not here: the constructor
      // runs in an event of its own, so its writes would be a commit of their own.
      const objects = schemaObjects(driver);
      // This object is its database's only writer: the lazy tables it lacks are not asked for.
      knowTables(driver, objects);
      const storeIsNew = objects.size === 0;
      if (storeIsNew) this.unmade = driver;
      else driver.transaction(() => migrate(driver, objects));
      const { registry } = workerConfig();
      this.engine = new ConversationEngine({
        store: new SqlStore(driver, { admitsInLog: true, empty: storeIsNew }),
        registry,
        env,
        wake: (key) => this.wake(key),
        timersChanged: (nextDue) => this.timersChanged(nextDue),
        sliceBudgetMs,
        takeActivity: () => this.meter.take(),
      });
      // A new object's store holds nothing: no conversation born under another name, no work, no timer.
      if (storeIsNew) this.engine.view.storeIsNew();
      this.identity = storeIsNew ? entry.identity : bornIdentity(this.engine.view, entry, registry);
      if (this.identity !== entry.identity) registry.alias(this.identity, entry.agent);
      // Under flue dev: an object woken by its alarm after a reload maps its errors to src/ too
      // (a Worker request usually loaded the map into this isolate already; then this is free).
      const statusUrl = devStatusUrl(env);
      if (statusUrl !== undefined) await loadDevSourceMap(statusUrl);
      // A new instance means no attempt of an earlier one still runs (an eviction, a crash, a
      // deploy): unsettled work is resumed now, not when the backstop alarm would have fired.
      // A pending timer gets an alarm no later than its due time, whatever a deploy left armed.
      const view = this.engine.view;
      const openWork = view.keysWithOpenWork().length > 0;
      const nextTimer = view.nextTimerDue();
      if (openWork || nextTimer !== undefined) {
        this.armed = await ctx.storage.getAlarm();
        const at = onObjectStart({ openWork, nextTimer, armed: this.armed, now: Date.now() });
        if (at !== undefined) await this.setAlarm(at);
      }
    });
  }

  /**
   * Makes a new object's tables, in the event of its first call: they commit with what that call
   * writes (the first admission's rows). A failed attempt is made again by the next call.
   */
  private makeStore(): void {
    const driver = this.unmade;
    if (driver === undefined) return;
    // The constructor read the schema: none of the store's objects (nothing else writes them).
    driver.transaction(() => migrate(driver, new Map()));
    this.unmade = undefined;
  }

  private context(instanceId?: string): CloudflareContext {
    return {
      env: this.env,
      storage: { sql: this.ctx.storage.sql },
      ...(instanceId === undefined
        ? {}
        : {
            durableObjectIdentity: {
              bindingName: this.entry.bindingName,
              className: this.entry.className,
              name: instanceId,
              id: (this.idText ??= this.ctx.id.toString()),
            },
          }),
    };
  }

  // ── Running work: in this instance, with the alarm as its backstop ─────────────────────────

  /**
   * The engine's wake (an admission, a due timer, an abort): the backstop is armed now, with the
   * writes that woke it, and the conversation's queue runs in this instance once they returned.
   */
  private wake(key: ConversationKey): void {
    const backstop = backstopFor({ armed: this.armed, now: Date.now() });
    if (backstop !== undefined) void this.setAlarm(backstop);
    this.kick(key);
  }

  /** A timer due before the armed alarm brings it forward (the alarm delivers it, then re-arms). */
  private timersChanged(nextDue: number | undefined): void {
    const at = nextDue === undefined ? undefined : unlessArmedBy(Math.max(Date.now(), nextDue), this.armed);
    if (at !== undefined) void this.setAlarm(at);
  }

  /** Runs a conversation's queue until it is empty or cannot progress; one run per conversation. */
  private drive(key: ConversationKey): void {
    this.drives++;
    const instanceId = this.engine.view.conversationInfo(key)?.instanceId;
    runInCloudflareContext(this.context(instanceId), () => this.engine.runQueue(key))
      .catch((error: unknown) => {
        // Never rethrown: the backstop alarm tries the queue again.
        console.error(`[flue] Conversation "${key}" could not run its queue; the backstop alarm retries it:`, error);
      })
      .finally(() => {
        if (--this.drives > 0) return;
        this.rearm();
        for (const resolve of this.drained.splice(0)) resolve();
      });
  }

  /**
   * Nothing runs here now: the alarm is kept (a backstop left to lapse), armed for a timer, or
   * deleted (`afterWork`). No await between the emptiness check and the alarm call, so no
   * admission can slip between.
   */
  private rearm(): void {
    const view = this.engine.view;
    this.apply(
      afterWork({ openWork: view.keysWithOpenWork().length > 0, nextTimer: view.nextTimerDue(), armed: this.armed, now: Date.now() }),
    );
  }

  private apply(step: AlarmStep): void {
    switch (step.kind) {
      case 'set':
        void this.setAlarm(step.at);
        return;
      case 'delete':
        this.armed = null;
        this.ctx.storage.deleteAlarm().catch((error) => console.error('[flue] could not delete the alarm:', error));
        return;
      case 'keep':
        return;
      default:
        step satisfies never;
    }
  }

  /** Every alarm this object sets goes through here, so the meter counts it and `armed` knows it. */
  private setAlarm(at: number): Promise<void> {
    this.meter.alarmSet();
    this.armed = at;
    const set = this.ctx.storage.setAlarm(at);
    set.catch((error) => console.error('[flue] could not arm the alarm:', error));
    return set;
  }

  // ── RPC (called by the Worker runtime): one method per verb of runtime/engine/verbs.ts ───────────

  static {
    const receivers = Object.fromEntries(VERB_NAMES.map((verb) => [verb, receiveVerb(verb)])) as Record<
      VerbName,
      ReturnType<typeof receiveVerb>
    >;
    /** One verb as the Worker called it: the arguments read back, the engine's answer in its envelope. */
    const serve = (object: FlueAgentDurableObject, verb: VerbName, instanceId: string, wire: unknown[]) =>
      envelope(() => {
        object.makeStore();
        return receivers[verb].serve(instanceId, wire, (args) =>
          runInCloudflareContext(object.context(instanceId), () => {
            // The engine serves every verb of the table: checked here, where it is called.
            const verbs: ConversationVerbs = object.engine;
            const result = (verbs[verb] as (agentName: string, ...args: unknown[]) => unknown).call(verbs, object.identity, ...args);
            return verb === 'usage' ? Promise.resolve(result).then((usage) => object.withCounters(instanceId, usage)) : result;
          }),
        );
      });
    for (const verb of VERB_NAMES) {
      Object.defineProperty(this.prototype, receivers[verb].method, {
        configurable: true,
        writable: true,
        // Not async: a long poll's answer is chained, with no suspended frame per waiting call.
        value(this: FlueAgentDurableObject, instanceId: string, ...wire: unknown[]): Promise<unknown> {
          this.meter.rpcServed();
          const answer = serve(this, verb, instanceId, wire);
          if (verb !== 'admit') return answer;
          // The admission's reader polls through its session: one request for `dispatch()` + `read()`.
          return answer.then((admitted) =>
            admitted.ok ? { ...admitted, session: new PollSession(instanceId, (poll) => serve(this, 'poll', instanceId, poll)) } : admitted,
          );
        },
      });
    }
  }

  /** A conversation's usage, with what its object has counted (durableObjectCounters). */
  private withCounters(instanceId: string, usage: unknown): unknown {
    if (usage === null) return usage;
    const live = this.engine.view.live(this.identity, instanceId);
    const counters = durableObjectCounters(live.conv, this.meter.peek(), this.ctx.storage.sql.databaseSize);
    return { ...(usage as ConversationUsage), durableObject: counters };
  }

  // ── The alarm: the backstop ─────────────────────────────────────────────────────────────────

  /**
   * Fires when a timer is due, when open work's backstop comes due, or when a new instance found
   * work its predecessor left. Due timers are delivered, every conversation with open work is
   * driven (a queue this instance is running already is joined, not run twice), and the alarm
   * waits on that work, so the object has an event in progress while it runs.
   */
  override async alarm(): Promise<void> {
    // The alarm that fired is spent: what this invocation arms (or deletes) replaces it.
    this.armed = null;
    const view = this.engine.view;
    try {
      this.makeStore();
      // Due timers become queued deliveries (their wakes drive them).
      runInCloudflareContext(this.context(), () => this.engine.fireDueTimers());
      const open = view.keysWithOpenWork();
      for (const key of open) this.wake(key);
      if (open.length === 0 && this.drives === 0) {
        // Nothing to run (an early alarm): armed for what is pending (a timer), if anything.
        this.rearm();
        return;
      }
    } catch (error) {
      // Never rethrown: platform alarm retries must not mix with the backstop (§6.5).
      console.error('[flue] alarm failed; retrying on the backstop alarm:', error);
      if (this.armed === null) await this.setAlarm(Date.now() + BACKSTOP_MS);
      return;
    }
    let timeout: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      new Promise<void>((resolve) => this.drained.push(resolve)),
      new Promise<void>((resolve) => {
        timeout = setTimeout(resolve, ALARM_JOIN_MS);
      }),
    ]);
    clearTimeout(timeout);
  }
}

/**
 * The object's `poll` for one conversation, handed out with an admission: a call on it is part of
 * the admission's RPC session, not a request of its own. It serves the conversation it was made for.
 */
class PollSession extends RpcTarget implements AdmissionSession {
  readonly #instanceId: string;
  readonly #poll: (wire: unknown[]) => Promise<RpcEnvelope<unknown>>;

  constructor(instanceId: string, poll: (wire: unknown[]) => Promise<RpcEnvelope<unknown>>) {
    super();
    this.#instanceId = instanceId;
    this.#poll = poll;
  }

  __fluePoll(instanceId: string, ...wire: unknown[]): Promise<RpcEnvelope<never>> {
    if (instanceId !== this.#instanceId)
      throw new Error(`[flue] This read session serves instance "${this.#instanceId}", not "${instanceId}".`);
    return this.#poll(wire) as Promise<RpcEnvelope<never>>;
  }
}

export function createFlueAgentClass(entry: FlueAgentEntry, extension?: unknown): typeof FlueAgentDurableObject {
  const Generated = class extends FlueAgentDurableObject {
    static override flueEntry: FlueAgentEntry | undefined = entry;
  };
  Object.defineProperty(Generated, 'name', { value: entry.className });
  return applyExtension(Generated, entry, extension);
}

// ── extend({ base, wrap }) (cloudflare.md §10) ──────────────────────────────────────────────

const EXTENSION = Symbol.for('flue.cloudflare.extension');
const FORBIDDEN_MEMBERS = ['fetch', 'alarm', 'webSocketMessage', 'webSocketClose', 'webSocketError'];

export interface CloudflareExtension {
  base?: (Base: typeof FlueAgentDurableObject) => typeof FlueAgentDurableObject;
  wrap?: (Final: typeof FlueAgentDurableObject) => typeof FlueAgentDurableObject;
}

export function extend(options: CloudflareExtension): CloudflareExtension {
  const unknown = Object.keys(options ?? {}).filter((key) => key !== 'base' && key !== 'wrap');
  if (unknown.length > 0) throw new Error(`[flue] extend() received unknown option(s): ${unknown.join(', ')}.`);
  return Object.assign({ ...options }, { [EXTENSION]: true });
}

function applyExtension(
  Generated: typeof FlueAgentDurableObject,
  entry: FlueAgentEntry,
  extension: unknown,
): typeof FlueAgentDurableObject {
  if (extension === undefined) return Generated;
  if (typeof extension !== 'object' || extension === null || !(EXTENSION in extension)) {
    throw new Error(`[flue] The "cloudflare" export of agent "${entry.identity}" must be made by extend() from @flue/runtime/cloudflare.`);
  }
  const { base, wrap } = extension as CloudflareExtension;
  let Class = Generated;
  if (base !== undefined) {
    Class = base(Generated);
    if (Class !== Generated && !(Class.prototype instanceof Generated)) {
      throw new Error(`[flue] Agent "${entry.identity}" cloudflare.base must return the received class or a subclass.`);
    }
    for (const member of Object.getOwnPropertyNames(Class.prototype)) {
      if (Class !== Generated && (FORBIDDEN_MEMBERS.includes(member) || member.startsWith('__flue'))) {
        throw new Error(`[flue] Agent "${entry.identity}" cloudflare.base must not define "${member}".`);
      }
    }
  }
  if (wrap !== undefined) {
    const Final = wrap(Class);
    if (Final !== Class && Final.prototype !== Class.prototype) {
      throw new Error(`[flue] Agent "${entry.identity}" cloudflare.wrap(Final) must return the received class or a constructor proxy.`);
    }
    Class = Final;
  }
  return Class;
}
