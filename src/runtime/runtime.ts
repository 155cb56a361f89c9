/**
 * The runtime slot: at most one configured Flue runtime per process or isolate. The public verbs
 * (`dispatch`, `init`, `getAgentInstance`) resolve it per call, so they work wherever a host has
 * configured one — `start()` on Node, the generated Worker entry on Cloudflare.
 */
import type { ChildConversation, FlueConversationSnapshot } from './conversation.ts';
import type { AdmissionRequest, ReadOptions } from './engine.ts';
import type { AgentRegistry } from './identity.ts';
import type { ConversationStreamChunk } from './projection.ts';
import type { SubmissionKind } from './sql-store.ts';
import type { AgentInstanceInfo, AgentReply, DispatchReceipt } from './types.ts';

/** A receipt plus the stream head at admission (`-1` on a deduplicated replay). */
export interface Admission {
  receipt: DispatchReceipt;
  /** Sequence of the last batch when the submission was admitted. */
  head: number;
}

/** One read of a conversation's updates view (streaming-protocol.md §6). */
export type UpdatesResult =
  | { kind: 'not_found' }
  /** The requested offset is beyond the head (416). */
  | { kind: 'gone'; head: number }
  | {
      kind: 'ok';
      incarnation: string;
      /** Chunks projected from the batches after the requested offset (no checkpoint chunk). */
      chunks: ConversationStreamChunk[];
      /** Sequence of the last batch read, or the requested one when nothing was read. */
      nextSeq: number;
      /** The read reached the head. */
      upToDate: boolean;
    };

export interface StoredAttachment {
  id: string;
  mimeType: string;
  size: number;
  filename?: string;
  bytes: Uint8Array<ArrayBuffer>;
}

export interface FlueRuntime {
  readonly registry: AgentRegistry;
  admit(agentName: string, request: AdmissionRequest, kind: SubmissionKind): Promise<Admission>;
  read(agentName: string, instanceId: string, submissionId: string, options?: ReadOptions): Promise<AgentReply>;
  abort(agentName: string, instanceId: string): Promise<boolean>;
  getInstance(agentName: string, instanceId: string): Promise<AgentInstanceInfo | null>;
  /** The history view: the reduced root conversation, or null for a never-contacted instance. */
  history(agentName: string, instanceId: string): Promise<FlueConversationSnapshot | null>;
  /**
   * The child conversations the instance's `task` calls opened (recursively), each with its
   * transcript; null for a never-contacted instance. In-process inspection only (never HTTP).
   */
  childConversations(agentName: string, instanceId: string): Promise<ChildConversation[] | null>;
  /** Head of the stream (`-1` when empty), or null for a never-contacted instance. */
  streamHead(agentName: string, instanceId: string): Promise<{ head: number; incarnation: string } | null>;
  /**
   * Chunks after `afterSeq` (`-1` = from the start), at most `maxBatches` batches. When nothing
   * is there yet it waits up to `waitMs` for the next append (0 = answer at once).
   */
  updates(
    agentName: string,
    instanceId: string,
    afterSeq: number,
    options: { waitMs: number; maxBatches: number; signal?: AbortSignal },
  ): Promise<UpdatesResult>;
  /** An attachment of the root conversation; `undefined` when the instance was never contacted. */
  attachment(agentName: string, instanceId: string, attachmentId: string): Promise<StoredAttachment | null | undefined>;
}

// A global symbol, so two copies of this module in one process still share one runtime.
const SLOT = Symbol.for('flue.runtime');
type Slot = { [SLOT]?: FlueRuntime };

export function configureRuntime(runtime: FlueRuntime): void {
  (globalThis as Slot)[SLOT] = runtime;
}

export function clearRuntime(runtime: FlueRuntime): void {
  if ((globalThis as Slot)[SLOT] === runtime) delete (globalThis as Slot)[SLOT];
}

export function configuredRuntime(): FlueRuntime | undefined {
  return (globalThis as Slot)[SLOT];
}

export function requireRuntime(verb: string): FlueRuntime {
  const runtime = configuredRuntime();
  if (runtime === undefined) {
    throw new Error(
      `[flue] ${verb} needs a configured Flue runtime, and none is configured in this process. ` +
        'In a script or test, call start({ agents }) from @flue/runtime/node first; inside a Flue-built Worker it is configured for you.',
    );
  }
  return runtime;
}
