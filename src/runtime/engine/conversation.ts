/**
 * The fold of a conversation log: one pass over records yields everything derived from it —
 * the client-visible snapshot, settlements, the model context, and where the current response
 * stands (what recovery needs). A fold is kept per conversation in memory and advanced batch by
 * batch, so a long history is never re-read on every turn.
 *
 * A fold has a scope. A `'transcript'` fold (a reader's: the history view, reset snapshots, child
 * inspection) keeps every client message, settlement and ledger entry. A `'live'` fold (the one
 * kept per conversation in memory) keeps only what the next response, admission, recovery and
 * budgets need, so its memory follows the live context, not the history: the assistant messages
 * of unsettled responses, the recent settlements, the ledger's sum, and the model context since
 * the last compaction. What a reader needs of an older settlement is stored beside its submission
 * (settled-submission.ts). Both scopes drop the model messages before the last compaction's cut,
 * keeping their indices through `modelBase`.
 */
import type { AssistantMessage, ImageContent, Message, TextContent, ToolCall } from '../model/model-types.ts';
import { renderSignal } from './delivered-message.ts';
import type { SettlementError } from '../common/errors.ts';
import type { Batch } from '../store/sql-store.ts';
import {
  type AttachmentRecordRef,
  type ChildConversationRef,
  type ConversationRecord,
  type RecordOf,
  type SettledUsage,
  type SubmissionOutcome,
  isAdmissionRecord,
} from '../store/records.ts';
import { renderCompactionSummary } from '../model/compaction.ts';
import type { DeliveredMessage, Delivery, DeliveryOrigin, DurableObjectActivity, PromptUsage, SubmissionUsage } from '../common/types.ts';
import { addUsage, emptyUsage, usageFromPi } from '../model/usage.ts';
import { isPlainObject } from '../common/values.ts';
import type { ResourceSnapshot } from '../authoring/narration.ts';
import { DOCUMENT_REF_PREFIX } from '../model/documents.ts';
import { skipUnknown } from '../../shared/exhaustive.ts';
import type { StoredSettlement } from './settled-submission.ts';

// ── Client-visible shapes (streaming-protocol.md §8) ────────────────────────────────────────

export type FlueConversationPart =
  | { type: 'text' | 'reasoning'; text: string; state: 'streaming' | 'done' }
  | { type: `data-${string}`; data: unknown }
  | { type: 'file'; mediaType: string; id?: string; size?: number; url?: string; filename?: string }
  | { type: 'dynamic-tool'; toolName: string; toolCallId: string; state: 'input-available'; input: unknown }
  | {
      type: 'dynamic-tool';
      toolName: string;
      toolCallId: string;
      state: 'output-available';
      input: unknown;
      output: unknown;
      durationMs?: number;
    }
  | {
      type: 'dynamic-tool';
      toolName: string;
      toolCallId: string;
      state: 'output-error';
      input: unknown;
      errorText: string;
      durationMs?: number;
    };

export interface FlueConversationMessage {
  id: string;
  role: 'user' | 'assistant' | 'system';
  purpose: 'user' | 'assistant' | 'dispatch' | 'advisory';
  display: 'visible' | 'hidden' | 'diagnostic';
  submissionId?: string;
  turnId?: string;
  signal?: { tagName?: string; attributes?: Record<string, string> };
  settlement?: { outcome: 'failed' | 'aborted' };
  parts: FlueConversationPart[];
  metadata?: Record<string, unknown>;
}

export interface FlueConversationSettlement {
  submissionId: string;
  outcome: SubmissionOutcome;
  error?: SettlementError;
  answeredBySubmissionId?: string;
}

export interface FlueConversationSnapshot {
  v: 1;
  conversationId: string;
  offset: string;
  incarnation?: string;
  messages: FlueConversationMessage[];
  settlements: FlueConversationSettlement[];
}

/** A retained child conversation as inspection shows it. */
export interface ChildConversation {
  conversationId: string;
  /** The conversation whose `task` call opened it (the root's, or another child's). */
  parentConversationId: string;
  agent: string;
  /** The delegating `task` tool call. */
  toolCallId: string;
  /** The child's session name, as its events' `session` says (absent on links from before it was recorded). */
  session?: string;
  /** Whether the parent conversation itself made the call, or a harness scratch conversation of it. */
  via: 'conversation' | 'harness';
  /** The child's transcript, in the shape of the history view. */
  snapshot: FlueConversationSnapshot;
}

export function formatOffset(seq: number): string {
  return seq < 0 ? '-1' : `0000000000000000_${String(seq).padStart(16, '0')}`;
}

const ADVISORY_SIGNALS: Record<string, FlueConversationMessage['display']> = {
  resources: 'diagnostic',
  instructions: 'diagnostic',
  environment: 'diagnostic',
  stream_interrupted: 'hidden',
  stream_continued: 'hidden',
  submission_aborted: 'diagnostic',
  submission_interrupted: 'diagnostic',
};

/** Where the live (or last) response stands, as the log tells it. */
export interface ResponseTail {
  /** A step whose stream started but never completed (a crash or abort mid-stream). */
  openStep?: { stepId: string; messageId: string; submissionId: string; blocks: { kind: 'text' | 'reasoning'; text: string }[] };
  /** The last completed step's tool calls that have no committed results yet. */
  pendingToolCalls?: { stepId: string; messageId: string; submissionId: string; calls: ToolCall[] };
  /** The last committed tool batch asked to end the turn loop. */
  terminated: boolean;
  /** Model-visible input arrived after the last completed step (or its tool results). */
  unread: boolean;
}

export interface ResponseInfo {
  messageId?: string;
  steps: number;
  finishCycles: number;
  data: Map<string, unknown[]>;
  /** Aggregates across every turn and attempt of the response (for useAgentFinish/useResponseFinish). */
  usage: PromptUsage;
  /**
   * What the ledger counts for the response in this conversation: `usage` plus its compaction
   * calls (hooks keep seeing the turns' usage only, as before).
   */
  spent: PromptUsage;
  /** Model calls `spent` sums: each completed or failed step, each summarization call, each `model_spend` call. */
  modelCalls: number;
  toolCalls: { tool: string; isError: boolean }[];
  /** Tool progress lines the log holds for the response, across attempts (the per-response bound counts them). */
  progress: { lines: number; chars: number };
}

/** Where a settled submission's reply lives in the log: the response that answers it, and the batches that hold it. */
export interface ReplySource {
  /** The submission whose assistant message is the reply (the settled one, a leader it joined, or an earlier response). */
  of: string;
  /** The batch before that response's first record (-1: from the start). */
  after: number;
  /** The batch of the settlement. */
  through: number;
}

/** What `read()` and polls answer for a completed submission. */
export interface SubmissionReply {
  text: string;
  data: Record<string, unknown[]>;
  metadata?: Record<string, unknown>;
}

/** How much of the log a fold keeps (see the module comment). */
export type FoldScope = 'transcript' | 'live';

/** Replies of the latest responses a live fold keeps at hand, so the reads that follow a settlement read no log. */
const RECENT_REPLIES = 8;
/**
 * Settlements a live fold keeps (with every one of the latest batch): readers waiting for one see
 * it land without asking the store. Older ones are read from their submission's row.
 */
const RECENT_SETTLEMENTS = 256;

/**
 * A live fold's state as plain JSON: what a checkpoint stores (conversation-checkpoint.ts).
 * Changing what it holds or what a field means changes `CHECKPOINT_VERSION`.
 */
export interface FoldState {
  head: number;
  conversationId: string;
  uid?: string;
  initialData?: unknown;
  messages: FlueConversationMessage[];
  applied: string[];
  startRuns: string[];
  /** Absent in checkpoints from before submissions were admitted in the log, which had none. */
  logAdmitted?: string[];
  tail: ResponseTail;
  ledgerTotal: PromptUsage;
  settledCount: number;
  hostActivity?: DurableObjectActivity;
  lastDelivery?: { origin: DeliveryOrigin; message: DeliveredMessage };
  compactedSinceLastStep: boolean;
  resourceSnapshot?: ResourceSnapshot;
  resourceBaseline?: ResourceSnapshot;
  children: ChildConversationRef[];
  childrenBySubmission: [string, ChildConversationRef[]][];
  currentSubmission?: string;
  attachments: AttachmentRecordRef[];
  documents: AttachmentRecordRef[];
  responses: [string, Omit<ResponseInfo, 'data'> & { data: [string, unknown[]][] }][];
  modelBase: number;
  modelEntries: Message[];
  compaction?: { summary: string; firstKept: number };
  lastAssistantEntry?: AssistantMessage;
  responseStarts: [string, number][];
  lastAssistantSource?: { of: string; after: number };
}

/** A reader's own copy of a kept reply: a plain text reply (the common case) is rebuilt, not cloned. */
function copyReply(reply: SubmissionReply): SubmissionReply {
  const plain = reply.metadata === undefined && Object.keys(reply.data).length === 0;
  return plain ? { text: reply.text, data: {} } : structuredClone(reply);
}

/** A response before any of its records: what the fold starts each response from. */
export function emptyResponse(): ResponseInfo {
  return {
    steps: 0,
    finishCycles: 0,
    data: new Map(),
    usage: emptyUsage(),
    spent: emptyUsage(),
    modelCalls: 0,
    toolCalls: [],
    progress: { lines: 0, chars: 0 },
  };
}

export class Conversation {
  readonly scope: FoldScope;
  head = -1;
  conversationId = '';
  uid: string | undefined;
  initialData: unknown;
  readonly messages: FlueConversationMessage[] = [];
  /** Settlements by submission: every one (transcript scope), the recent ones (live scope). */
  readonly settlements = new Map<string, FlueConversationSettlement>();
  /** Submissions whose delivered input record exists ("input applied"); live scope: unsettled ones only. */
  readonly applied = new Set<string>();
  /** Submissions whose `useAgentStart` seam committed; live scope: unsettled ones only. */
  readonly startRuns = new Set<string>();
  /** Live scope: submissions admitted in the log (their input record is the admission) and not settled yet. */
  readonly logAdmitted = new Set<string>();
  /**
   * Live scope: the settlements of submissions admitted in the log, as a row would keep them, since
   * the checkpoint this fold started from or last wrote: the next checkpoint stores them in a page
   * (`unpagedWritten`), and a fold rebuilt from that checkpoint finds them again in the batches after it.
   */
  private unpaged: { id: string; stored: StoredSettlement }[] = [];
  readonly tail: ResponseTail = { terminated: false, unread: false };
  /** The usage ledger's entries, in settlement order (transcript scope: a live fold keeps their sum only). */
  readonly ledger: SubmissionUsage[] = [];
  /** The sum of every ledger entry. */
  ledgerTotal: PromptUsage = emptyUsage();
  /** How many settlements the log holds (what a reader compares with the rows that keep theirs). */
  settledCount = 0;
  /** The Durable Object activity the settlements recorded, summed (none on Node). */
  hostActivity: DurableObjectActivity | undefined;
  /** The `useDelivery()` cursor: the latest delivered or hook-appended input, with its origin. */
  lastDelivery: Delivery | undefined;
  /** A compaction landed after the last completed step: its usage no longer describes the context. */
  compactedSinceLastStep = false;
  /** The resources last narrated to the model; undefined before first contact. */
  resourceSnapshot: ResourceSnapshot | undefined;
  /** What the prompt's skill catalog and agent roster are rendered from (first contact, compaction). */
  resourceBaseline: ResourceSnapshot | undefined;

  /** Child conversations opened by `task` calls of this conversation (`child_session_retained`). */
  readonly children: ChildConversationRef[] = [];
  /** The same children by the submission whose response opened them (what its ledger entry sums). */
  readonly childrenBySubmission = new Map<string, ChildConversationRef[]>();
  /** The submission of the last step or tool batch: a child retained now belongs to its response. */
  private currentSubmission: string | undefined;
  /** Every image delivered into this conversation, by id: what a `task` call may forward. */
  readonly attachments = new Map<string, AttachmentRecordRef>();
  /** Delivered documents by id, for the model context's document references. */
  readonly documents = new Map<string, AttachmentRecordRef>();

  private readonly byId = new Map<string, FlueConversationMessage>();
  private readonly responses = new Map<string, ResponseInfo>();
  /** The model-visible messages since the last compaction's cut, in log order; `modelEntries[i]` has index `modelBase + i`. */
  private modelEntries: Message[] = [];
  private modelBase = 0;
  private compaction: { summary: string; firstKept: number } | undefined;
  /** The last model-visible assistant step, kept apart so a compaction's cut does not lose it. */
  private lastAssistantEntry: AssistantMessage | undefined;
  /** The batch before each open response's first record (live scope: where its reply will be read from). */
  private readonly responseStarts = new Map<string, number>();
  /** Live scope: where the reply of each recent settlement lives in the log (as long as `settlements` keeps it). */
  private readonly replySources = new Map<string, ReplySource>();
  /** Live scope: the submission of the latest assistant message, the reply of a settlement that has none of its own. */
  private lastAssistantSource: { of: string; after: number } | undefined;
  /**
   * Live scope: the replies of the latest answering responses, by the submission whose message
   * they are (deliveries joined into one share it). Not part of a checkpoint: readers fall back to the log.
   */
  private readonly recentReplies = new Map<string, SubmissionReply>();
  /** The batch being applied. */
  private applying = -1;
  /**
   * Live scope: the message whose reply the last settlement noted, while the records applied since
   * are settlements: a burst's joined deliveries share their leader's reply, kept once.
   */
  private notedReply: FlueConversationMessage | undefined;
  /** Submissions settled by the batch being applied (live scope: what it prunes after the batch). */
  private settledInBatch: string[] = [];

  constructor(scope: FoldScope = 'transcript') {
    this.scope = scope;
  }

  get created(): boolean {
    return this.uid !== undefined;
  }

  apply(batch: Batch): void {
    this.applying = batch.seq;
    this.notedReply = undefined;
    for (const record of batch.records) {
      // Only consecutive settlements can share a noted reply: any other record may change the message.
      if (record.type !== 'submission_settled') this.notedReply = undefined;
      this.applyRecord(record);
    }
    this.head = batch.seq;
    if (this.settledInBatch.length > 0) this.afterSettlements();
  }

  /**
   * Takes records that will open the next batch before that batch is written: the fold knows them,
   * its head stays where the stored log ends, and the batch that carries them is applied (without
   * them) at the next sequence, as if all had come in one.
   */
  hold(records: readonly ConversationRecord[]): void {
    const head = this.head;
    this.apply({ seq: head + 1, records: [...records] });
    this.head = head;
    this.applying = head;
  }

  /** The live fold's state for a checkpoint (shares this fold's objects: serialize it before the next apply). */
  state(): FoldState {
    if (this.scope !== 'live') throw new Error('[flue] Only a live fold is checkpointed.');
    const origin = (this.lastDelivery as { origin?: DeliveryOrigin } | undefined)?.origin;
    return {
      head: this.head,
      conversationId: this.conversationId,
      ...(this.uid === undefined ? {} : { uid: this.uid }),
      ...(this.initialData === undefined ? {} : { initialData: this.initialData }),
      messages: this.messages,
      applied: [...this.applied],
      startRuns: [...this.startRuns],
      ...(this.logAdmitted.size === 0 ? {} : { logAdmitted: [...this.logAdmitted] }),
      tail: this.tail,
      ledgerTotal: this.ledgerTotal,
      settledCount: this.settledCount,
      ...(this.hostActivity === undefined ? {} : { hostActivity: this.hostActivity }),
      ...(this.lastDelivery === undefined ? {} : { lastDelivery: { origin: origin ?? 'http', message: this.lastDelivery } }),
      compactedSinceLastStep: this.compactedSinceLastStep,
      ...(this.resourceSnapshot === undefined ? {} : { resourceSnapshot: this.resourceSnapshot }),
      ...(this.resourceBaseline === undefined ? {} : { resourceBaseline: this.resourceBaseline }),
      children: this.children,
      childrenBySubmission: [...this.childrenBySubmission],
      ...(this.currentSubmission === undefined ? {} : { currentSubmission: this.currentSubmission }),
      attachments: [...this.attachments.values()],
      documents: [...this.documents.values()],
      responses: [...this.responses].map(([id, info]) => [id, { ...info, data: [...info.data] }]),
      modelBase: this.modelBase,
      modelEntries: this.modelEntries,
      ...(this.compaction === undefined ? {} : { compaction: this.compaction }),
      ...(this.lastAssistantEntry === undefined ? {} : { lastAssistantEntry: this.lastAssistantEntry }),
      responseStarts: [...this.responseStarts],
      ...(this.lastAssistantSource === undefined ? {} : { lastAssistantSource: this.lastAssistantSource }),
    };
  }

  /** A live fold from a checkpoint's state (which it takes over: the caller parsed it for this fold alone). */
  static restore(state: FoldState): Conversation {
    const conv = new Conversation('live');
    conv.head = state.head;
    conv.applying = state.head;
    conv.conversationId = state.conversationId;
    conv.uid = state.uid;
    conv.initialData = state.initialData;
    for (const message of state.messages) conv.push(message);
    for (const id of state.applied) conv.applied.add(id);
    for (const id of state.startRuns) conv.startRuns.add(id);
    for (const id of state.logAdmitted ?? []) conv.logAdmitted.add(id);
    Object.assign(conv.tail, state.tail);
    conv.ledgerTotal = state.ledgerTotal;
    conv.settledCount = state.settledCount;
    conv.hostActivity = state.hostActivity;
    conv.lastDelivery = state.lastDelivery === undefined ? undefined : withOrigin(state.lastDelivery.origin, state.lastDelivery.message);
    conv.compactedSinceLastStep = state.compactedSinceLastStep;
    conv.resourceSnapshot = state.resourceSnapshot;
    conv.resourceBaseline = state.resourceBaseline;
    conv.children.push(...state.children);
    for (const [id, refs] of state.childrenBySubmission) conv.childrenBySubmission.set(id, refs);
    conv.currentSubmission = state.currentSubmission;
    for (const ref of state.attachments) conv.attachments.set(ref.id, ref);
    for (const ref of state.documents) conv.documents.set(ref.id, ref);
    for (const [id, info] of state.responses) conv.responses.set(id, { ...info, data: new Map(info.data) });
    conv.modelBase = state.modelBase;
    conv.modelEntries = state.modelEntries;
    conv.compaction = state.compaction;
    conv.lastAssistantEntry = state.lastAssistantEntry;
    for (const [id, after] of state.responseStarts) conv.responseStarts.set(id, after);
    conv.lastAssistantSource = state.lastAssistantSource;
    return conv;
  }

  /** The model context: the compaction summary (if any), then the kept messages. */
  modelContext(): Message[] {
    if (this.compaction === undefined) return this.modelEntries.slice();
    const summary: Message = {
      role: 'user',
      content: renderCompactionSummary(this.compaction.summary),
      timestamp: 0,
    };
    return [summary, ...this.modelEntries];
  }

  /** Index the next model-visible message will get; compaction records point into this space. */
  get modelLength(): number {
    return this.modelBase + this.modelEntries.length;
  }

  /** The visible messages after the last compaction, with their global indices. */
  compactableEntries(): { index: number; message: Message }[] {
    return this.modelEntries.map((message, i) => ({ index: this.modelBase + i, message }));
  }

  /** The text of the last model-visible assistant step: what a delegated task returns. */
  finalAssistantText(): string {
    const entry = this.lastAssistantEntry;
    if (entry === undefined) return '';
    return entry.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('');
  }

  get previousSummary(): string | undefined {
    return this.compaction?.summary;
  }

  /** The response of `leaderId`: the submission it answers (with any deliveries that joined it). */
  response(leaderId: string): ResponseInfo {
    let info = this.responses.get(leaderId);
    if (info === undefined) {
      info = emptyResponse();
      this.responses.set(leaderId, info);
    }
    // Where its records begin: the first record that touches it (the loop may ask for it before
    // any, which must not move the start, so a fold of the same log agrees).
    if (this.applying > this.head && !this.responseStarts.has(leaderId)) this.responseStarts.set(leaderId, this.applying - 1);
    return info;
  }

  /** The response of `leaderId` if this conversation has seen any of it (never creates one). */
  responseIfAny(leaderId: string): ResponseInfo | undefined {
    return this.responses.get(leaderId);
  }

  /**
   * The client-visible transcript (transcript scope only: a live fold does not hold it). `owned`:
   * the caller owns this fold and drops it, so the answer may share its objects instead of a copy.
   */
  snapshot(incarnation?: string, owned = false): FlueConversationSnapshot {
    if (this.scope === 'live') throw new Error('[flue] A live fold holds no transcript: fold the log with a transcript fold.');
    const snapshot = {
      v: 1 as const,
      conversationId: this.conversationId,
      offset: formatOffset(this.head),
      ...(incarnation === undefined ? {} : { incarnation }),
      messages: this.messages,
      settlements: [...this.settlements.values()],
    };
    return owned ? snapshot : structuredClone(snapshot);
  }

  /** The reply of one settled submission, from the messages this fold holds (a transcript fold, or a live one's recent replies). */
  reply(submissionId: string): SubmissionReply {
    const recent = this.recentReply(submissionId);
    if (recent !== undefined) return copyReply(recent);
    // A live fold holds open responses' messages only: a settlement it has no reply for had none.
    if (this.scope === 'live') return { text: '', data: {} };
    const settlement = this.settlements.get(submissionId);
    const own = this.lastAssistant((m) => m.submissionId === submissionId);
    const answeredBy = settlement?.answeredBySubmissionId;
    const message =
      own ??
      (answeredBy === undefined ? undefined : this.lastAssistant((m) => m.submissionId === answeredBy)) ??
      this.lastAssistant(() => true);
    if (message === undefined) return { text: '', data: {} };
    return this.replyOf(message);
  }

  /**
   * Live scope: where the reply of a recent settlement lives in the log, when this fold no longer
   * holds it (undefined: `reply()` answers from memory).
   */
  replySource(submissionId: string): ReplySource | undefined {
    if (this.scope === 'transcript' || this.recentReply(submissionId) !== undefined) return undefined;
    return this.replySources.get(submissionId);
  }

  /**
   * What the submission rows keep of the settlements in `records`, the batch `seq` about to be
   * appended after this fold's head (settled-submission.ts). A settlement batch opens no assistant
   * message, so where each reply lives is the same before the batch as while it is applied.
   */
  settlementsToStore(records: readonly ConversationRecord[], seq: number): Map<string, StoredSettlement> {
    const stored = new Map<string, StoredSettlement>();
    for (const record of records) {
      if (record.type !== 'submission_settled') continue;
      const earlier = (id: string) => {
        const reply = stored.get(id)?.reply;
        return reply === undefined ? this.replySources.get(id) : { ...reply, through: seq };
      };
      const reply = this.locateReply(record.submissionId, record.answeredBySubmissionId, seq, earlier)?.source;
      stored.set(record.submissionId, {
        seq,
        index: stored.size,
        outcome: record.outcome,
        ...(record.error === undefined ? {} : { error: record.error }),
        ...(record.answeredBySubmissionId === undefined ? {} : { answeredBySubmissionId: record.answeredBySubmissionId }),
        usage: this.ledgerEntryOf(record),
        ...(reply === undefined ? {} : { reply: { of: reply.of, after: reply.after } }),
      });
    }
    return stored;
  }

  /** The settlements noted so far are in the page a checkpoint wrote (`unpagedSettlements`). */
  unpagedWritten(): void {
    this.unpaged = [];
  }

  /** A settlement of a submission admitted in the log that no page holds yet, as a row would keep it. */
  unpagedSettlement(submissionId: string): StoredSettlement | undefined {
    return this.unpaged.find((entry) => entry.id === submissionId)?.stored;
  }

  /** Every settlement no page holds yet. */
  get unpagedSettlements(): readonly { id: string; stored: StoredSettlement }[] {
    return this.unpaged;
  }

  private recentReply(submissionId: string): SubmissionReply | undefined {
    const source = this.replySources.get(submissionId);
    return source === undefined ? undefined : this.recentReplies.get(source.of);
  }

  private replyOf(message: FlueConversationMessage): SubmissionReply {
    const text = message.parts.flatMap((part) => (part.type === 'text' ? [(part as { text: string }).text] : [])).join('\n\n');
    const response = message.submissionId === undefined ? undefined : this.responses.get(message.submissionId);
    const data = Object.fromEntries(response?.data ?? []);
    return message.metadata === undefined ? { text, data } : { text, data, metadata: message.metadata };
  }

  /**
   * Live scope, at a settlement: note where its reply lives (and keep it at hand while it is
   * recent), before the batch's end prunes what answered it.
   */
  private noteReply(submissionId: string, answeredBy: string | undefined): void {
    const located = this.locateReply(submissionId, answeredBy, this.applying, (id) => this.replySources.get(id));
    if (located === undefined) return;
    const { source, message } = located;
    this.replySources.set(submissionId, source);
    if (message !== undefined && message !== this.notedReply) {
      this.notedReply = message;
      this.recentReplies.delete(source.of);
      this.recentReplies.set(source.of, copyReply(this.replyOf(message)));
      for (const old of this.recentReplies.keys()) {
        if (this.recentReplies.size <= RECENT_REPLIES) break;
        this.recentReplies.delete(old);
      }
    }
  }

  /**
   * Where the reply of a submission settled in batch `through` lives: its own response's last
   * assistant message, else the one of the response that answered it, else (no message of either
   * in this fold) where `earlier` says that response's reply lives, else the latest assistant message.
   */
  private locateReply(
    submissionId: string,
    answeredBy: string | undefined,
    through: number,
    earlier: (submissionId: string) => ReplySource | undefined,
  ): { source: ReplySource; message?: FlueConversationMessage } | undefined {
    const own = this.lastAssistant((m) => m.submissionId === submissionId);
    const leader = answeredBy === undefined ? undefined : this.lastAssistant((m) => m.submissionId === answeredBy);
    const message = own ?? leader;
    if (message?.submissionId !== undefined) {
      return { source: { of: message.submissionId, after: this.responseStarts.get(message.submissionId) ?? -1, through }, message };
    }
    const answering = answeredBy === undefined ? undefined : earlier(answeredBy);
    if (answering !== undefined) return { source: answering };
    if (this.lastAssistantSource !== undefined) return { source: { ...this.lastAssistantSource, through } };
    return undefined;
  }

  /** Live scope, after a batch that settled submissions: what only their responses needed goes. */
  private afterSettlements(): void {
    const settled = this.settledInBatch;
    this.settledInBatch = [];
    if (this.scope === 'transcript') return;
    for (const id of settled) {
      this.responses.delete(id);
      this.responseStarts.delete(id);
      this.childrenBySubmission.delete(id);
      this.applied.delete(id);
      this.startRuns.delete(id);
    }
    // Older settlements are read from their submissions' rows (settled-submission.ts).
    for (const old of this.settlements.keys()) {
      if (this.settlements.size <= Math.max(RECENT_SETTLEMENTS, settled.length)) break;
      this.settlements.delete(old);
      this.replySources.delete(old);
    }
    const closed = new Set(settled);
    const kept = this.messages.filter((m) => m.submissionId !== undefined && !closed.has(m.submissionId));
    if (kept.length === this.messages.length) return;
    this.messages.length = 0;
    this.byId.clear();
    for (const message of kept) this.push(message);
  }

  private lastAssistant(match: (message: FlueConversationMessage) => boolean): FlueConversationMessage | undefined {
    for (let i = this.messages.length - 1; i >= 0; i--) {
      const message = this.messages[i]!;
      if (message.role === 'assistant' && match(message)) return message;
    }
    return undefined;
  }

  private push(message: FlueConversationMessage): void {
    // A live fold holds only assistant messages, the ones later records change (until settlement).
    if (this.scope === 'live' && message.role !== 'assistant') return;
    this.messages.push(message);
    this.byId.set(message.id, message);
  }

  private applyRecord(record: ConversationRecord): void {
    if (this.scope === 'live' && isAdmissionRecord(record)) this.logAdmitted.add(record.submissionId);
    switch (record.type) {
      case 'conversation_created':
        this.conversationId = record.conversationId;
        this.uid = record.uid;
        this.initialData = record.initialData;
        return;
      case 'user_message':
        return this.applyUser(record);
      case 'signal':
        return this.applySignal(record);
      case 'assistant_started':
        return this.applyStarted(record);
      case 'assistant_delta':
        return this.applyDelta(record);
      case 'assistant_completed':
        return this.applyCompleted(record);
      case 'tool_results':
        return this.applyToolResults(record);
      case 'tool_progress': {
        // Stream content only: no message part, no model context; counted for the per-response bound.
        const progress = this.response(record.submissionId).progress;
        progress.lines += record.lines.length;
        for (const line of record.lines) progress.chars += JSON.stringify(line).length;
        return;
      }
      case 'model_spend': {
        const info = this.response(record.submissionId);
        info.spent = addUsage(info.spent, record.usage);
        info.modelCalls += record.modelCalls;
        return;
      }
      case 'agent_start_run':
        this.startRuns.add(record.submissionId);
        return;
      case 'agent_finish_cycle':
        this.response(record.submissionId).finishCycles++;
        return;
      case 'data_write':
        return this.applyDataWrite(record);
      case 'response_metadata':
        return this.applyMetadata(record);
      case 'resource_snapshot':
        // Records from before the baseline existed carried `resources` (name → digest) only; they
        // are ignored, so the next turn takes a fresh baseline silently.
        if (record.snapshot === undefined) return;
        this.resourceSnapshot = record.snapshot;
        if (record.baseline) this.resourceBaseline = record.snapshot;
        return;
      case 'compaction':
        this.applyCompaction(record.summary, record.firstKept);
        this.compactedSinceLastStep = true;
        if (record.submissionId !== undefined) {
          const info = this.response(record.submissionId);
          info.spent = addUsage(info.spent, record.usage ?? emptyUsage());
          info.modelCalls += record.modelCalls ?? 1;
        }
        return;
      case 'child_session_retained': {
        this.children.push(record.child);
        if (this.currentSubmission === undefined) return;
        const refs = this.childrenBySubmission.get(this.currentSubmission) ?? [];
        refs.push(record.child);
        this.childrenBySubmission.set(this.currentSubmission, refs);
        return;
      }
      case 'submission_settled':
        this.settlements.set(record.submissionId, {
          submissionId: record.submissionId,
          outcome: record.outcome,
          ...(record.error === undefined ? {} : { error: record.error }),
          ...(record.answeredBySubmissionId === undefined ? {} : { answeredBySubmissionId: record.answeredBySubmissionId }),
        });
        if (this.scope === 'live') this.noteReply(record.submissionId, record.answeredBySubmissionId);
        if (this.scope === 'live' && this.logAdmitted.delete(record.submissionId)) this.unpage(record);
        this.settledInBatch.push(record.submissionId);
        this.settledCount++;
        return this.applyLedger(record);
      default:
        return skipUnknown(record);
    }
  }

  /**
   * The model context keeps the messages from `firstKept` on: older ones are dropped (nothing reads
   * them again). A cut before what this fold still holds keeps what it holds.
   */
  private applyCompaction(summary: string, firstKept: number): void {
    const cut = Math.min(Math.max(firstKept, this.modelBase), this.modelLength);
    this.modelEntries = this.modelEntries.slice(cut - this.modelBase);
    this.modelBase = cut;
    this.compaction = { summary, firstKept: cut };
  }

  /**
   * Notes the settlement of a submission admitted in the log as its row would keep it (what
   * `settlementsToStore` makes for a row): the reply where `noteReply` just located it.
   */
  private unpage(record: RecordOf<'submission_settled'>): void {
    const reply = this.replySources.get(record.submissionId);
    this.unpaged.push({
      id: record.submissionId,
      stored: {
        seq: this.applying,
        index: this.settledInBatch.length,
        outcome: record.outcome,
        ...(record.error === undefined ? {} : { error: record.error }),
        ...(record.answeredBySubmissionId === undefined ? {} : { answeredBySubmissionId: record.answeredBySubmissionId }),
        usage: this.ledgerEntryOf(record),
        ...(reply === undefined ? {} : { reply: { of: reply.of, after: reply.after } }),
      },
    });
  }

  /** A settlement's ledger entry; one from before the ledger counts what this log shows of its response. */
  private ledgerEntryOf(record: RecordOf<'submission_settled'>): SettledUsage {
    if (record.usage !== undefined) return record.usage;
    const info = this.responses.get(record.submissionId);
    return { usage: info?.spent ?? emptyUsage(), modelCalls: info?.modelCalls ?? 0, toolCalls: info?.toolCalls.length ?? 0, attempts: 0 };
  }

  private applyLedger(record: RecordOf<'submission_settled'>): void {
    const usage = this.ledgerEntryOf(record);
    if (this.scope === 'transcript') this.ledger.push({ submissionId: record.submissionId, ...structuredClone(usage) });
    this.ledgerTotal = addUsage(this.ledgerTotal, usage.usage);
    const host = usage.durableObject;
    if (host !== undefined) {
      const sum = this.hostActivity ?? { rowsWritten: 0, alarmsSet: 0, rpcsServed: 0 };
      this.hostActivity = {
        rowsWritten: sum.rowsWritten + host.rowsWritten,
        alarmsSet: sum.alarmsSet + host.alarmsSet,
        rpcsServed: sum.rpcsServed + host.rpcsServed,
      };
    }
  }

  private markUnread(): void {
    this.tail.unread = true;
    this.tail.terminated = false;
  }

  private applyUser(record: RecordOf<'user_message'>): void {
    this.applied.add(record.submissionId);
    const images = (record.attachments ?? []).filter((attachment) => attachment.type === 'image');
    for (const image of images) this.attachments.set(image.id, image);
    for (const attachment of record.attachments ?? []) if (attachment.type === 'document') this.documents.set(attachment.id, attachment);
    // The model learns each image's id from a manifest after the text, so it can hand images on
    // to a delegated task (`task` tool, `attachments: [{ id }]`).
    const content: (TextContent | ImageContent)[] = [{ type: 'text', text: record.body + attachmentManifest(images) }];
    for (const attachment of record.attachments ?? []) {
      content.push(
        attachment.type === 'image'
          ? // Bytes live in the attachment store; the response loop loads them when it calls the model.
            { type: 'image', data: `${ATTACHMENT_DATA_PREFIX}${attachment.id}`, mimeType: attachment.mimeType }
          : // The response loop turns this into the model API's document block (or a placeholder).
            { type: 'text', text: `${DOCUMENT_REF_PREFIX}${attachment.id}` },
      );
    }
    // A live fold holds no delivered messages (push() would drop it): none is built for it.
    if (this.scope !== 'live') this.push(userMessageOf(record));
    this.lastDelivery = withOrigin(recordedOrigin(record.deliveryOrigin), {
      kind: 'user',
      body: record.body,
      ...(record.attachments === undefined
        ? {}
        : {
            attachments: record.attachments.map((a) => ({
              type: a.type,
              data: `${ATTACHMENT_DATA_PREFIX}${a.id}`,
              mimeType: a.mimeType,
              ...(a.filename === undefined ? {} : { filename: a.filename }),
            })),
          }),
    });
    this.modelEntries.push({ role: 'user', content: content.length === 1 ? record.body : content, timestamp: Date.parse(record.ts) });
    this.markUnread();
  }

  private applySignal(record: RecordOf<'signal'>): void {
    if (record.submissionId !== undefined && record.origin === 'delivery') this.applied.add(record.submissionId);
    if (record.origin !== 'framework') {
      this.lastDelivery = withOrigin(record.origin === 'append' ? 'agent' : recordedOrigin(record.deliveryOrigin), {
        kind: 'signal',
        type: record.signalType,
        body: record.body,
        ...(record.attributes === undefined ? {} : { attributes: { ...record.attributes } }),
        ...(record.tagName === undefined ? {} : { tagName: record.tagName }),
      });
    }
    if (this.scope !== 'live') this.push(signalMessageOf(record));
    this.modelEntries.push({
      role: 'user',
      content: renderSignal({ type: record.signalType, body: record.body, attributes: record.attributes, tagName: record.tagName }),
      timestamp: Date.parse(record.ts),
    });
    // Terminal advisories close a response; they are context for the next one, not unread input.
    if (record.signalType === 'submission_aborted' || record.signalType === 'submission_interrupted') return;
    this.markUnread();
  }

  private applyStarted(record: RecordOf<'assistant_started'>): void {
    this.currentSubmission = record.submissionId;
    const info = this.response(record.submissionId);
    info.steps++;
    if (info.messageId === undefined) info.messageId = record.messageId;
    if (!this.byId.has(record.messageId)) {
      const message: FlueConversationMessage = {
        id: record.messageId,
        role: 'assistant',
        purpose: 'assistant',
        display: 'visible',
        submissionId: record.submissionId,
        parts: [],
      };
      if (record.metadata !== undefined) message.metadata = structuredClone(record.metadata);
      this.push(message);
      this.lastAssistantSource = { of: record.submissionId, after: this.responseStarts.get(record.submissionId) ?? -1 };
    }
    this.tail.openStep = { stepId: record.stepId, messageId: record.messageId, submissionId: record.submissionId, blocks: [] };
  }

  private applyDelta(record: RecordOf<'assistant_delta'>): void {
    const open = this.tail.openStep;
    if (open === undefined || open.stepId !== record.stepId) return;
    const block = open.blocks[record.block];
    if (block === undefined) open.blocks[record.block] = { kind: record.kind, text: record.delta };
    else block.text += record.delta;
    const message = this.byId.get(open.messageId);
    if (message !== undefined) appendDeltaPart(message, record.kind, record.delta);
  }

  private applyCompleted(record: RecordOf<'assistant_completed'>): void {
    this.currentSubmission = record.submissionId;
    const open = this.tail.openStep;
    this.tail.openStep = undefined;
    this.compactedSinceLastStep = false;
    const message = this.byId.get(record.messageId);
    const calls = record.message.content.filter((block): block is ToolCall => block.type === 'toolCall');
    if (message !== undefined) {
      // A step with no delta was written whole (turn-stream.ts): its text is its completed message's.
      if (open?.stepId === record.stepId && open.blocks.length === 0) {
        for (const { kind, text } of stepText(record.message)) appendDeltaPart(message, kind, text);
      }
      closeStreamingParts(message);
    }
    // Tool and data parts are the transcript's: a live fold's messages only answer replies (text, metadata).
    if (message !== undefined && this.scope === 'transcript') {
      for (const call of calls) {
        message.parts.push({
          type: 'dynamic-tool',
          toolName: call.name,
          toolCallId: call.id,
          state: 'input-available',
          input: call.arguments,
        });
      }
    }
    const info = this.response(record.submissionId);
    const usage = usageFromPi(record.message.usage);
    info.usage = addUsage(info.usage, usage);
    info.spent = addUsage(info.spent, usage);
    info.modelCalls++;
    const modelMessage = modelVisibleAssistant(record.message);
    if (modelMessage !== undefined) {
      this.modelEntries.push(modelMessage);
      this.lastAssistantEntry = modelMessage;
    }
    const interrupted = record.message.stopReason === 'aborted' || record.message.stopReason === 'error';
    this.tail.pendingToolCalls =
      calls.length > 0 && !interrupted
        ? { stepId: record.stepId, messageId: record.messageId, submissionId: record.submissionId, calls }
        : undefined;
    // An interrupted step answered nothing: whatever was unread stays unread.
    if (!interrupted) this.tail.unread = false;
    this.tail.terminated = false;
  }

  private applyToolResults(record: RecordOf<'tool_results'>): void {
    const message = this.byId.get(record.messageId);
    const info = this.response(record.submissionId);
    for (const outcome of record.outcomes) {
      info.toolCalls.push({ tool: outcome.toolName, isError: outcome.isError });
      if (message !== undefined && this.scope === 'transcript') {
        const index = message.parts.findIndex(
          (p) => p.type === 'dynamic-tool' && (p as { toolCallId: string }).toolCallId === outcome.toolCallId,
        );
        const input = index >= 0 ? (message.parts[index] as { input: unknown }).input : {};
        const part: FlueConversationPart = outcome.isError
          ? {
              type: 'dynamic-tool',
              toolName: outcome.toolName,
              toolCallId: outcome.toolCallId,
              state: 'output-error',
              input,
              errorText: outcome.content,
            }
          : {
              type: 'dynamic-tool',
              toolName: outcome.toolName,
              toolCallId: outcome.toolCallId,
              state: 'output-available',
              input,
              output: outcome.output ?? null,
            };
        if (outcome.durationMs !== undefined) (part as { durationMs?: number }).durationMs = outcome.durationMs;
        if (index >= 0) message.parts[index] = part;
        else message.parts.push(part);
      }
      this.modelEntries.push({
        role: 'toolResult',
        toolCallId: outcome.toolCallId,
        toolName: outcome.toolName,
        content: [{ type: 'text', text: outcome.content }],
        isError: outcome.isError,
        timestamp: Date.parse(record.ts),
      });
    }
    this.tail.pendingToolCalls = undefined;
    this.tail.terminated = record.outcomes.length > 0 && record.outcomes.every((o) => o.terminate === true);
    this.tail.unread = !this.tail.terminated;
  }

  private applyDataWrite(record: RecordOf<'data_write'>): void {
    const info = this.response(record.submissionId);
    const writes = info.data.get(record.name) ?? [];
    writes.push(record.data);
    info.data.set(record.name, writes);
    const message = this.byId.get(record.messageId);
    if (message === undefined || this.scope === 'live') return;
    const type = `data-${record.name}` as const;
    const existing = message.parts.find((p) => p.type === type) as { data: unknown } | undefined;
    if (existing !== undefined) existing.data = record.data;
    else message.parts.push({ type, data: record.data });
  }

  private applyMetadata(record: RecordOf<'response_metadata'>): void {
    const message = this.byId.get(record.messageId);
    if (message === undefined) return;
    message.metadata = deepMerge(message.metadata ?? {}, record.metadata);
  }
}

/** The model-facing list of a user message's images: `<attachments>` with one `<image id mimeType />` each. */
function attachmentManifest(images: readonly AttachmentRecordRef[]): string {
  if (images.length === 0) return '';
  const attribute = (value: string) => value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
  const lines = images.map((image) => `<image id="${attribute(image.id)}" mimeType="${attribute(image.mimeType)}" />`);
  return `\n\n<attachments>\n${lines.join('\n')}\n</attachments>`;
}

/**
 * `message` with `origin` as a non-enumerable property: it rides along wherever the message object
 * goes, while equality checks, spreads and JSON still see only the delivered message.
 */
export function withOrigin(origin: DeliveryOrigin, message: DeliveredMessage): Delivery {
  return Object.defineProperty(message, 'origin', { value: origin, enumerable: false }) as Delivery;
}

/**
 * Records written before origins were kept carry none; they count as `'http'`, the least trusted
 * origin, so code that grants something only to `'app'` deliveries stays closed for them.
 */
function recordedOrigin(origin: DeliveryOrigin | undefined): DeliveryOrigin {
  return origin ?? 'http';
}

/** Placeholder image data pointing into the attachment store (see AttachmentRecordRef). */
export const ATTACHMENT_DATA_PREFIX = 'flue-attachment:';

/** The client message of a delivered user message; a pure function of its record. */
export function userMessageOf(record: RecordOf<'user_message'>): FlueConversationMessage {
  const parts: FlueConversationPart[] = [{ type: 'text', text: record.body, state: 'done' }];
  for (const attachment of record.attachments ?? []) {
    parts.push({
      type: 'file',
      mediaType: attachment.mimeType,
      id: attachment.id,
      size: attachment.size,
      ...(attachment.filename === undefined ? {} : { filename: attachment.filename }),
    });
  }
  return { id: record.messageId, role: 'user', purpose: 'user', display: 'visible', submissionId: record.submissionId, parts };
}

/** The client message of a signal (delivered, appended or framework-written); pure. */
export function signalMessageOf(record: RecordOf<'signal'>): FlueConversationMessage {
  const advisory = record.origin === 'framework' ? ADVISORY_SIGNALS[record.signalType] : undefined;
  const message: FlueConversationMessage = {
    id: record.messageId,
    role: 'system',
    purpose: advisory === undefined ? 'dispatch' : 'advisory',
    display: advisory ?? 'diagnostic',
    parts: [{ type: 'text', text: record.body, state: 'done' }],
  };
  if (record.submissionId !== undefined) message.submissionId = record.submissionId;
  if (advisory === undefined || record.attributes !== undefined || record.tagName !== undefined) {
    message.signal = {
      ...(record.tagName === undefined ? {} : { tagName: record.tagName }),
      ...(record.attributes === undefined ? {} : { attributes: record.attributes }),
    };
  }
  if (record.signalType === 'submission_aborted') message.settlement = { outcome: 'aborted' };
  if (record.signalType === 'submission_interrupted') message.settlement = { outcome: 'failed' };
  return message;
}

/**
 * The text a step's blocks stream as deltas (text and reasoning), in block order. A step written
 * whole in one batch keeps its text once, in its completed message, with no delta (turn-stream.ts):
 * the fold and the stream's projection give a step that had no delta its text from here, as if it
 * had streamed. A step that had deltas had them all.
 */
export function stepText(message: AssistantMessage): StreamedText[] {
  return message.content.flatMap((block) => {
    const text = streamedText(block);
    return text === undefined ? [] : [text];
  });
}

/** What a block of an assistant message streams as deltas: its text or its thinking, when it has any. */
export interface StreamedText {
  kind: 'text' | 'reasoning';
  text: string;
}

export function streamedText(block: AssistantMessage['content'][number]): StreamedText | undefined {
  if (block.type === 'text' && block.text !== '') return { kind: 'text', text: block.text };
  if (block.type === 'thinking' && block.thinking !== '') return { kind: 'reasoning', text: block.thinking };
  return undefined;
}

function appendDeltaPart(message: FlueConversationMessage, kind: 'text' | 'reasoning', delta: string): void {
  const last = message.parts[message.parts.length - 1] as { type: string; state?: string; text?: string } | undefined;
  if (last !== undefined && last.type === kind && last.state === 'streaming') {
    last.text += delta;
    return;
  }
  closeStreamingParts(message);
  message.parts.push({ type: kind, text: delta, state: 'streaming' });
}

function closeStreamingParts(message: FlueConversationMessage): void {
  for (const part of message.parts) {
    if ((part.type === 'text' || part.type === 'reasoning') && part.state === 'streaming') part.state = 'done';
  }
}

/**
 * Completed steps go to the model as they are. An interrupted step keeps only its text, so the
 * model can continue from what it already said; a failed step with nothing said is dropped.
 */
function modelVisibleAssistant(message: AssistantMessage): AssistantMessage | undefined {
  if (message.stopReason !== 'aborted' && message.stopReason !== 'error') return message;
  const text = message.content.filter((block): block is TextContent => block.type === 'text' && block.text.length > 0);
  if (text.length === 0) return undefined;
  return { ...message, content: text, stopReason: 'stop' };
}

const DROPPED_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** Deep merge for response metadata: later keys win, undefined skipped, prototype keys dropped. */
export function deepMerge(target: Record<string, unknown>, source: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...target };
  for (const [key, value] of Object.entries(source)) {
    if (DROPPED_KEYS.has(key) || value === undefined) continue;
    const previous = out[key];
    // Nested objects go through the same rules, so no depth can smuggle prototype keys in.
    out[key] = isPlainObject(value) ? deepMerge(isPlainObject(previous) ? previous : {}, value) : structuredClone(value);
  }
  return out;
}
