/**
 * Compaction of the main conversation (models-and-providers.md §6.3): when the context nears the
 * model's window after a response (threshold), would not fit the next request (before a turn), or
 * the provider refuses it (overflow), older messages are replaced by a model-written summary. The summary lands as one `compaction` record; the model context is
 * rebuilt from it, so the log keeps every original message.
 */
import type { AssistantMessage, Message } from '@earendil-works/pi-ai';
import { answerCrossesThreshold, resolveCompactionSettings } from '../model/compaction.ts';
import { contextFits, requestBudget } from '../model/context-fit.ts';
import { loadModel } from '../model/model-registry.ts';
import type { Conversation } from './conversation.ts';
import { compactionPart } from './lazy-parts.ts';
import type { LatchedModel } from './response-render.ts';
import type { ResponseSite } from './response-site.ts';
import type { ConversationRecord } from '../store/records.ts';
import type { PromptUsage } from '../common/types.ts';

/** What compaction reads: the conversation and the model the response latched. */
export interface CompactionInput {
  conv: Conversation;
  model: LatchedModel;
  signal: AbortSignal;
  site: ResponseSite;
  /** Where a summarization that fails leaves what it spent (no compaction record carries it). */
  failedSpend(usage: PromptUsage, modelCalls: number): void;
}

/**
 * The threshold trigger, checked when a turn loop reaches a would-stop point: the compaction
 * batch when the last answer's context nears the window; empty otherwise.
 */
export async function compactAfterTurn(
  input: Omit<CompactionInput, 'model'> & { model: LatchedModel | undefined },
): Promise<ConversationRecord[]> {
  const { conv, model: latched } = input;
  const config = latched?.compaction;
  if (config === false || latched === undefined || conv.compactedSinceLastStep) return [];
  const model = await loadModel(latched.spec);
  const last = lastAnswer(conv.modelContext());
  if (last === undefined) return [];
  // A model without a known window is held to the configured or the default one.
  if (!answerCrossesThreshold(config, model, last.usage)) return [];
  try {
    return (await compactConversation({ ...input, model: latched }, 'threshold')) ?? [];
  } catch (error) {
    // Automatic compaction is best effort: the conversation goes on uncompacted.
    input.site.logger({ compaction: 'threshold' }).warn('[flue:compaction] automatic compaction failed', { error: error as Error });
    return [];
  }
}

/** Input tokens a turn's messages may take: the window (configured, the model's, or the default) less the reserve and the fixed part. */
export function turnBudget(model: { contextWindow: number; maxTokens: number }, latched: LatchedModel, fixed: number): number {
  const { contextWindow, reserveTokens } = resolveCompactionSettings(latched.compaction || undefined, model);
  return requestBudget({ contextWindow, reserveTokens, fixedTokens: fixed });
}

/**
 * The check before a model turn: when the context would not fit the request's budget even with
 * each message reduced to its cap, compact first, as an overflow would (so `compaction: false`
 * does not stop it). Best effort: whatever is left over the budget, the request's fit reduces.
 */
export async function compactBeforeTurn(input: CompactionInput & { budgetTokens: number }): Promise<ConversationRecord[]> {
  const { conv, budgetTokens } = input;
  if (conv.compactedSinceLastStep || contextFits(conv.modelContext(), budgetTokens)) return [];
  try {
    return (await compactConversation(input, 'overflow')) ?? [];
  } catch (error) {
    input.site.logger({ compaction: 'overflow' }).warn('[flue:compaction] compaction before the turn failed', { error: error as Error });
    return [];
  }
}

/**
 * The compaction batch: the summary and the prompt's rebaseline; undefined when nothing can be cut.
 * The summarization itself (conversation-summary.ts) loads on the first compaction: most responses
 * never compact, and a Worker or a Node process need not compile it to start.
 */
export async function compactConversation(
  input: CompactionInput,
  reason: 'threshold' | 'overflow',
): Promise<ConversationRecord[] | undefined> {
  return (await compactionPart()).summarizeConversation(input, reason);
}

function lastAnswer(messages: Message[]): AssistantMessage | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    if (message.role === 'assistant') return message.stopReason === 'error' || message.stopReason === 'aborted' ? undefined : message;
  }
  return undefined;
}
