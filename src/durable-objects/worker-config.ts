/**
 * The Worker side of the Cloudflare target: the agent registry the generated entry declares, and
 * the runtime that `dispatch()`/`init()`/`getAgentInstance()` use from any Worker code — each verb
 * is an RPC to the conversation's Durable Object (cloudflare.md §8).
 */
import type { Provider } from '../runtime/model-types.ts';
import { AgentRunError } from '../runtime/errors.ts';
import { devModeFromEnv, isDevMode, setDevMode } from '../runtime/dev-mode.ts';
import type { AdmissionRequest, ReadOptions, ReadPoll } from '../runtime/engine.ts';
import { type Agent, AgentRegistry } from '../runtime/identity.ts';
import { configureModelAuthEnv } from '../runtime/model-registry.ts';
import { registerDefaultProviders } from '../runtime/providers.ts';
import { Projector } from '../runtime/projection.ts';
import { useScriptedModels } from '../testing/scripted-redirect.ts';
import { cloudflareBindingProvider, setWorkersAIBindingSource } from './workers-ai-provider.ts';
import { type Admission, type FlueRuntime, type StoredAttachment, type UpdatesResult, configureRuntime } from '../runtime/runtime.ts';
import type { SubmissionKind } from '../runtime/sql-store.ts';
import type { AgentInstanceInfo, AgentReply } from '../runtime/types.ts';
import type { ChildConversation, FlueConversationSnapshot } from '../runtime/conversation.ts';
import { type RpcEnvelope, unwrap } from './rpc-errors.ts';
import { type Packed, packValue, unpackValue } from './rpc-values.ts';
import { raceAbort } from '../runtime/race-abort.ts';

export interface FlueAgentEntry {
  identity: string;
  agent: Agent;
  className: string;
  bindingName: string;
}

/** The RPC surface every generated agent object exposes (names are internal). */
export interface AgentObjectRpc {
  __flueAdmit(instanceId: string, request: Packed<AdmissionRequest>, kind: SubmissionKind): Promise<RpcEnvelope<Admission>>;
  __flueHistory(instanceId: string): Promise<RpcEnvelope<Packed<FlueConversationSnapshot | null>>>;
  __flueChildConversations(instanceId: string): Promise<RpcEnvelope<Packed<ChildConversation[] | null>>>;
  __flueStreamHead(instanceId: string): Promise<RpcEnvelope<{ head: number; incarnation: string } | null>>;
  __flueUpdates(
    instanceId: string,
    afterSeq: number,
    options: { waitMs: number; maxBatches: number },
  ): Promise<RpcEnvelope<Packed<UpdatesResult>>>;
  __flueAttachment(instanceId: string, attachmentId: string): Promise<RpcEnvelope<StoredAttachment | null | undefined>>;
  __flueInstanceInfo(instanceId: string): Promise<RpcEnvelope<AgentInstanceInfo | null>>;
  __flueAbort(instanceId: string): Promise<RpcEnvelope<boolean>>;
  __fluePoll(
    instanceId: string,
    submissionId: string,
    options: { afterSeq: number; waitMs: number; batches: boolean },
  ): Promise<RpcEnvelope<Packed<ReadPoll>>>;
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

export function workerConfig(): WorkerConfig {
  if (current === undefined) {
    throw new Error('[flue] The Flue Worker is not configured: the generated entry calls configureFlueWorker() before any handler runs.');
  }
  return current;
}

export function configureFlueWorker(options: {
  env: Record<string, unknown>;
  agents: readonly FlueAgentEntry[];
  providers?: () => readonly Provider[];
}): void {
  const registry = new AgentRegistry();
  const entries = new Map<string, FlueAgentEntry>();
  for (const entry of options.agents) {
    registry.register(entry.agent, entry.identity);
    entries.set(entry.identity, entry);
  }
  configureModelAuthEnv(options.env as Record<string, string | undefined>);
  // `flue dev` sets FLUE_DEV=1; a deployed Worker has no such var and stays redacted unless its
  // NODE_ENV says development (the rule before any host decided).
  setDevMode(devModeFromEnv(options.env, options.env.NODE_ENV === 'development' || isDevMode()));
  if (options.providers !== undefined) registerDefaultProviders(options.providers);
  setWorkersAIBindingSource((name) => options.env[name]);
  // `cloudflare/...` models need no key where the Worker has Workers AI; a provider the app
  // registered under `cloudflare` wins, and FLUE_WORKERS_AI=off leaves the id unregistered.
  if (options.env.AI !== undefined && options.env.FLUE_WORKERS_AI !== 'off') {
    registerDefaultProviders(() => [cloudflareBindingProvider({ binding: options.env.AI as never })]);
  }
  const scripted = options.env.FLUE_SCRIPTED_MODEL_URL;
  if (typeof scripted === 'string' && scripted !== '') useScriptedModels(scripted);
  current = { env: options.env, registry, entries };
  configureRuntime(createWorkerRuntime(current));
}

function stubFor(config: WorkerConfig, identity: string, instanceId: string, verb: string): AgentObjectRpc {
  const entry = config.entries.get(identity);
  const namespace = entry === undefined ? undefined : (config.env[entry.bindingName] as DurableObjectNamespace | undefined);
  if (namespace === undefined) throw new Error(`[flue] ${verb} target agent "${identity}" Durable Object binding is unavailable.`);
  return namespace.getByName(instanceId) as unknown as AgentObjectRpc;
}

function createWorkerRuntime(config: WorkerConfig): FlueRuntime {
  return {
    registry: config.registry,
    async admit(agentName, request, kind) {
      return unwrap(await stubFor(config, agentName, request.id, 'dispatch()').__flueAdmit(request.id, packValue(request), kind));
    },
    async getInstance(agentName, instanceId) {
      return unwrap(await stubFor(config, agentName, instanceId, 'getAgentInstance()').__flueInstanceInfo(instanceId));
    },
    async history(agentName, instanceId) {
      return unpackValue(unwrap(await stubFor(config, agentName, instanceId, 'history').__flueHistory(instanceId)));
    },
    async childConversations(agentName, instanceId) {
      return unpackValue(unwrap(await stubFor(config, agentName, instanceId, 'child conversations').__flueChildConversations(instanceId)));
    },
    async streamHead(agentName, instanceId) {
      return unwrap(await stubFor(config, agentName, instanceId, 'stream head').__flueStreamHead(instanceId));
    },
    async updates(agentName, instanceId, afterSeq, { waitMs, maxBatches, signal }) {
      const call = stubFor(config, agentName, instanceId, 'updates').__flueUpdates(instanceId, afterSeq, { waitMs, maxBatches });
      return unpackValue(unwrap(signal === undefined ? await call : await raceAbort(call, signal)));
    },
    async attachment(agentName, instanceId, attachmentId) {
      return unwrap(await stubFor(config, agentName, instanceId, 'attachment').__flueAttachment(instanceId, attachmentId));
    },
    async abort(agentName, instanceId) {
      return unwrap(await stubFor(config, agentName, instanceId, 'handle.abort()').__flueAbort(instanceId));
    },
    read: (agentName, instanceId, submissionId, options) => readRemote(config, agentName, instanceId, submissionId, options),
  };
}

/**
 * `read()` against an object: bounded long-polls until the settlement, projecting the batches it
 * receives into stream chunks here, so the object only ever serves plain records.
 */
async function readRemote(
  config: WorkerConfig,
  agentName: string,
  instanceId: string,
  submissionId: string,
  options: ReadOptions = {},
): Promise<AgentReply> {
  const { signal, onEvent } = options;
  const stub = stubFor(config, agentName, instanceId, 'handle.read()');
  const projector = onEvent === undefined ? undefined : new Projector();
  let afterSeq = -1;
  let failures = 0;
  for (;;) {
    if (signal?.aborted) throw signal.reason;
    let envelope: RpcEnvelope<Packed<ReadPoll>>;
    let result: ReadPoll | undefined;
    try {
      const poll = (failures === 0 ? stub : stubFor(config, agentName, instanceId, 'handle.read()')).__fluePoll(instanceId, submissionId, {
        afterSeq,
        waitMs: POLL_WAIT_MS,
        batches: projector !== undefined,
      });
      envelope = signal === undefined ? await poll : await raceAbort(poll, signal);
      // A large answer is a stream, read inside the try: a reset mid-stream is retried like any.
      result = envelope.ok ? await unpackValue(envelope.value) : undefined;
      failures = 0;
    } catch (error) {
      // The object was reset or evicted mid-read: reads are re-attachable, so ask again.
      if (signal?.aborted || ++failures > MAX_READ_RETRIES) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, 50 * 2 ** failures)));
      continue;
    }
    if (result === undefined) throw unwrap(envelope);
    for (const batch of result.batches) {
      afterSeq = batch.seq;
      for (const chunk of projector!.project(batch)) {
        try {
          onEvent!(chunk);
        } catch (error) {
          console.error('[flue] read() onEvent callback threw:', error);
        }
      }
    }
    const settled = result.settled;
    if (settled === undefined) continue;
    if (settled.outcome !== 'completed') throw new AgentRunError(settled.outcome, submissionId, settled.error);
    return settled.reply!;
  }
}

