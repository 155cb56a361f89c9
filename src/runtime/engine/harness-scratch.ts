/**
 * The model work of a harness's scratch conversation (harness.ts): one `prompt()`, its turns and
 * the calls they make until it answers, and `compact()`. Loaded by a harness's first operation
 * (lazy-parts.ts), not at start: many agents never prompt a harness.
 */
import { type AssistantMessage, type Message, type ToolCall } from '@earendil-works/pi-ai';
import * as v from 'valibot';
import { toJsonSchema } from '@valibot/to-json-schema';
import { renderCompactionSummary, resolveCompactionSettings } from '../model/compaction.ts';
import {
  buildSummaryRequest,
  findCutPoint,
  summaryChunks,
  summaryInputBudget,
  summaryMaxTokens,
  summaryMessageChars,
} from '../model/summary-request.ts';
import { fitContext, fixedTokens, messageCap, requestBudget } from '../model/context-fit.ts';
import { type ToolDefinition, assembleToolSet, toolSpec } from '../authoring/define-tool.ts';
import { dispatchToolCall, frameworkTools } from './tool-dispatch.ts';
import { systemPrompt } from './system-prompt.ts';
import { DocumentPlacement } from '../model/documents.ts';
import { DelegationDepthExceededError, OperationFailedError, ResultUnavailableError, abortError, formatIssues } from '../common/errors.ts';
import { getModels, loadModel, reasoningOption, modelErrorFromMessage } from '../model/model-registry.ts';
import { isOverflow } from '../model/model-retry.ts';
import { type FlueExecutionContext, intercept } from '../common/instrumentation.ts';
import { newId } from '../common/ids.ts';
import { DELEGATION_DEPTH_CAP } from '../authoring/subagents.ts';
import type { PromptOptions, PromptResponse, PromptResultResponse, PromptUsage } from '../common/types.ts';
import { addUsage, emptyUsage, usageFromPi } from '../model/usage.ts';
import { type HarnessDeps, createHarness } from './harness.ts';

const MAX_RESULT_FOLLOW_UPS = 32;

const RESULT_FOOTER =
  '\n\nWhen you are done, call the `finish` tool with the result; its arguments are validated against the required schema. ' +
  'If you cannot produce the result, call `give_up` with the reason. Do not answer in plain text.';

/** One `prompt()` of the scratch conversation: turns, and the calls they make, until it answers. */
export async function runPrompt({
  deps,
  scratch,
  text,
  options,
  signal,
}: {
  deps: HarnessDeps;
  scratch: Message[];
  text: string;
  options: PromptOptions<v.GenericSchema | undefined>;
  signal: AbortSignal;
}): Promise<PromptResponse | PromptResultResponse<unknown>> {
  const render = deps.render();
  const model = await loadModel(options.model ?? deps.modelSpec);
  const modelInfo = { provider: model.provider, id: model.id };
  const extra = (options.tools ?? []) as readonly ToolDefinition[];
  const assembled = assembleToolSet({
    framework: frameworkTools(render),
    builtin: deps.environment?.toolDefinitions(render.subagents) ?? [],
    custom: [...render.tools, ...extra],
    harnessPrompt: true,
  });
  const tools = new Map(assembled.map((tool) => [tool.name, tool]));
  const result = options.result;
  const wrapped = result !== undefined && !isObjectSchema(result);
  const finishSchema = result === undefined ? undefined : wrapped ? v.object({ result }) : result;
  const piTools = [...tools.values()].map(toolSpec);
  if (finishSchema !== undefined) {
    const parameters = { ...(toJsonSchema(finishSchema, { errorMode: 'ignore' }) as Record<string, unknown>) };
    delete parameters.$schema;
    piTools.push(
      { name: 'finish', description: 'Submit the final result. Its arguments are validated against the required schema.', parameters },
      {
        name: 'give_up',
        description: 'Give up when the result cannot be produced, saying why.',
        parameters: { type: 'object', properties: { reason: { type: 'string', minLength: 1 } }, required: ['reason'] },
      },
    );
  }
  const content: Extract<Message, { role: 'user' }>['content'] = [
    { type: 'text', text: result === undefined ? text : text + RESULT_FOOTER },
    ...(options.images ?? []).map((image) => ({ type: 'image' as const, data: image.data, mimeType: image.mimeType })),
  ];
  const documents = new DocumentPlacement(model);
  for (const [index, document] of (options.documents ?? []).entries()) {
    if (document.mimeType !== 'application/pdf') {
      throw new Error(`[flue] harness.prompt() documents must be application/pdf; got "${document.mimeType}".`);
    }
    content.push(
      documents.place(`prompt_${scratch.length}_${index}`, () => ({ data: document.data, mimeType: document.mimeType }), undefined),
    );
  }
  const onPayload = documents.onPayload;
  scratch.push({ role: 'user', content, timestamp: Date.now() });
  const prompt = systemPrompt(render);
  const { contextWindow, reserveTokens } = resolveCompactionSettings(undefined, model);
  const budgetTokens = requestBudget({ contextWindow, reserveTokens, fixedTokens: fixedTokens({ ...prompt, tools: piTools }) });

  let usage: PromptUsage = emptyUsage();
  let assistantText = '';
  let followUps = 0;
  let overflowCompacted = false;
  for (;;) {
    if (signal.aborted) throw signal.reason ?? abortError();
    const turnId = newId('msg');
    const final: AssistantMessage = await intercept(
      () => [
        { type: 'model', turnId, purpose: 'agent', provider: model.provider, model: model.id },
        { ...harnessContext(deps), turnId },
      ],
      () =>
        getModels().completeSimple(
          model,
          // What is sent fits the window; the scratch conversation keeps every original.
          { ...prompt, messages: fitContext(scratch, budgetTokens).messages, tools: piTools },
          {
            signal,
            ...reasoningOption(model, options.thinkingLevel ?? deps.thinkingLevel),
            ...(onPayload === undefined ? {} : { onPayload }),
          },
        ),
    );
    const turnUsage = usageFromPi(final.usage);
    usage = addUsage(usage, turnUsage);
    deps.spend?.(turnUsage);
    if (final.stopReason === 'aborted') throw signal.reason ?? abortError();
    // A scratch conversation the model refuses as too large is compacted once and the turn
    // retried, as the main conversation does (models-and-providers.md §6.3); the summary's
    // usage belongs to this operation.
    if (final.stopReason === 'error' && !overflowCompacted && isOverflow(final, model.contextWindow)) {
      overflowCompacted = true;
      const summaryUsage = await compactScratch(deps, scratch, signal);
      if (summaryUsage !== undefined) {
        usage = addUsage(usage, summaryUsage);
        continue;
      }
    }
    if (final.stopReason === 'error')
      throw modelErrorFromMessage(final.errorMessage) ?? new OperationFailedError('prompt', final.errorMessage ?? 'the model call failed');
    scratch.push(final);
    const said = final.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('');
    if (said) assistantText = assistantText ? `${assistantText}\n\n${said}` : said;
    const calls = final.content.filter((block): block is ToolCall => block.type === 'toolCall');
    if (calls.length > 0) {
      let finished: { data: unknown } | undefined;
      let gaveUp: string | undefined;
      let rejectedFinish = false;
      const results = await Promise.all(
        calls.map(async (call) => {
          if (finishSchema !== undefined && (call.name === 'finish' || call.name === 'give_up')) {
            if (finished !== undefined || gaveUp !== undefined) return toolResult(call, 'The task is already done.', true);
            if (call.name === 'give_up') {
              const reason = typeof call.arguments.reason === 'string' ? call.arguments.reason : '';
              gaveUp = reason || 'no reason given';
              return toolResult(call, 'Understood.', false);
            }
            const parsed = v.safeParse(finishSchema, call.arguments);
            if (!parsed.success) {
              rejectedFinish = true;
              const issues = parsed.issues.map((issue) => ({ message: issue.message, path: issue.path?.map((p) => p.key as PropertyKey) }));
              return toolResult(
                call,
                `Result does not match the required schema: ${formatIssues(issues)}. Please call \`finish\` again with a corrected payload.`,
                true,
              );
            }
            finished = { data: wrapped ? (parsed.output as { result: unknown }).result : parsed.output };
            return toolResult(call, 'Result accepted. The task is complete.', false);
          }
          const tool = tools.get(call.name);
          if (tool === undefined) return toolResult(call, `Tool "${call.name}" is not available.`, true);
          const outcome = await dispatchToolCall(call, tool, {
            signal,
            context: { ...harnessContext(deps), turnId },
            ...(deps.environment === undefined ? {} : { environment: deps.environment }),
            task: (taskCall) => deps.task(taskCall, { harness: deps.name, depth: deps.depth, subagents: render.subagents, signal }),
            log: (toolCall) => deps.log(toolCall.id, toolCall.name),
            harness: (scope) => nestedHarness(deps, scope),
          });
          return toolResult(call, outcome.content, outcome.isError);
        }),
      );
      scratch.push(...results);
      if (gaveUp !== undefined) throw new ResultUnavailableError(gaveUp, assistantText);
      if (finished !== undefined) return { data: finished.data, usage, model: modelInfo };
      // A turn of ordinary tool calls is work in progress; one whose `finish` failed validation
      // is a failed attempt, or a model that never gets the schema right would loop forever.
      if (!rejectedFinish) continue;
    } else if (finishSchema === undefined) {
      return { text: said, usage, model: modelInfo };
    }
    if (followUps >= MAX_RESULT_FOLLOW_UPS) {
      const reason = `Agent did not call \`finish\` with a valid result or \`give_up\` after ${MAX_RESULT_FOLLOW_UPS + 1} attempts.`;
      throw new ResultUnavailableError(reason, assistantText, reason);
    }
    followUps++;
    // The rejected `finish` already told the model what to fix; a plain-text answer needs telling.
    if (calls.length === 0) {
      scratch.push({
        role: 'user',
        content: 'Reminder: call `finish` with the result (or `give_up`). Do not answer in plain text.',
        timestamp: Date.now(),
      });
    }
  }
}

function harnessContext(deps: HarnessDeps): FlueExecutionContext {
  return { ...deps.executionContext?.(), harness: deps.name };
}

function nestedHarness(deps: HarnessDeps, signal: AbortSignal): ReturnType<typeof createHarness> {
  if (deps.depth + 1 > DELEGATION_DEPTH_CAP) throw new DelegationDepthExceededError(DELEGATION_DEPTH_CAP);
  return createHarness({ ...deps, signal, depth: deps.depth + 1 });
}

function toolResult(call: ToolCall, text: string, isError: boolean): Message {
  return {
    role: 'toolResult',
    toolCallId: call.id,
    toolName: call.name,
    content: [{ type: 'text', text }],
    isError,
    timestamp: Date.now(),
  };
}

function isObjectSchema(schema: v.GenericSchema): boolean {
  const inner =
    (schema as { type?: string; pipe?: unknown[] }).type === 'pipe'
      ? ((schema as unknown as { pipe: v.GenericSchema[] }).pipe[0] ?? schema)
      : schema;
  const type = (inner as { type?: string }).type;
  return type === 'object' || type === 'strict_object' || type === 'loose_object' || type === 'object_with_rest';
}

/** The summary messages compactScratch wrote, so a repeated compact() can tell them from history. */
const scratchSummaries = new WeakSet<Message>();

/** Summarizes the scratch conversation's history; the summary call's usage, or undefined when there was nothing to compact. */
export async function compactScratch(deps: HarnessDeps, scratch: Message[], signal: AbortSignal): Promise<PromptUsage | undefined> {
  const model = await loadModel(deps.modelSpec);
  const settings = resolveCompactionSettings(undefined, model);
  const cut = findCutPoint(scratch, settings.keepRecentTokens, messageCap(settings.contextWindow - settings.reserveTokens));
  // Nothing to compact: no history before what is kept, or only the previous summary (which a
  // second summarization would merely restate, at the cost of a model call).
  if (cut === null || (cut.firstKeptIndex === 1 && scratchSummaries.has(scratch[0]!))) return undefined;
  // Each request fits the window: a long history is summarized run by run.
  const budget = summaryInputBudget(settings.contextWindow, settings.reserveTokens);
  let text: string | undefined;
  let usage = emptyUsage();
  for (const chunk of summaryChunks(scratch.slice(0, cut.firstKeptIndex), budget)) {
    const request = buildSummaryRequest({
      messages: chunk,
      ...(text === undefined ? {} : { previousSummary: text }),
      maxMessageChars: summaryMessageChars(budget),
    });
    const summary = await getModels().completeSimple(
      model,
      { systemPrompt: request.systemPrompt, messages: [{ role: 'user', content: request.userText, timestamp: Date.now() }] },
      { signal, maxTokens: Math.max(1, summaryMaxTokens(settings.reserveTokens, false)) },
    );
    const callUsage = usageFromPi(summary.usage);
    deps.spend?.(callUsage);
    if (summary.stopReason === 'aborted') throw signal.reason ?? abortError();
    if (summary.stopReason === 'error')
      throw (
        modelErrorFromMessage(summary.errorMessage) ?? new OperationFailedError('compact', summary.errorMessage ?? 'summarization failed')
      );
    usage = addUsage(usage, callUsage);
    text = summary.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('');
  }
  const kept = scratch.slice(cut.firstKeptIndex);
  const summaryMessage: Message = { role: 'user', content: renderCompactionSummary(text ?? ''), timestamp: Date.now() };
  scratchSummaries.add(summaryMessage);
  scratch.length = 0;
  scratch.push(summaryMessage, ...kept);
  return usage;
}
