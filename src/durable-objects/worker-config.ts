/**
 * The Worker side of the Cloudflare target: the agent registry the generated entry declares, and
 * the runtime that `dispatch()`/`init()`/`getAgentInstance()` use from any Worker code — each verb
 * is an RPC to the conversation's Durable Object.
 */
import type { Provider } from '../runtime/model/model-types.ts';
import { bootstrapRuntime, serveRuntime } from '../runtime/host/bootstrap.ts';
import { devModeSoFar } from '../runtime/common/dev-mode.ts';
import type { ReadOptions } from '../runtime/engine/verbs.ts';
import { abortError } from '../runtime/common/errors.ts';
import type { Agent, AgentRegistry } from '../runtime/authoring/identity.ts';
import { registerDefaultProviders, registerDefaultProvidersOnFirstUse } from '../runtime/model/providers.ts';
import { type NextAnswer, readReply } from '../runtime/engine/reply-reader.ts';
import type { FlueRuntime } from '../runtime/host/runtime.ts';
import type { VerbArgs, VerbName } from '../runtime/engine/verbs.ts';
import type { AgentReply, DispatchReceipt } from '../runtime/common/types.ts';
import type { Admission } from '../runtime/engine/verbs.ts';
import { type RpcEnvelope, unwrap } from './rpc-errors.ts';
import { type AdmissionSession, type AgentObjectRpc, CROSSINGS, VERB_NAMES, callVerb, instanceOf, sendVerb } from './rpc-verbs.ts';
import { SessionShelf } from './session-shelf.ts';
import { promised } from '../runtime/common/promised.ts';
import { setWorkersAIBindingSource } from './workers-ai-binding.ts';
import type { WorkersAIBinding } from './workers-ai-provider.ts';

export interface FlueAgentEntry {
  identity: string;
  agent: Agent;
  className: string;
  bindingName: string;
}

export interface WorkerConfig {
  env: Record<string, unknown>;
  registry: AgentRegistry;
  entries: Map<string, FlueAgentEntry>;
}

let current: WorkerConfig | undefined;

/** How long one remote read waits inside the object before the Worker asks again. */
const POLL_WAIT_MS = 25_000;
/** Consecutive transport failures (object resets, evictions) a read rides out before giving up. */
const MAX_READ_RETRIES = 8;
/**
 * How long an admission's session waits for the read of its receipt before the next admission lets
 * it go. It goes with its request anyway; the bound is for code that dispatches many times in one
 * long context (a Durable Object of the app's, a long stream) without reading.
 */
const SESSION_UNREAD_MS = 10_000;

export function workerConfig(): WorkerConfig {
  if (current === undefined) {
    throw new Error('[flue] The Flue Worker is not configured: the generated entry calls configureFlueWorker() before any handler runs.');
  }
  return current;
}

export function configureFlueWorker(options: {
  env: Record<string, unknown>;
  agents: readonly FlueAgentEntry[];
  /**
   * The built-in providers, loaded by the first model call in the isolate (the generated entry
   * imports their modules here with `import()`, so a start does not evaluate them).
   */
  providers?: () => Promise<readonly Provider[]>;
  /**
   * The Workers AI provider for `cloudflare/` models (`cloudflareBindingProvider`), registered
   * when the Worker has an `AI` binding. The build passes it only when the app may name such a
   * model, so other Workers do not carry its code.
   */
  workersAI?: (binding: WorkersAIBinding) => Provider;
}): void {
  const entries = new Map<string, FlueAgentEntry>();
  const registry = bootstrapRuntime({
    env: options.env,
    register(registry) {
      for (const entry of options.agents) {
        registry.register(entry.agent, entry.identity);
        entries.set(entry.identity, entry);
      }
    },
    // `flue dev` sets FLUE_DEV=1; a deployed Worker has no such var and stays redacted unless its
    // NODE_ENV says development (the rule before any host decided, applied when first asked).
    devDefault: options.env.NODE_ENV === 'development' || devModeSoFar(),
    host: 'cloudflare',
  });
  if (options.providers !== undefined) registerDefaultProvidersOnFirstUse(options.providers);
  setWorkersAIBindingSource((name) => options.env[name]);
  // `cloudflare/...` models need no key where the Worker has Workers AI; a provider the app
  // registered under `cloudflare` wins, and FLUE_WORKERS_AI=off leaves the id unregistered.
  // Registered now: it is the runtime's own small module, and no built-in pi-ai provider has its id.
  const workersAI = options.workersAI;
  if (workersAI !== undefined && options.env.AI !== undefined && options.env.FLUE_WORKERS_AI !== 'off') {
    registerDefaultProviders(() => [workersAI(options.env.AI as WorkersAIBinding)]);
  }
  current = { env: options.env, registry, entries };
  serveRuntime(createWorkerRuntime(current));
}

function stubFor(config: WorkerConfig, identity: string, instanceId: string, verb: string): AgentObjectRpc {
  const entry = config.entries.get(identity);
  const namespace = entry === undefined ? undefined : (config.env[entry.bindingName] as DurableObjectNamespace | undefined);
  if (namespace === undefined) throw new Error(`[flue] ${verb} target agent "${identity}" Durable Object binding is unavailable.`);
  return namespace.getByName(instanceId) as unknown as AgentObjectRpc;
}

/**
 * Every verb but `poll` is one RPC to the conversation's object; `read()` is a loop of polls, through
 * the session its admission left when it reads the receipt that admission answered.
 */
function createWorkerRuntime(config: WorkerConfig): FlueRuntime {
  const call =
    <K extends VerbName>(verb: K) =>
    (agentName: string, ...args: VerbArgs<K>) =>
      callVerb(stubFor(config, agentName, instanceOf(verb, args), CROSSINGS[verb].label), verb, args);
  const verbs = Object.fromEntries(VERB_NAMES.filter((verb) => verb !== 'poll').map((verb) => [verb, call(verb)]));
  return {
    ...(verbs as Omit<FlueRuntime, 'registry' | 'read'>),
    async admit(agentName, ...args) {
      const stub = stubFor(config, agentName, instanceOf('admit', args), CROSSINGS.admit.label);
      const answer: RpcEnvelope<Admission> & { session?: AdmissionSession } = await sendVerb(stub, 'admit', args);
      const admission = unwrap(answer);
      if (answer.session !== undefined) keepSession(admission.receipt, answer.session);
      return admission;
    },
    registry: config.registry,
    read: (agentName, instanceId, submissionId, options) => readRemote(config, agentName, instanceId, submissionId, options),
  };
}

/** Admissions' sessions by the receipt each answered, until a read of that receipt takes it. */
const sessions = new SessionShelf<DispatchReceipt, AdmissionSession>(SESSION_UNREAD_MS, letGo);

function keepSession(receipt: DispatchReceipt, session: AdmissionSession): void {
  sessions.keep(receipt, session, Date.now());
}

function takeSession(receipt: DispatchReceipt | undefined): AdmissionSession | undefined {
  return receipt === undefined ? undefined : sessions.take(receipt);
}

/** Disposes a stub the object handed out, so the object can let its end go before the request ends. */
function letGo(session: AdmissionSession | undefined): void {
  try {
    (session as Partial<Disposable> | undefined)?.[Symbol.dispose]?.();
  } catch {
    // Already gone with its request: nothing to release.
  }
}

/**
 * `read()` against an object: bounded long-polls until the settlement, projected into stream
 * chunks here by the shared reply reader, so the object only ever serves plain records. Chained
 * rather than awaited: a read parked on its poll holds no suspended frames of its own.
 */
function readRemote(
  config: WorkerConfig,
  agentName: string,
  instanceId: string,
  submissionId: string,
  options: ReadOptions = {},
): Promise<AgentReply> {
  const { signal } = options;
  const label = CROSSINGS.poll.label;
  // The admission's session, when this reads the receipt it answered: no new request to the object.
  let session = takeSession(options.receipt);
  let stub: AdmissionSession | undefined = session;
  let failures = 0;
  /** After a failed poll: rejects when the read must fail, else resolves when to ask again (the next poll gets a new stub). */
  const recover = async (error: unknown): Promise<void> => {
    if (signal?.aborted) throw error;
    if (session !== undefined) {
      // The session ended (its request is over, or the object was reset): ask the object itself.
      letGo(session);
      session = undefined;
    } else {
      // The object was reset or evicted mid-read: reads are re-attachable, so ask again.
      if (++failures > MAX_READ_RETRIES) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, 50 * 2 ** failures)));
    }
    stub = undefined;
  };
  const next: NextAnswer = (afterSeq, batches) =>
    promised(() => {
      if (signal?.aborted) throw signal.reason ?? abortError();
      stub ??= stubFor(config, agentName, instanceId, label);
      // A large answer is a stream, read within the poll's promise: a reset mid-stream is retried like any.
      return sendVerb(stub, 'poll', [instanceId, submissionId, { afterSeq, waitMs: POLL_WAIT_MS, batches }], signal).then(
        (answer) => {
          failures = 0;
          return unwrap(answer);
        },
        (error: unknown) => recover(error).then(() => next(afterSeq, batches)),
      );
    });
  return readReply(next, submissionId, options).finally(() => letGo(session));
}
