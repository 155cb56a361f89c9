/**
 * Addressing agent instances from outside: `dispatch()`, `init()` handles and
 * `getAgentInstance()` (seed 004; delivery.md §2, §6, §8). Validation happens here, in the order
 * the contract gives, before the runtime admits anything.
 */
import { parseDeliveredMessage } from '../engine/delivered-message.ts';
import { parseAdmissionFields } from './admission-fields.ts';
import { InvalidRequestError } from '../common/errors.ts';
import { MAX_TOKEN_LENGTH, assertInstanceIdShape, assertText } from '../common/input-limits.ts';
import { checkDeliveredMessage } from '../common/limits.ts';
import type { Agent } from '../authoring/identity.ts';
import { newId } from '../common/ids.ts';
import { promised } from '../common/promised.ts';
import type { ConversationStreamChunk } from '../engine/projection.ts';
import type { ConversationExport } from '../engine/conversation-export.ts';
import { type FlueRuntime, requireRuntime } from './runtime.ts';
import type {
  AgentDispatchRequest,
  AgentInstanceInfo,
  AgentReply,
  ConversationUsage,
  DeliveredMessageInput,
  DispatchReceipt,
} from '../common/types.ts';

export type AgentHandleDispatchRequest = Omit<AgentDispatchRequest, 'id' | 'uid'>;

export interface InitOptions {
  id?: string;
  uid?: string | null;
}

export interface AgentReadOptions {
  onEvent?: (chunk: ConversationStreamChunk) => void;
  signal?: AbortSignal;
}

export interface AgentInstanceHandle {
  readonly id: string;
  dispatch(request: string | AgentHandleDispatchRequest): Promise<DispatchReceipt>;
  read(target: string | DispatchReceipt, options?: AgentReadOptions): Promise<AgentReply>;
  abort(): Promise<void>;
}

function assertAgentFunction(agent: unknown, verb: string): asserts agent is Agent {
  if (typeof agent !== 'function') {
    throw new InvalidRequestError(
      `${verb} requires an agent function as its first argument.`,
      `Got ${agent === null ? 'null' : typeof agent}.`,
    );
  }
}

/** Missing or empty is a plain Error (seed 004); present but unstorable is InvalidRequestError. */
function assertInstanceId(id: unknown, verb: string): asserts id is string {
  if (typeof id !== 'string' || id.trim() === '') {
    throw new Error(`[flue] ${verb} requires a non-empty instance id (a string naming the agent instance).`);
  }
  assertInstanceIdShape(id);
}

/** Resolves runtime and identity for one verb call, in the contract's order. */
function target(agent: unknown, verb: string): { runtime: FlueRuntime; agentName: string } {
  const runtime = requireRuntime(verb);
  assertAgentFunction(agent, verb);
  return { runtime, agentName: runtime.registry.identityOf(agent) };
}

export async function dispatch(agent: Agent, request: AgentDispatchRequest): Promise<DispatchReceipt> {
  const { runtime, agentName } = target(agent, 'dispatch()');
  if (typeof request !== 'object' || request === null) {
    throw new InvalidRequestError('dispatch() requires a request object.', 'Pass { id, message }.');
  }
  assertInstanceId(request.id, 'dispatch()');
  const message = parseDeliveredMessage(request.message);
  const fields = parseAdmissionFields(request);
  // Before the runtime sees it: on Cloudflare the next step is an RPC to the object.
  checkDeliveredMessage(message, fields.initialData);
  const admission = await runtime.admit(
    agentName,
    {
      id: request.id,
      message,
      ...fields,
      ...(fields.initialData === undefined ? {} : { initialData: structuredClone(fields.initialData) }),
    },
    'dispatch',
  );
  return admission.receipt;
}

export function init(agent: Agent, options: InitOptions = {}): AgentInstanceHandle {
  assertAgentFunction(agent, 'init()');
  const id = options.id === undefined ? newId('instance') : options.id;
  assertInstanceId(id, 'init()');
  // The handle's first contact uses options.uid; after any receipt it pins the incarnation.
  let uid: string | null | undefined = options.uid;
  let pinned = false;
  return {
    id,
    async dispatch(request) {
      const payload: AgentHandleDispatchRequest = typeof request === 'string' ? { message: request as DeliveredMessageInput } : request;
      if (typeof payload !== 'object' || payload === null || !('message' in payload)) {
        throw new Error('[flue] handle.dispatch() takes a message string or { message, initialData?, idempotencyKey? }.');
      }
      if ('id' in payload || 'uid' in payload) {
        throw new Error('[flue] handle.dispatch() payloads cannot carry id or uid; pass them to init(agent, { id, uid }).');
      }
      const receipt = await dispatch(agent, {
        ...payload,
        ...(pinned ? { initialData: undefined } : {}),
        id,
        ...(uid === undefined ? {} : { uid }),
      });
      uid = receipt.uid;
      pinned = true;
      return receipt;
    },
    // Chained rather than awaited (a read waits for the whole response): no suspended frame here.
    read(readTarget, readOptions = {}) {
      return promised(() => {
        const { runtime, agentName } = target(agent, 'handle.read()');
        const submissionId = typeof readTarget === 'string' ? readTarget : readTarget?.submissionId;
        if (typeof submissionId !== 'string' || submissionId === '') {
          throw new Error('[flue] handle.read() requires a dispatch receipt or a non-empty submission id.');
        }
        assertText(submissionId, 'submissionId', MAX_TOKEN_LENGTH, 'The submission id is malformed.');
        if (typeof readTarget === 'string') return runtime.read(agentName, id, submissionId, readOptions);
        const reply = runtime.read(agentName, id, submissionId, { ...readOptions, receipt: readTarget });
        return reply.then((read) => ({ ...read, uid: readTarget.uid }));
      });
    },
    async abort() {
      const { runtime, agentName } = target(agent, 'handle.abort()');
      await runtime.abort(agentName, id);
    },
  };
}

export async function getAgentInstance(agent: Agent, id: string): Promise<AgentInstanceInfo | null> {
  const { runtime, agentName } = target(agent, 'getAgentInstance()');
  assertInstanceId(id, 'getAgentInstance()');
  return runtime.getInstance(agentName, id);
}

/**
 * The instance's usage ledger: what each settled submission spent (tokens, cost, model calls,
 * tool calls, attempts) and the sum of them; null for an instance never contacted.
 */
export async function getUsage(agent: Agent, id: string): Promise<ConversationUsage | null> {
  const { runtime, agentName } = target(agent, 'getUsage()');
  assertInstanceId(id, 'getUsage()');
  return runtime.usage(agentName, id);
}

export interface ForkOptions {
  /** The instance to fork. */
  from: string;
  /** The last offset the fork keeps; by default the latest at which every submission had settled. */
  at?: number;
  /** The new instance's id; a new one is generated when omitted. */
  id?: string;
}

export interface ExportConversationOptions {
  /** The last offset to include; by default the latest at which every submission had settled. */
  at?: number;
}

function assertOffset(at: unknown, verb: string): asserts at is number | undefined {
  if (at === undefined) return;
  if (typeof at !== 'number' || !Number.isSafeInteger(at) || at < 0) {
    throw new InvalidRequestError(
      `${verb} takes an offset at that is a whole number ≥ 0.`,
      `at: got ${JSON.stringify(at) ?? String(at)}; pass a batch offset, or omit it for the latest settled one.`,
    );
  }
}

/**
 * A new instance of the same agent whose conversation is `from`'s up to offset `at`, with its
 * persistent state, initial data, attachments and sandbox files as of that offset. The original is
 * untouched; nothing is shared, so deleting either never breaks the other.
 */
export async function fork(agent: Agent, options: ForkOptions): Promise<{ id: string; uid: string }> {
  const { runtime, agentName } = target(agent, 'fork()');
  if (typeof options !== 'object' || options === null)
    throw new InvalidRequestError('fork() requires an options object.', 'Pass { from, at?, id? }.');
  assertInstanceId(options.from, 'fork()');
  assertOffset(options.at, 'fork()');
  const id = options.id === undefined ? newId('instance') : options.id;
  assertInstanceId(id, 'fork()');
  const exported = await runtime.exportConversation(agentName, options.from, options.at === undefined ? {} : { at: options.at });
  return runtime.importConversation(agentName, id, exported);
}

/**
 * The instance's conversation as one JSON value (format `flue.conversation`, version 1): its
 * batches up to `at`, persistent state, attachments, sandbox files and child conversations.
 */
export async function exportConversation(agent: Agent, id: string, options: ExportConversationOptions = {}): Promise<ConversationExport> {
  const { runtime, agentName } = target(agent, 'exportConversation()');
  assertInstanceId(id, 'exportConversation()');
  assertOffset(options.at, 'exportConversation()');
  return runtime.exportConversation(agentName, id, options.at === undefined ? {} : { at: options.at });
}
