/**
 * The writes one response makes to its conversation: the only way a part of the loop (the turn
 * stream, the tool batch, task runs, the render scope) writes. Bound to one conversation and to
 * the response's pending `usePersistentState` writes; every write goes through the conversation
 * writer, one transaction each.
 */
import type { ChildBirth, ConversationWriter, SettlementWrite, StepMemo } from './conversation-writer.ts';
import type { LiveConversation } from './conversation-view.ts';
import type { PendingState } from './pending-state.ts';
import type { PendingSpend } from './pending-spend.ts';
import type { PendingTimers } from './pending-timers.ts';
import { ProgressBudget } from './tool-progress.ts';
import type { Following } from './flush-policy.ts';
import type { ConversationRecord } from '../store/records.ts';
import type { ConversationKey } from '../store/conversation-key.ts';

export class ResponseWriter {
  private readonly writer: ConversationWriter;
  private readonly live: LiveConversation;
  private readonly state: PendingState;
  private readonly spend: PendingSpend | undefined;
  private readonly timers: PendingTimers;
  /** Whether readers follow the conversation's log, for what streams (flush-policy.ts). */
  readonly following: Following;
  /** What the response's tool calls may still add as progress lines (tool-progress.ts). */
  readonly progressBudget: ProgressBudget;

  /** `progressUsed`: the progress lines the log already holds for this response (none by default). */
  constructor(options: {
    writer: ConversationWriter;
    live: LiveConversation;
    state: PendingState;
    /** Model calls no record carries yet; none for writers that never spend (tests, task births). */
    spend?: PendingSpend;
    timers: PendingTimers;
    progressUsed?: { lines: number; chars: number };
    /** Whose readers decide how soon streamed content is committed: the conversation's own by default. */
    following?: Following;
  }) {
    this.writer = options.writer;
    this.live = options.live;
    this.state = options.state;
    this.spend = options.spend;
    this.timers = options.timers;
    this.following = options.following ?? options.live;
    this.progressBudget = new ProgressBudget(options.progressUsed);
  }

  /** Whether a model step written whole keeps its text once, in its completed message (the store's format). */
  get writesStepTextOnce(): boolean {
    return this.writer.writesStepTextOnce;
  }

  /** Appends one batch (with the pending spending, if any). */
  commit(records: ConversationRecord[]): void {
    this.writer.commit(this.live, this.withSpend(records));
  }

  /**
   * Records the store can make again (the response's input, a turn's resource narration): committed
   * now while a reader follows the conversation, else held to open the response's next batch
   * (`ConversationWriter.hold`).
   */
  commitOrHold(records: ConversationRecord[]): void {
    if (this.following.followed) this.commit(records);
    else this.writer.hold(this.live, records);
  }

  /** Appends one batch together with the pending state and timer writes it explains. */
  commitWithState(records: ConversationRecord[]): void {
    this.writer.commitWithState(this.live, this.withSpend(records), this.state.take(), this.timers.take());
  }

  /** Appends the response's last batch with its settlement (`ConversationWriter.close`); no state or timer write may be pending. */
  close(records: ConversationRecord[], settle: () => SettlementWrite): SettlementWrite {
    return this.writer.close(this.live, this.withSpend(records), settle);
  }

  /** Whether state or timer writes wait for a batch to explain them. */
  get hasPendingWrites(): boolean {
    return !this.state.isEmpty || !this.timers.isEmpty;
  }

  /** Commits the pending spending alone, when there is any: before the response settles or fails. */
  flushSpend(): void {
    if (this.spend !== undefined && !this.spend.isEmpty) this.commit([]);
  }

  private withSpend(records: ConversationRecord[]): ConversationRecord[] {
    if (this.spend === undefined || this.spend.isEmpty) return records;
    return [...records, ...this.spend.take()];
  }

  /** The memos of one durable tool call, keyed by `key` in this conversation's stream. */
  stepMemo(key: string): StepMemo {
    return this.writer.stepMemo(this.live, key);
  }

  /** A child conversation of this one, born (and retained here) when it does not exist yet. */
  openChild(child: { key: ConversationKey; birth: () => ChildBirth }): LiveConversation {
    return this.writer.openChild({ parent: this.live, ...child });
  }
}
