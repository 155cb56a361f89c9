/**
 * `start()`: the Node bootstrap. It registers the
 * agents, opens persistence, configures the process-wide runtime and resumes unsettled work —
 * what a generated server does at boot, without HTTP.
 */
import type { Provider } from '../runtime/model/model-types.ts';
import { bootstrapRuntime, releaseRuntime, serveRuntime } from '../runtime/host/bootstrap.ts';
import { ConversationEngine, STOP_GRACE_MS } from '../runtime/engine/engine.ts';
import type { Agent } from '../runtime/authoring/identity.ts';
import { registerDefaultProviders, registerProviders, withApiOnLoad } from '../runtime/model/providers.ts';
import { builtinApiLoader } from './builtin-apis.ts';
import { configuredRuntime } from '../runtime/host/runtime.ts';
import { SqlStore } from '../runtime/store/sql-store.ts';
import type { ConversationKey } from '../runtime/store/conversation-key.ts';
import { type PersistenceAdapter, sqlite } from './sqlite.ts';
import { TimerWake } from './timer-wake.ts';
import { coalescedWake } from '../runtime/host/coalesced-wake.ts';
import { setIdRandomness } from '../runtime/common/ids.ts';

// Node 22 defines the symbol but not the `await using` syntax (Node 24 does); a runtime without
// the symbol gets the registry one, so `flue[Symbol.asyncDispose]()` and transpiled `await using`
// still find the handle's disposer.
if (typeof (Symbol as { asyncDispose?: unknown }).asyncDispose !== 'symbol') {
  Object.defineProperty(Symbol, 'asyncDispose', { value: Symbol.for('Symbol.asyncDispose') });
}

export interface StartAgentConfig {
  agent: Agent;
  name?: string;
}

export type StartAgentEntry = Agent | StartAgentConfig;

export interface StartOptions {
  agents: readonly StartAgentEntry[];
  db?: PersistenceAdapter;
  env?: Record<string, string | undefined>;
  providers?: readonly Provider[];
}

export interface StopOptions {
  /**
   * How long running responses may take to settle before they are cut off (recovered on the next
   * start). Default 10 000 ms; 0 cuts off at once.
   */
  graceMs?: number;
}

export interface Flue {
  /**
   * Drains, then closes persistence: refuses new work, lets running responses settle (for up to
   * `graceMs`), and settles every waiting `read()` — with its reply, or with a retryable
   * `RuntimeUnavailableError` when the work continues on the next start.
   */
  stop(options?: StopOptions): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export async function start(options: StartOptions): Promise<Flue> {
  if (configuredRuntime() !== undefined) {
    throw new Error(
      '[flue] start() found an already-configured Flue runtime in this process. Stop it first, or call init()/dispatch() directly.',
    );
  }
  if (typeof options !== 'object' || options === null || !Array.isArray(options.agents) || options.agents.length === 0) {
    throw new Error('[flue] start() requires at least one agent: start({ agents: [MyAgent] }).');
  }
  const env = options.env ?? process.env;
  // node:crypto's CSPRNG, which the process's HTTP stack loads anyway, instead of the Web Crypto
  // object Node builds on its first use only for ids.
  setIdRandomness((bytes) => (process.getBuiltinModule('node:crypto') as typeof import('node:crypto')).randomFillSync(bytes));
  const registry = bootstrapRuntime({
    env,
    register(registry) {
      for (const entry of options.agents) {
        if (typeof entry === 'function') registry.register(entry);
        else if (typeof entry === 'object' && entry !== null && typeof entry.agent === 'function')
          registry.register(entry.agent, entry.name);
        else throw new Error('[flue] start() agents entries must be agent functions or { agent, name? } objects.');
      }
    },
    // start() serves scripts and tests, where the developer reads the errors; a production
    // process says so with NODE_ENV=production (in either environment) or FLUE_DEV=0.
    devDefault: env.NODE_ENV !== 'production' && process.env.NODE_ENV !== 'production',
    host: 'node',
  });
  if (options.providers === undefined) {
    // Loaded only when needed: the full built-in catalog is large and slows a cold start.
    const { builtinProviders } = await import('@earendil-works/pi-ai/providers/all');
    registerDefaultProviders(() => builtinProviders().map(directOnceLoaded));
  } else registerProviders(options.providers);

  const adapter = options.db ?? sqlite();
  let engine: ConversationEngine;
  // Every conversation's timers share one timeout, armed for the earliest due one.
  const timers = new TimerWake(() => engine.fireDueTimers());
  // A burst of admissions schedules one task (coalesced-wake.ts).
  // A conversation whose queue fails to run (a log this version cannot read) is logged, never
  // left to end the process: the others go on, and it is tried again at its next delivery or start.
  const drive = (key: ConversationKey) =>
    void engine.runQueue(key).catch((error: unknown) => {
      console.error(`[flue] Conversation "${key}" could not run its queue; it is tried again at its next delivery or start:`, error);
    });
  const wake = coalescedWake<ConversationKey>(drive, setImmediate);
  try {
    await adapter.migrate();
    const store = new SqlStore(await adapter.connect());
    engine = new ConversationEngine({
      store,
      registry,
      env,
      // The Node waker: a task in this process drives the conversation's queue.
      wake,
      timersChanged: (nextDue) => timers.arm(nextDue),
    });
  } catch (error) {
    await adapter.close();
    throw error;
  }

  // On Node the engine is the runtime: the verbs run in this process.
  serveRuntime(engine);
  // Recovery: every conversation with unsettled work is driven again, oldest work first.
  for (const key of engine.view.keysWithOpenWork()) drive(key);
  // Timers that came due while no process ran fire now; the rest when they are due.
  timers.arm(engine.view.nextTimerDue());

  let stopped: Promise<void> | undefined;
  const stop = (stopOptions?: StopOptions) => {
    const graceMs = stopOptions?.graceMs ?? STOP_GRACE_MS;
    if (typeof graceMs !== 'number' || !(graceMs >= 0) || !Number.isFinite(graceMs)) {
      return Promise.reject(
        new TypeError(`[flue] stop() options.graceMs must be a non-negative, finite number of milliseconds; got ${String(graceMs)}.`),
      );
    }
    stopped ??= (async () => {
      timers.stop();
      await engine.stop(graceMs);
      releaseRuntime(engine);
      await adapter.close();
    })();
    return stopped;
  };
  return { stop, [Symbol.asyncDispose]: () => stop() };
}

/** A built-in provider calling its API module directly once loaded, where it streams through one as is (builtin-apis.ts). */
function directOnceLoaded(provider: Provider): Provider {
  const load = builtinApiLoader(provider.id);
  return load === undefined ? provider : withApiOnLoad(provider, load);
}
