/**
 * The Durable Object base every generated agent class extends: one object is one conversation.
 * Its SQLite holds the conversation's log, submissions, state and step memos through the same
 * store as Node. Only `alarm()` runs agent work; RPC admits, aborts and serves reads
 * (cloudflare.md §4–§6).
 */
import { DurableObject } from 'cloudflare:workers';
import { ConversationEngine, type AdmissionRequest, type ReadPoll } from '../runtime/engine.ts';
import { SqlStore, migrate } from '../runtime/sql-store.ts';
import type { SubmissionKind } from '../runtime/sql-store.ts';
import type { AgentInstanceInfo } from '../runtime/types.ts';
import type { ChildConversation, FlueConversationSnapshot } from '../runtime/conversation.ts';
import type { Admission, StoredAttachment, UpdatesResult } from '../runtime/runtime.ts';
import { type CloudflareContext, runInCloudflareContext } from './context.ts';
import { type RpcEnvelope, envelope } from './rpc-errors.ts';
import { type Packed, packValue, unpackValue } from './rpc-values.ts';
import { durableObjectSqlDriver } from './sql-driver.ts';
import { type AgentObjectRpc, type FlueAgentEntry, workerConfig } from './worker-config.ts';

/** Armed before any fallible work, so a pass that dies is picked up again (cloudflare.md §6.2). */
const BACKSTOP_MS = 30_000;
/** A response yields at a turn boundary after this much wall time in one alarm (§6.5). */
const SLICE_BUDGET_MS = 10 * 60_000;

export class FlueAgentDurableObject extends DurableObject<Record<string, unknown>> implements AgentObjectRpc {
  /** Set on each generated subclass. */
  static flueEntry: FlueAgentEntry | undefined;
  /**
   * Wall time one alarm may spend on a response before it yields at a turn boundary and continues
   * in the next alarm. Below the platform's alarm wall-clock limit; an agent module lowers it for
   * its objects with `extend({ base: (Base) => class extends Base { static override sliceBudgetMs = … } })`.
   */
  static sliceBudgetMs = SLICE_BUDGET_MS;

  private readonly entry: FlueAgentEntry;
  private engine!: ConversationEngine;
  private store!: SqlStore;

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
      const driver = durableObjectSqlDriver(ctx.storage);
      driver.transaction(() => migrate(driver));
      this.store = new SqlStore(driver);
      this.engine = new ConversationEngine({
        store: this.store,
        registry: workerConfig().registry,
        env,
        wake: () => this.arm(),
        sliceBudgetMs,
      });
      // After an eviction or a deploy, unsettled work needs a wake even if no alarm survived.
      if (this.store.listStreamsWithOpenWork().length > 0 && (await ctx.storage.getAlarm()) === null) {
        await ctx.storage.setAlarm(Date.now());
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
    this.ctx.storage.setAlarm(Date.now()).catch((error) => console.error('[flue] could not arm the alarm:', error));
  }

  // ── RPC (called by the Worker runtime) ────────────────────────────────────────────────────

  async __flueAdmit(instanceId: string, packed: Packed<AdmissionRequest>, kind: SubmissionKind): Promise<RpcEnvelope<Admission>> {
    return envelope(async () => {
      const request = await unpackValue(packed);
      return runInCloudflareContext(this.context(instanceId), () =>
        this.engine.admit(this.entry.identity, { ...request, id: instanceId }, kind),
      );
    });
  }

  async __flueInstanceInfo(instanceId: string): Promise<RpcEnvelope<AgentInstanceInfo | null>> {
    return envelope(() => this.engine.getInstance(this.entry.identity, instanceId));
  }

  async __flueHistory(instanceId: string): Promise<RpcEnvelope<Packed<FlueConversationSnapshot | null>>> {
    return envelope(() => packValue(this.engine.history(this.entry.identity, instanceId)));
  }

  async __flueChildConversations(instanceId: string): Promise<RpcEnvelope<Packed<ChildConversation[] | null>>> {
    return envelope(() => packValue(this.engine.childConversations(this.entry.identity, instanceId)));
  }

  async __flueStreamHead(instanceId: string): Promise<RpcEnvelope<{ head: number; incarnation: string } | null>> {
    return envelope(() => this.engine.streamHead(this.entry.identity, instanceId));
  }

  async __flueUpdates(
    instanceId: string,
    afterSeq: number,
    options: { waitMs: number; maxBatches: number },
  ): Promise<RpcEnvelope<Packed<UpdatesResult>>> {
    return envelope(async () => packValue(await this.engine.updates(this.entry.identity, instanceId, afterSeq, options)));
  }

  async __flueAttachment(instanceId: string, attachmentId: string): Promise<RpcEnvelope<StoredAttachment | null | undefined>> {
    return envelope(() => this.engine.attachment(this.entry.identity, instanceId, attachmentId));
  }

  async __flueAbort(instanceId: string): Promise<RpcEnvelope<boolean>> {
    return envelope(() => this.engine.abort(this.entry.identity, instanceId));
  }

  async __fluePoll(
    instanceId: string,
    submissionId: string,
    options: { afterSeq: number; waitMs: number; batches: boolean },
  ): Promise<RpcEnvelope<Packed<ReadPoll>>> {
    return envelope(async () => packValue(await this.engine.poll(this.entry.identity, instanceId, submissionId, options)));
  }

  // ── The alarm: the only place agent work runs ─────────────────────────────────────────────

  override async alarm(): Promise<void> {
    await this.ctx.storage.setAlarm(Date.now() + BACKSTOP_MS);
    const streams = this.store.listStreamsWithOpenWork();
    let progressed = false;
    try {
      for (const stream of streams) {
        const instanceId = this.store.getStream(stream)?.instanceId;
        progressed = (await runInCloudflareContext(this.context(instanceId), () => this.engine.runNext(stream))) || progressed;
      }
    } catch (error) {
      // Never rethrown: platform alarm retries must not mix with our own re-arm (§6.5).
      console.error('[flue] alarm pass failed; retrying on the backstop alarm:', error);
      return;
    }
    // No await between the emptiness check and the alarm call, so no admission can slip between.
    if (this.store.listStreamsWithOpenWork().length === 0) await this.ctx.storage.deleteAlarm();
    else if (progressed) await this.ctx.storage.setAlarm(Date.now());
    // Otherwise the head cannot progress now (e.g. its agent is not deployed): the backstop retries.
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
