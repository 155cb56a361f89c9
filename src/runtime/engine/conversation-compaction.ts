/**
 * Compaction of the main conversation (models-and-providers.md §6.3): when the context nears the
 * model's window (threshold) or the provider refuses it (overflow), older messages are replaced
 * by a model-written summary. The summary lands as one `compaction` record; the model context is
 * rebuilt from it, so the log keeps every original message.
 */
import type { AssistantMessage, Message } from '@earendil-works/pi-ai';
import {
  appendFileLists,
  buildSummaryRequest,
  contextTokens,
  estimateContextTokens,
  fileListsFromToolCalls,
  findCutPoint,
  joinSplitSummary,
  resolveCompactionSettings,
  shouldCompact,
  summaryMaxTokens,
} from '../model/compaction.ts';
import { OperationFailedError } from '../common/errors.ts';
import { intercept } from '../common/instrumentation.ts';
import { newId } from '../common/ids.ts';
import { getModels, resolveModel, modelErrorFromMessage } from '../model/model-registry.ts';
import type { RunContext } from './run-context.ts';
import { addUsage, emptyUsage, usageFromPi } from '../model/usage.ts';

/** The threshold trigger, checked when a turn loop reaches a would-stop point. */
export async function maybeCompactAfterTurn(run: RunContext): Promise<void> {
  const config = run.model?.compaction;
  if (config === false || run.model === undefined || run.conv.compactedSinceLastStep) return;
  const model = resolveModel(run.model.spec);
  if (model.contextWindow <= 0) return;
  const last = lastAnswer(run.conv.modelContext());
  if (last === undefined) return;
  const settings = resolveCompactionSettings(config, model);
  if (!shouldCompact({ contextTokens: contextTokens(last.usage), contextWindow: model.contextWindow, reserveTokens: settings.reserveTokens })) return;
  try {
    await compactConversation(run, 'threshold');
  } catch (error) {
    // Automatic compaction is best effort: the conversation goes on uncompacted.
    run.logger({ compaction: 'threshold' }).warn('[flue:compaction] automatic compaction failed', { error: error as Error });
  }
}

export async function compactConversation(run: RunContext, _reason: 'threshold' | 'overflow'): Promise<boolean> {
  const spec = run.model!.spec;
  const config = run.model!.compaction || undefined;
  const sessionModel = resolveModel(spec);
  const settings = resolveCompactionSettings(config, sessionModel);
  const summarizer = settings.model === undefined ? sessionModel : resolveModel(settings.model);
  const entries = run.conv.compactableEntries();
  const messages = entries.map((entry) => entry.message);
  const cut = findCutPoint(messages, settings.keepRecentTokens);
  if (cut === null) return false;
  let usage = emptyUsage();
  const summarize = async (part: Message[], prefix: boolean, previousSummary?: string): Promise<string> => {
    const request = buildSummaryRequest({ messages: part, ...(previousSummary === undefined ? {} : { previousSummary }), ...(prefix ? { splitTurn: true } : {}) });
    const turnId = newId('msg');
    const reply = await intercept(
      () => [{ type: 'model', turnId, purpose: 'compaction', provider: summarizer.provider, model: summarizer.id }, { ...run.executionContext(), turnId }],
      () =>
        getModels().completeSimple(
          summarizer,
          { systemPrompt: request.systemPrompt, messages: [{ role: 'user', content: request.userText, timestamp: Date.now() }] },
          {
            signal: run.signal,
            maxTokens: Math.max(256, summaryMaxTokens(settings.reserveTokens, prefix)),
            ...(summarizer.reasoning ? { reasoning: 'high' as const } : {}),
          },
        ),
    );
    usage = addUsage(usage, usageFromPi(reply.usage));
    if (reply.stopReason === 'error' || reply.stopReason === 'aborted') {
      throw modelErrorFromMessage(reply.errorMessage) ?? new OperationFailedError('compact', reply.errorMessage ?? 'summarization did not complete');
    }
    return reply.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('');
  };
  const splitAt = cut.splitTurnStart ?? cut.firstKeptIndex;
  const history = messages.slice(0, splitAt);
  let summary = history.length > 0 ? await summarize(history, false, run.conv.previousSummary) : (run.conv.previousSummary ?? '');
  if (cut.splitTurnStart !== undefined) {
    summary = joinSplitSummary(summary, await summarize(messages.slice(cut.splitTurnStart, cut.firstKeptIndex), true));
  }
  summary = appendFileLists(summary, fileListsFromToolCalls(messages.slice(0, cut.firstKeptIndex)));
  // The recomposed prompt rebaselines the skill catalog and agent roster to what the model was last
  // told, in the same batch as the summary: the narration snapshot and the prompt agree again, and
  // the summarized add/remove signals stop mattering (skills-subagents-mcp.md §4).
  const narrated = run.conv.resourceSnapshot;
  run.commit([
    {
      type: 'compaction',
      summary,
      firstKept: entries[cut.firstKeptIndex]!.index,
      tokensBefore: estimateContextTokens(messages),
      usage,
      ts: new Date().toISOString(),
    },
    ...(narrated === undefined ? [] : [{ type: 'resource_snapshot' as const, baseline: true, snapshot: narrated }]),
  ]);
  return true;
}

function lastAnswer(messages: Message[]): AssistantMessage | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    if (message.role === 'assistant') return message.stopReason === 'error' || message.stopReason === 'aborted' ? undefined : message;
  }
  return undefined;
}
