/**
 * The usage ledger and the budgets that read it, as functions of the fold: what a submission's
 * response spent (its own model calls and those of the child conversations its `task` calls
 * opened), the entry its settlement records, and whether a budget is reached. The engine records
 * and checks; these decide. (`getUsage()` reads the entries from the submissions' rows: ConversationView.usage.)
 */
import type { BudgetConfig, BudgetLimit } from '../authoring/budget-config.ts';
import { BudgetExceededError } from '../common/errors.ts';
import type { DurableObjectActivity, DurableObjectCounters, PromptUsage } from '../common/types.ts';
import { addUsage, emptyUsage } from '../model/usage.ts';
import type { ConversationKey } from '../store/conversation-key.ts';
import type { SettledUsage } from '../store/records.ts';
import type { Conversation } from './conversation.ts';

/** Reads a child conversation's fold (the view's `fold`). */
export type FoldOf = (key: ConversationKey) => Conversation;

/** What the response of `submissionId` spent so far, delegated tasks included (attempts are the engine's count). */
export function responseSpending(conv: Conversation, submissionId: string, foldOf: FoldOf): Omit<SettledUsage, 'attempts'> {
  const own = conv.responseIfAny(submissionId);
  let usage = own?.spent ?? emptyUsage();
  let modelCalls = own?.modelCalls ?? 0;
  let toolCalls = own?.toolCalls.length ?? 0;
  // A delegate's loop runs under its parent's submission id, in the child's own log.
  for (const child of conv.childrenBySubmission.get(submissionId) ?? []) {
    const spent = responseSpending(foldOf(child.stream), submissionId, foldOf);
    usage = addUsage(usage, spent.usage);
    modelCalls += spent.modelCalls;
    toolCalls += spent.toolCalls;
  }
  return { usage, modelCalls, toolCalls };
}

/** The ledger entry a settlement records for the submission that ran (`attempts`: the attempts it claimed). */
export function settledUsage(conv: Conversation, submissionId: string, attempts: number, foldOf: FoldOf): SettledUsage {
  return { ...responseSpending(conv, submissionId, foldOf), attempts };
}

/** A delivery that joined another's response spent nothing of its own: the leader's entry counts it. */
export function joinedUsage(): SettledUsage {
  return { usage: emptyUsage(), modelCalls: 0, toolCalls: 0, attempts: 0 };
}

/**
 * The Durable Object's counts as `getUsage()` reports them: what the settlements recorded, what it
 * counted since the last one, and the database's size now.
 */
export function durableObjectCounters(conv: Conversation, pending: DurableObjectActivity, bytesStored: number): DurableObjectCounters {
  const recorded = conv.hostActivity ?? { rowsWritten: 0, alarmsSet: 0, rpcsServed: 0 };
  return {
    rowsWritten: recorded.rowsWritten + pending.rowsWritten,
    alarmsSet: recorded.alarmsSet + pending.alarmsSet,
    rpcsServed: recorded.rpcsServed + pending.rpcsServed,
    bytesStored,
  };
}

/** The first limit `spent` has reached (a budget is used up at equality), as the typed error; undefined within budget. */
export function budgetReached(
  scope: 'submission' | 'conversation',
  spent: PromptUsage,
  limit: BudgetLimit | undefined,
): BudgetExceededError | undefined {
  if (limit?.maxTokens !== undefined && spent.totalTokens >= limit.maxTokens) {
    return new BudgetExceededError({ scope, limit: 'maxTokens', budget: limit.maxTokens, spent: spent.totalTokens });
  }
  if (limit?.maxCost !== undefined && spent.cost.total >= limit.maxCost) {
    return new BudgetExceededError({ scope, limit: 'maxCost', budget: limit.maxCost, spent: spent.cost.total });
  }
  return undefined;
}

/** What the conversation has spent: its settled submissions, plus the responses still open. */
export function conversationSpending(conv: Conversation, open: readonly string[], foldOf: FoldOf): PromptUsage {
  let total = conv.ledgerTotal;
  for (const id of open) total = addUsage(total, responseSpending(conv, id, foldOf).usage);
  return total;
}

/**
 * At a turn boundary (before a model call, or before an attempt is claimed): the budget the
 * response of `submissionId` has reached, per submission or per conversation; undefined when it may spend on.
 */
export function budgetStop(
  budget: BudgetConfig,
  conv: Conversation,
  submissionId: string,
  foldOf: FoldOf,
): BudgetExceededError | undefined {
  if (budget.perSubmission === undefined && budget.perConversation === undefined) return undefined;
  const own = responseSpending(conv, submissionId, foldOf).usage;
  return (
    budgetReached('submission', own, budget.perSubmission) ??
    budgetReached('conversation', addUsage(conv.ledgerTotal, own), budget.perConversation)
  );
}
