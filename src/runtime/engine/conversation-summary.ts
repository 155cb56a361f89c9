/**
 * A compaction's summarization (models-and-providers.md §6.3): the cut, the summary requests run
 * by run, and the `compaction` record with the prompt's rebaseline. Loaded on the first compaction
 * (lazy-parts.ts); conversation-compaction.ts decides when one runs.
 */
import { contextWindowOf, estimateContextTokens, resolveCompactionSettings } from '../model/compaction.ts';
import {
  appendFileLists,
  buildSummaryRequest,
  fileListsFromToolCalls,
  findCutPoint,
  joinSplitSummary,
  summaryChunks,
  summaryInputBudget,
  summaryMessageChars,
  summaryMaxTokens,
} from '../model/summary-request.ts';
import { messageCap } from '../model/context-fit.ts';
import { OperationFailedError } from '../common/errors.ts';
import { intercept } from '../common/instrumentation.ts';
import { errorInfo, eventError } from '../common/events.ts';
import { modelResponse, requestInfo } from './session-events.ts';
import { newId } from '../common/ids.ts';
import { getModels, loadModel, modelErrorFromMessage } from '../model/model-registry.ts';
import type { Message } from '@earendil-works/pi-ai';
import type { CompactionInput } from './conversation-compaction.ts';
import type { ConversationRecord } from '../store/records.ts';
import { addUsage, emptyUsage, usageFromPi } from '../model/usage.ts';

/** The compaction batch: the summary and the prompt's rebaseline; undefined when nothing can be cut. */
export async function summarizeConversation(
  input: CompactionInput,
  reason: 'threshold' | 'overflow',
): Promise<ConversationRecord[] | undefined> {
  const { conv, site, signal } = input;
  const spec = input.model.spec;
  const config = input.model.compaction || undefined;
  const sessionModel = await loadModel(spec);
  const settings = resolveCompactionSettings(config, sessionModel);
  const summarizer = settings.model === undefined ? sessionModel : await loadModel(settings.model);
  const entries = conv.compactableEntries();
  const messages = entries.map((entry) => entry.message);
  // A message counts what a request would send of it, so one oversized message is not all that is kept.
  const cap = messageCap(settings.contextWindow - settings.reserveTokens);
  const cut = findCutPoint(messages, settings.keepRecentTokens, cap);
  // A compaction that finds nothing to cut emits no events.
  if (cut === null) return undefined;
  const started = Date.now();
  const tokensBefore = estimateContextTokens(messages);
  site.emit('compaction_start', () => ({ reason, estimatedTokens: tokensBefore }));
  const ended = (fields: Record<string, unknown>) =>
    site.emit('compaction', () => ({
      messagesBefore: messages.length,
      // The summary stands in for everything before the first kept message.
      messagesAfter: messages.length - cut.firstKeptIndex + 1,
      durationMs: Date.now() - started,
      ...fields,
    }));
  let usage = emptyUsage();
  let modelCalls = 0;
  // Each summarization request fits the summarizer's window: a long history goes run by run.
  const budget = summaryInputBudget(
    settings.model === undefined ? settings.contextWindow : contextWindowOf(summarizer),
    settings.reserveTokens,
  );
  const summarize = async (part: Message[], prefix: boolean, previousSummary?: string): Promise<string> => {
    const request = buildSummaryRequest({
      messages: part,
      ...(previousSummary === undefined ? {} : { previousSummary }),
      ...(prefix ? { splitTurn: true } : {}),
      maxMessageChars: summaryMessageChars(budget),
    });
    const turnId = newId('msg');
    // A summarization call is a turn of its own purpose: `turn_request` and `turn`, no `turn_start`.
    const purpose = prefix ? 'compaction_prefix' : 'compaction';
    const turnStarted = Date.now();
    site.emit(
      'turn_request',
      () => ({
        turnId,
        purpose,
        request: {
          ...requestInfo(summarizer),
          input: { systemPrompt: request.systemPrompt, messages: [{ role: 'user', content: request.userText }] },
        },
      }),
      turnId,
    );
    const reply = await intercept(
      () => [
        { type: 'model', turnId, purpose: 'compaction', provider: summarizer.provider, model: summarizer.id },
        { ...site.executionContext(), turnId },
      ],
      () =>
        getModels().completeSimple(
          summarizer,
          { systemPrompt: request.systemPrompt, messages: [{ role: 'user', content: request.userText, timestamp: Date.now() }] },
          {
            signal,
            maxTokens: Math.max(256, summaryMaxTokens(settings.reserveTokens, prefix)),
            ...(summarizer.reasoning ? { reasoning: 'high' as const } : {}),
          },
        ),
    );
    site.emit(
      'turn',
      () => ({
        turnId,
        purpose,
        durationMs: Date.now() - turnStarted,
        request: requestInfo(summarizer),
        response: modelResponse(reply),
        isError: reply.stopReason === 'error' || reply.stopReason === 'aborted',
      }),
      turnId,
    );
    usage = addUsage(usage, usageFromPi(reply.usage));
    modelCalls++;
    if (reply.stopReason === 'error' || reply.stopReason === 'aborted') {
      throw (
        modelErrorFromMessage(reply.errorMessage) ??
        new OperationFailedError('compact', reply.errorMessage ?? 'summarization did not complete')
      );
    }
    return reply.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('');
  };
  // A turn prefix too long for one request is summarized with the history instead.
  const prefixChunks =
    cut.splitTurnStart === undefined ? [] : summaryChunks(messages.slice(cut.splitTurnStart, cut.firstKeptIndex), budget);
  const splitAt = prefixChunks.length === 1 ? cut.splitTurnStart! : cut.firstKeptIndex;
  let summary: string | undefined = conv.previousSummary;
  try {
    for (const chunk of summaryChunks(messages.slice(0, splitAt), budget)) summary = await summarize(chunk, false, summary);
    summary ??= '';
    if (prefixChunks.length === 1) summary = joinSplitSummary(summary, await summarize(prefixChunks[0]!, true));
  } catch (error) {
    if (modelCalls > 0) input.failedSpend(usage, modelCalls);
    ended({ isError: true, error: eventError(error), errorInfo: errorInfo(error), usage });
    throw error;
  }
  ended({ isError: false, usage });
  summary = appendFileLists(summary, fileListsFromToolCalls(messages.slice(0, cut.firstKeptIndex)));
  // The recomposed prompt rebaselines the skill catalog and agent roster to what the model was last
  // told, in the same batch as the summary: the narration snapshot and the prompt agree again, and
  // the summarized add/remove signals stop mattering (skills-subagents-mcp.md §4).
  const narrated = conv.resourceSnapshot;
  return [
    {
      type: 'compaction',
      summary,
      firstKept: entries[cut.firstKeptIndex]!.index,
      tokensBefore,
      usage,
      submissionId: site.submissionId,
      modelCalls,
      ts: new Date().toISOString(),
    },
    ...(narrated === undefined ? [] : [{ type: 'resource_snapshot' as const, baseline: true, snapshot: narrated }]),
  ];
}
