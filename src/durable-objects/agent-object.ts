/**
 * The Durable Object base every generated agent class extends: one object is one conversation.
 * Its SQLite holds the conversation's log, submissions, state and step memos through the same
 * store as Node, which it hands the engine and reads only through the engine's read view. Only
 * `alarm()` runs agent work; RPC admits, aborts and serves reads.
 */
import { DurableObject } from 'cloudflare:workers';
import { ConversationEngine } from '../runtime/engine/engine.ts';
import { SqlStore, migrate } from '../runtime/store/sql-store.ts';
import type { ConversationVerbs } from '../runtime/engine/verbs.ts';
import type { ConversationUsage } from '../runtime/common/types.ts';
import type { ConversationView } from '../runtime/engine/conversation-view.ts';
import type { AgentRegistry } from '../runtime/authoring/identity.ts';
import { type CloudflareContext, runInCloudflareContext } from './context.ts';
import { envelope } from './rpc-errors.ts';
import { devStatusUrl, loadDevSourceMap } from '../runtime/host/dev-status.ts';
import { type AgentObjectRpc, VERB_NAMES, receiveVerb } from './rpc-verbs.ts';
import { durableObjectSqlDriver } from './sql-driver.ts';
import { ObjectMeter } from './object-meter.ts';
import { afterAlarmPass, onObjectStart } from './alarm-plan.ts';
import { durableObjectCounters } from '../runtime/engine/usage-ledger.ts';
import { type FlueAgentEntry, workerConfig } from './worker-config.ts';

/** Armed before any fallible work, so a pass that dies is picked up again (cloudflare.md §6.2). */
const BACKSTOP_MS = 30_000;
/** A response yields at a turn boundary after this much wall time in one alarm (§6.5). */
const SLICE_BUDGET_MS = 10 * 60_000;

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
   * Wall time one alarm may spend on a response before it yields at a turn boundary and continues
   * in the next alarm. Below the platform's alarm wall-clock limit; an agent module lowers it for
   * its objects with `extend({ base: (Base) => class extends Base { static override sliceBudgetMs = … } })`.
   */
  static sliceBudgetMs = SLICE_BUDGET_MS;

  private readonly entry: FlueAgentEntry;
  /** The identity this object's conversation is keyed by (see `bornIdentity`). */
  private identity!: string;
  private engine!: ConversationEngine;
  /** What this object counts of itself for the usage ledger. */
  private meter!: ObjectMeter;

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
      driver.transaction(() => migrate(driver));
      const { registry } = workerConfig();
      this.engine = new ConversationEngine({
        store: new SqlStore(driver),
        registry,
        env,
        wake: () => this.arm(),
        sliceBudgetMs,
        takeActivity: () => this.meter.take(),
      });
      this.identity = bornIdentity(this.engine.view, entry, registry);
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
        const at = onObjectStart({ openWork, nextTimer, armed: await ctx.storage.getAlarm(), now: Date.now() });
        if (at !== undefined) await this.setAlarm(at);
      }
    });
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
              id: this.ctx.id.toString(),
            },
          }),
    };
  }

  private arm(): void {
    this.setAlarm(Date.now()).catch((error) => console.error('[flue] could not arm the alarm:', error));
  }

  /** Every alarm this object sets goes through here, so the meter counts it. */
  private setAlarm(at: number): Promise<void> {
    this.meter.alarmSet();
    return this.ctx.storage.setAlarm(at);
  }

  // ── RPC (called by the Worker runtime): one method per verb of runtime/engine/verbs.ts ───────────

  static {
    for (const verb of VERB_NAMES) {
      const { method, serve } = receiveVerb(verb);
      Object.defineProperty(this.prototype, method, {
        configurable: true,
        writable: true,
        value(this: FlueAgentDurableObject, instanceId: string, ...wire: unknown[]) {
          this.meter.rpcServed();
          return envelope(() =>
            serve(instanceId, wire, (args) =>
              runInCloudflareContext(this.context(instanceId), async () => {
                // The engine serves every verb of the table: checked here, where it is called.
                const verbs: ConversationVerbs = this.engine;
                const result = await (verbs[verb] as (agentName: string, ...args: unknown[]) => unknown).call(
                  verbs,
                  this.identity,
                  ...args,
                );
                if (verb === 'usage' && result !== null) {
                  const live = this.engine.view.live(this.identity, instanceId);
                  const counters = durableObjectCounters(live.conv, this.meter.peek(), this.ctx.storage.sql.databaseSize);
                  return { ...(result as ConversationUsage), durableObject: counters };
                }
                return result;
              }),
            ),
          );
        },
      });
    }
  }

  // ── The alarm: the only place agent work runs ─────────────────────────────────────────────

  override async alarm(): Promise<void> {
    const backstop = Date.now() + BACKSTOP_MS;
    await this.setAlarm(backstop);
    const view = this.engine.view;
    let progressed = false;
    try {
      // Due timers become queued deliveries first, so this pass runs them.
      runInCloudflareContext(this.context(), () => this.engine.fireDueTimers());
      for (const key of view.keysWithOpenWork()) {
        const instanceId = view.conversationInfo(key)?.instanceId;
        progressed = (await runInCloudflareContext(this.context(instanceId), () => this.engine.runNext(key))) || progressed;
      }
    } catch (error) {
      // Never rethrown: platform alarm retries must not mix with our own re-arm (§6.5).
      console.error('[flue] alarm pass failed; retrying on the backstop alarm:', error);
      return;
    }
    // No await between the emptiness check and the alarm call, so no admission can slip between.
    const step = afterAlarmPass({
      openWork: view.keysWithOpenWork().length > 0,
      progressed,
      nextTimer: view.nextTimerDue(),
      now: Date.now(),
      backstop,
    });
    switch (step.kind) {
      case 'delete':
        await this.ctx.storage.deleteAlarm();
        return;
      case 'set':
        await this.setAlarm(step.at);
        return;
      case 'keep':
        return;
      default:
        step satisfies never;
    }
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
