/**
 * Public types shared by several modules: delivered messages, receipts and replies, the harness
 * surface, usage. Types owned by one concept (tools, hooks) live beside that concept.
 */
import type * as v from 'valibot';

// ── Delivered messages (seed 004, delivery.md §1) ─────────────────────────────────────────────

export interface PromptImage {
  type: 'image';
  data: string; // base64
  mimeType: string;
}

export interface PromptDocument {
  type: 'document';
  data: string; // base64
  mimeType: string; // 'application/pdf'
}

export type DeliveredAttachment = (PromptImage | PromptDocument) & { filename?: string };

export type DeliveredMessage =
  | { kind: 'user'; body: string; attachments?: DeliveredAttachment[] }
  | {
      kind: 'signal';
      type: string;
      body: string;
      attributes?: Record<string, string>;
      tagName?: string;
    };

export type DeliveredMessageInput = string | DeliveredMessage;

/**
 * Who handed a delivery to the runtime, as `useDelivery().origin` reports it:
 * - `'app'`: trusted server code — `dispatch()`, `init().dispatch()`, the Workflow and cron helpers,
 *   and channel routes, which verify a webhook's sender before dispatching;
 * - `'http'`: a client of `createAgentRouter()`, whoever it is (the router carries no auth);
 * - `'agent'`: the agent itself — `useDispatchMessage()`, a hook's `append`, a delegated task's prompt,
 *   and a `useTimer()` timer firing (a `timer` signal).
 * Stored with the submission, so a recovered or replayed delivery keeps it.
 */
export type DeliveryOrigin = 'app' | 'http' | 'agent';

/**
 * What `useDelivery()` returns: the delivered message plus its `origin`. `origin` is a
 * non-enumerable property, so the value still compares, spreads and serializes as the plain
 * message it was delivered as.
 */
export type Delivery = DeliveredMessage & { readonly origin: DeliveryOrigin };

/** When a `useTimer()` timer is due: exactly one of `at` or `inMs`, and what its signal's body says. */
export interface TimerOptions {
  /** An absolute time: a `Date`, epoch milliseconds or an ISO 8601 string (a past time fires at once). */
  at?: Date | number | string;
  /** Milliseconds from now. */
  inMs?: number;
  /** The body of the `timer` signal it delivers (at most 64 KiB); empty by default. */
  body?: string;
}

/** A pending timer of the conversation. */
export interface ScheduledTimer {
  readonly name: string;
  /** New for each schedule; the `timerId` attribute of the signal it delivers. */
  readonly id: string;
  /** When it is due, as an ISO 8601 string. */
  readonly dueAt: string;
  readonly body: string;
}

/**
 * What `useTimer()` returns. A timer wakes the agent's own conversation: when it is due, a signal
 * `{ kind: 'signal', type: 'timer', body, attributes: { name, timerId, dueAt } }` is delivered (read
 * it with `useDelivery()`; its origin is `'agent'`, and no caller can send a `timer` signal).
 */
export interface TimerHandle {
  /** The conversation's pending timers when the agent rendered, earliest first. */
  readonly pending: readonly ScheduledTimer[];
  /**
   * Schedules the timer `name`, replacing a pending one of that name. Recorded with the response's
   * next step, so a retried response never schedules it twice. Not callable while rendering.
   */
  schedule(name: string, options: TimerOptions): ScheduledTimer;
  /** Cancels the pending timer `name`; true when one was pending. Not callable while rendering. */
  cancel(name: string): boolean;
}

/** What `useAgentStart`/`useAgentFinish` may append: a signal, validated like a delivered one. */
export interface AgentAppendMessage {
  kind: 'signal';
  type: string;
  body: string;
  attributes?: Record<string, string>;
  tagName?: string;
}

// ── Dispatch, receipts, replies (delivery.md §2–§8) ───────────────────────────────────────────

export interface AgentDispatchRequest {
  id: string;
  message: DeliveredMessageInput;
  initialData?: unknown;
  uid?: string | null;
  idempotencyKey?: string;
}

export interface DispatchReceipt {
  submissionId: string;
  acceptedAt: string;
  uid: string;
  deduplicated?: true;
}

export interface AgentReply {
  text: string;
  data: Record<string, unknown[]>;
  metadata?: Record<string, unknown>;
  uid?: string;
  submissionId: string;
}

export interface AgentInstanceInfo {
  id: string;
  uid?: string;
}

// ── Logging ───────────────────────────────────────────────────────────────────────────────────

export interface FlueLogger {
  info(message: string, attributes?: Record<string, unknown>): void;
  warn(message: string, attributes?: Record<string, unknown>): void;
  error(message: string, attributes?: Record<string, unknown>): void;
}

// ── Models ────────────────────────────────────────────────────────────────────────────────────

export type ThinkingLevel = 'off' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max';

export interface CompactionConfig {
  reserveTokens?: number;
  keepRecentTokens?: number;
  model?: string;
  /**
   * The model's context window in tokens, for a model whose metadata has none (a Workers AI model,
   * a custom provider's model declared without one) or a wrong one. Default: the model's metadata,
   * else 32,768. Compaction and the fit of every request to the window use it.
   */
  contextWindow?: number;
}

export interface PromptUsage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  totalTokens: number;
  cost: { input: number; output: number; cacheRead: number; cacheWrite: number; total: number };
}

/** What one settled submission spent, as its settlement recorded it (`getUsage()`). */
export interface SubmissionUsage {
  submissionId: string;
  /** Every model call of the submission's response: each turn of each attempt, retries, failed calls, compaction, delegated tasks. */
  usage: PromptUsage;
  modelCalls: number;
  toolCalls: number;
  attempts: number;
  /** On Cloudflare only: what the Durable Object counted of itself since the previous settlement, recorded with this one. */
  durableObject?: DurableObjectActivity;
}

/** A conversation's ledger: the sum of its settled submissions, and each of them in settlement order. */
export interface ConversationUsage {
  total: PromptUsage;
  submissions: SubmissionUsage[];
  /** On Cloudflare only: what the conversation's Durable Object counts of itself since it was created. */
  durableObject?: DurableObjectCounters;
}

/** What a Durable Object does that Cloudflare bills, counted by the object itself. */
export interface DurableObjectActivity {
  /** SQL rows written, index entries included (workerd's per-statement count). */
  rowsWritten: number;
  /** Alarms set (each `setAlarm()`). */
  alarmsSet: number;
  /** Worker → Durable Object RPC calls served. */
  rpcsServed: number;
}

/** A Durable Object's counts since it was created, and what it stores now. */
export interface DurableObjectCounters extends DurableObjectActivity {
  /** The database's size now, in bytes. */
  bytesStored: number;
}

export interface PromptModel {
  provider: string;
  id: string;
}

// ── Harness (seed 004) ────────────────────────────────────────────────────────────────────────

export interface PromptOptions<S extends v.GenericSchema | undefined = undefined> {
  result?: S;
  // Typed loosely here to keep this module free of a cycle with define-tool.ts.
  tools?: readonly { readonly name: string }[];
  model?: string;
  thinkingLevel?: ThinkingLevel;
  signal?: AbortSignal;
  images?: PromptImage[];
  documents?: PromptDocument[];
}

export interface PromptResponse {
  text: string;
  usage: PromptUsage;
  model: PromptModel;
}

export interface PromptResultResponse<T> {
  data: T;
  usage: PromptUsage;
  model: PromptModel;
}

export interface CallHandle<T> extends Promise<T> {
  readonly signal: AbortSignal;
  abort(reason?: unknown): void;
}

export type { Sandbox } from '../sandbox/types.ts';
import type { Sandbox } from '../sandbox/types.ts';

export interface FlueHarness {
  readonly name: string;
  prompt<S extends v.GenericSchema>(
    text: string,
    options: PromptOptions<S> & { result: S },
  ): CallHandle<PromptResultResponse<v.InferOutput<S>>>;
  prompt(text: string, options?: PromptOptions): CallHandle<PromptResponse>;
  compact(): Promise<void>;
  readonly sandbox: Sandbox;
}
