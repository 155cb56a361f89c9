/**
 * The conversation verbs, declared once: what a host serves for one conversation, with the
 * argument and result types of each.
 *
 * Everything that lists the verbs is derived from these signatures: `FlueRuntime` (runtime.ts),
 * and on Cloudflare the table of how each crosses the Worker → Durable Object RPC
 * (durable-objects/rpc-verbs.ts), from which the object's RPC methods and the Worker's client
 * follow. On Node the engine serves them itself: it is the runtime.
 */
import type { ChildConversation, FlueConversationSnapshot } from './conversation.ts';
import type { SettlementError } from '../common/errors.ts';
import type { ConversationStreamChunk } from './projection.ts';
import type { SubmissionOutcome } from '../store/records.ts';
import type { ConversationExport } from './conversation-export.ts';
import type { ExportOptions } from './conversation-transfer.ts';
import type { Batch, SubmissionKind } from '../store/sql-store.ts';
import type { AgentInstanceInfo, AgentReply, ConversationUsage, DeliveredMessage, DispatchReceipt } from '../common/types.ts';

export interface AdmissionRequest {
  id: string;
  message: DeliveredMessage;
  initialData?: unknown;
  /** `undefined`: continue or create; a string: continue that incarnation; `null`: create only. */
  uid?: string | null;
  idempotencyKey?: string;
}

/** What one bounded remote read returns: new batches (when asked for) and the settlement, if any. */
export interface ReadPoll {
  batches: Batch[];
  settled?: { outcome: SubmissionOutcome; error?: SettlementError; reply?: AgentReply };
}

export interface ReadOptions {
  onEvent?: (chunk: ConversationStreamChunk) => void;
  signal?: AbortSignal;
  /**
   * The receipt being read, when the caller holds the object its admission returned: a runtime may
   * read through what that admission left it (on Cloudflare, the admission's RPC session).
   */
  receipt?: DispatchReceipt;
}

/** A receipt plus the stream head at admission (`-1` on a deduplicated replay). */
export interface Admission {
  receipt: DispatchReceipt;
  /** Sequence of the last batch when the submission was admitted. */
  head: number;
}

/** One read of a conversation's updates view. */
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

export interface UpdatesOptions {
  waitMs: number;
  maxBatches: number;
  /** The caller's; it never crosses RPC (the Worker stops waiting instead). */
  signal?: AbortSignal;
}

export interface PollOptions {
  afterSeq: number;
  waitMs: number;
  batches: boolean;
}

type Verb<Args extends unknown[], Result> = { args: Args; result: Result };

/** Each verb's arguments after the agent name, and its result. */
export interface VerbSignatures {
  admit: Verb<[request: AdmissionRequest, kind: SubmissionKind], Admission>;
  getInstance: Verb<[instanceId: string], AgentInstanceInfo | null>;
  /** The history view: the reduced root conversation, or null for a never-contacted instance. */
  history: Verb<[instanceId: string], FlueConversationSnapshot | null>;
  /**
   * The child conversations the instance's `task` calls opened (recursively), each with its
   * transcript; null for a never-contacted instance. In-process inspection only (never HTTP).
   */
  childConversations: Verb<[instanceId: string], ChildConversation[] | null>;
  /** Head of the stream (`-1` when empty), or null for a never-contacted instance. */
  streamHead: Verb<[instanceId: string], { head: number; incarnation: string } | null>;
  /**
   * Chunks after `afterSeq` (`-1` = from the start), at most `maxBatches` batches. When nothing
   * is there yet it waits up to `waitMs` for the next append (0 = answer at once).
   */
  updates: Verb<[instanceId: string, afterSeq: number, options: UpdatesOptions], UpdatesResult>;
  /** An attachment of the root conversation; `undefined` when the instance was never contacted. */
  attachment: Verb<[instanceId: string, attachmentId: string], StoredAttachment | null | undefined>;
  abort: Verb<[instanceId: string], boolean>;
  /** The usage ledger (`getUsage()`): every settled submission's spending and their sum; null for a never-contacted instance. */
  usage: Verb<[instanceId: string], ConversationUsage | null>;
  /**
   * One bounded wait of a reply reader (reply-reader.ts): new batches (when asked for) and the
   * settlement, if any. The runtime's `read()` is a loop of these.
   */
  poll: Verb<[instanceId: string, submissionId: string, options: PollOptions], ReadPoll>;
  /** The conversation cut at an offset, as one portable value (`exportConversation()`, the first half of `fork()`). */
  exportConversation: Verb<[instanceId: string, options: ExportOptions], ConversationExport>;
  /** A new conversation holding an export (the second half of `fork()`); refused when the instance exists. */
  importConversation: Verb<[instanceId: string, exported: ConversationExport], { id: string; uid: string }>;
}

export type VerbName = keyof VerbSignatures;
export type VerbArgs<K extends VerbName> = VerbSignatures[K]['args'];
export type VerbResult<K extends VerbName> = VerbSignatures[K]['result'];

/** A verb as a host serves it: a value, or a promise of it (the engine answers most at once). */
export type ConversationVerbs = {
  [K in VerbName]: (agentName: string, ...args: VerbArgs<K>) => VerbResult<K> | Promise<VerbResult<K>>;
};
