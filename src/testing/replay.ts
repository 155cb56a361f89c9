/**
 * `replayConversation()`: re-runs a recorded conversation's deliveries against an agent (the same
 * or a new version), offline, and reports per turn where the new run diverged from the recording.
 *
 * The model is answered from the recording where the request matches (the same model call of the
 * same delivery, and every tool result the request carries from that delivery equal to the
 * recorded one), otherwise by `options.model`. Tool calls are answered from the recording where
 * the call matches (the recorded call of that id, with the same name and arguments), otherwise run
 * live; `liveTools` runs them live regardless, so a changed tool shows in its results. A
 * summarization call is recognised by what it asks for and answered from the recorded summary of
 * the same compaction, outside the count of turns, so a conversation that compacted replays too.
 *
 * Node only: the Node host is imported when a replay starts, so this module can be imported
 * inside workerd.
 */
import { FlueError } from '../runtime/common/errors.ts';
import { deepEqualJson } from '../runtime/common/ids.ts';
import type { Agent } from '../runtime/authoring/identity.ts';
import type { DeliveredMessage } from '../runtime/common/types.ts';
import { exportConversation, init } from '../runtime/host/addressing.ts';
import { configuredRuntime } from '../runtime/host/runtime.ts';
import { redirectModels } from '../runtime/model/model-registry.ts';
import { useScriptedModels } from '../runtime/model/scripted-redirect.ts';
import { type ToolAnswers, installToolAnswers } from '../runtime/engine/tool-answers.ts';
import type { ConversationExport } from '../runtime/engine/conversation-export.ts';
import type { AssistantMessage } from '../runtime/model/model-types.ts';
import { summaryParts, summaryRequestPart } from '../runtime/model/summary-request.ts';
import { type LoggedDelivery, type ReplayDivergence, divergences, loggedDeliveries } from './replay-log.ts';
import { startScriptedModelServer } from './scripted-model-server.ts';
import type { RecordedRequest, ScriptStep, ScriptedResponse } from './scripted-model-types.ts';
import type * as NodeHost from '../node/index.ts';

export type { DivergenceKind, LoggedDelivery, LoggedToolCall, LoggedTurn, ReplayDivergence } from './replay-log.ts';

export interface ReplayOptions {
  /** The agent to run: the recorded one, or a new version of it. */
  agent: Agent;
  /** What `exportConversation()` returned (or its JSON file, parsed). */
  recording: ConversationExport;
  /**
   * Answers the model requests the recording does not match: a scripted response, or a function
   * of the request (which may call a real model). By default such a request is answered with the
   * text `[replay] no recorded answer`, which then shows as a divergence.
   */
  model?: ScriptStep;
  /** Tools run live instead of answered from the recording: `true` for all, or their names. */
  liveTools?: boolean | readonly string[];
  /** The replay's instance id (default `replay-<recorded id>`). */
  id?: string;
}

export interface ReplayTurnReport {
  delivery: number;
  /**
   * The model call of the delivery's response (0 = the first), counting ordinary turns only; for a
   * summarization call, the index of its compaction within the delivery.
   */
  turn: number;
  /** Whether the recording answered it, or `options.model`. */
  answeredFrom: 'recording' | 'model';
  /** `'compaction'` on a summarization call (answered from the recorded summary); absent on an ordinary turn. */
  purpose?: 'compaction';
}

export interface ReplayReport {
  /** Every model call of the replay, in order, with who answered it. */
  turns: ReplayTurnReport[];
  /** Where the replay diverged, at most one per delivery; empty when it did not. */
  divergences: ReplayDivergence[];
  /** The recorded and the replayed deliveries, as compared. */
  recorded: LoggedDelivery[];
  replayed: LoggedDelivery[];
  /** The replayed conversation, exported. */
  export: ConversationExport;
  /** Throws a `ReplayDivergenceError` listing the divergences, if there are any. */
  expectNoDivergence(): void;
}

/** Thrown by `expectNoDivergence()`, and for a replay that cannot start. */
export class ReplayDivergenceError extends FlueError {
  readonly divergences: ReplayDivergence[];
  constructor(found: ReplayDivergence[]) {
    super('replay_diverged', {
      message: `The replay diverged from the recording: ${found.map((divergence) => divergence.message).join('; ')}.`,
      meta: { divergences: found },
    });
    this.name = 'ReplayDivergenceError';
    this.divergences = found;
  }
}

export class ReplayError extends FlueError {
  constructor(message: string) {
    super('replay_invalid', { message: `[flue] replayConversation(): ${message}` });
    this.name = 'ReplayError';
  }
}

const NODE_HOST = '@flue/runtime/node';
const UNANSWERED: ScriptedResponse = { text: '[replay] no recorded answer' };

export async function replayConversation(options: ReplayOptions): Promise<ReplayReport> {
  const { agent, recording } = options;
  if (typeof agent !== 'function') throw new ReplayError('options.agent must be the agent function to replay against.');
  if (recording?.format !== 'flue.conversation' || !Array.isArray(recording.conversations) || recording.conversations.length === 0) {
    throw new ReplayError('options.recording must be what exportConversation() returned (format "flue.conversation").');
  }
  if (configuredRuntime() !== undefined) {
    throw new ReplayError('a Flue runtime is already configured in this process; stop it first (the replay starts its own).');
  }
  const root = recording.conversations[0]!;
  const recorded = loggedDeliveries(root.batches.flatMap((batch) => batch.records));
  const birth = root.batches[0]?.records[0];
  const initialData = birth?.type === 'conversation_created' ? birth.initialData : undefined;
  const id = options.id ?? `replay-${recording.instanceId}`;
  const live = (name: string) => options.liveTools === true || (Array.isArray(options.liveTools) && options.liveTools.includes(name));

  const turns: ReplayTurnReport[] = [];
  let current = replayCursor(-1);
  const fallback = (request: RecordedRequest): ScriptedResponse | Promise<ScriptedResponse> => {
    const step = options.model ?? UNANSWERED;
    return typeof step === 'function' ? step(request) : step;
  };
  const answerModel = async (request: RecordedRequest): Promise<ScriptedResponse> => {
    const delivery = recorded[current.delivery];
    const part = summaryRequestPart(request.system, request.messages.at(-1)?.content ?? '');
    if (part !== undefined) {
      // A summarization call answers from the recorded summary of the same compaction, by purpose, not by count.
      if (!current.summarizing) current.compactions++;
      current.summarizing = true;
      const index = current.compactions - 1;
      const summary = delivery?.summaries[index];
      const text = summary === undefined ? undefined : part === 'prefix' ? summaryParts(summary).prefix : summaryParts(summary).history;
      const answeredFrom = text === undefined ? 'model' : 'recording';
      turns.push({ delivery: current.delivery, turn: index, answeredFrom, purpose: 'compaction' });
      return text === undefined ? fallback(request) : { text };
    }
    current.summarizing = false;
    const turn = current.call++;
    const logged = delivery?.turns[turn];
    if (
      delivery !== undefined &&
      logged !== undefined &&
      !current.offScript &&
      requestAgrees(request, delivery, turn, current.compactions > 0)
    ) {
      turns.push({ delivery: current.delivery, turn, answeredFrom: 'recording' });
      return scriptedAnswer(logged.message);
    }
    // A turn answered otherwise may have made other calls: no later turn of the delivery matches.
    current.offScript = true;
    turns.push({ delivery: current.delivery, turn, answeredFrom: 'model' });
    return fallback(request);
  };
  const answerTool: ToolAnswers = (question) => {
    if (question.context.instanceId !== id || live(question.toolName)) return undefined;
    for (const turn of recorded[current.delivery]?.turns ?? []) {
      const call = turn.toolCalls.find((candidate) => candidate.id === question.toolCallId);
      if (call === undefined) continue;
      if (call.name !== question.toolName || !deepEqualJson(call.arguments, question.arguments)) return undefined;
      const outcome = turn.results.find((result) => result.toolCallId === call.id);
      if (outcome === undefined) return undefined;
      return { isError: outcome.isError, content: outcome.content, ...(outcome.output === undefined ? {} : { output: outcome.output }) };
    }
    return undefined;
  };

  const host = (await import(/* @vite-ignore */ NODE_HOST)) as typeof NodeHost;
  const server = await startScriptedModelServer({ fallback: answerModel });
  const previousAnswers = installToolAnswers(answerTool);
  useScriptedModels(server.url);
  let flue: NodeHost.Flue | undefined;
  try {
    flue = await host.start({ agents: [agent], db: host.sqlite(), env: {} });
    const handle = init(agent, { id });
    for (const [index, delivery] of recorded.entries()) {
      current = replayCursor(index);
      const message = deliveredMessage(delivery, root.attachments);
      const receipt = await handle.dispatch({ message, ...(index === 0 && initialData !== undefined ? { initialData } : {}) });
      // A failed or aborted delivery is compared by its outcome, like any other.
      await handle.read(receipt).catch(() => undefined);
    }
    const exported = await exportConversation(agent, id);
    const replayed = loggedDeliveries(exported.conversations[0]!.batches.flatMap((batch) => batch.records));
    const found = divergences(recorded, replayed);
    return {
      turns,
      divergences: found,
      recorded,
      replayed,
      export: exported,
      expectNoDivergence() {
        if (found.length > 0) throw new ReplayDivergenceError(found);
      },
    };
  } finally {
    await flue?.stop({ graceMs: 0 });
    redirectModels(undefined);
    installToolAnswers(previousAnswers);
    await server.close();
  }
}

/** The recorded delivery as it is delivered again (attachments from the recording's bytes). */
function deliveredMessage(
  delivery: LoggedDelivery,
  attachments: ConversationExport['conversations'][number]['attachments'],
): DeliveredMessage {
  const input = delivery.input;
  if (input.type === 'signal') {
    return {
      kind: 'signal',
      type: input.signalType,
      body: input.body,
      ...(input.attributes === undefined ? {} : { attributes: input.attributes }),
      ...(input.tagName === undefined ? {} : { tagName: input.tagName }),
    };
  }
  const files = (input.attachments ?? []).flatMap((ref) => {
    const stored = attachments.find((attachment) => attachment.ref.id === ref.id);
    if (stored === undefined) return [];
    return [
      { type: ref.type, data: stored.data, mimeType: ref.mimeType, ...(ref.filename === undefined ? {} : { filename: ref.filename }) },
    ];
  });
  return { kind: 'user', body: input.body, ...(files.length === 0 ? {} : { attachments: files }) };
}

/** Where the replay is within one delivery. */
interface ReplayCursor {
  delivery: number;
  /** Ordinary model calls so far: the index of the next turn. */
  call: number;
  /** Compactions begun so far (a run of summarization calls is one compaction). */
  compactions: number;
  summarizing: boolean;
  /** A turn was answered by `options.model`. */
  offScript: boolean;
}

function replayCursor(delivery: number): ReplayCursor {
  return { delivery, call: 0, compactions: 0, summarizing: false, offScript: false };
}

/**
 * A request matches the recorded `turn` of `delivery` when every tool call the recording made in
 * that delivery's earlier turns came back in the request with the recorded result. After a
 * compaction of the delivery, a result may be summarized away: one missing from the request is
 * then no disagreement.
 */
function requestAgrees(request: RecordedRequest, delivery: LoggedDelivery, turn: number, compacted: boolean): boolean {
  const results = new Map<string, string>();
  for (const message of request.messages) {
    if (message.role === 'tool' && message.toolCallId !== undefined) results.set(message.toolCallId, message.content);
  }
  return delivery.turns.slice(0, turn).every((logged) =>
    logged.results.every((outcome) => {
      const sent = results.get(outcome.toolCallId);
      return sent === undefined ? compacted : sent === outcome.content;
    }),
  );
}

/** The recorded answer as the scripted server streams it: its text, reasoning and tool calls, with their recorded ids. */
function scriptedAnswer(message: AssistantMessage): ScriptedResponse {
  const text = message.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('');
  const reasoning = message.content.flatMap((block) => (block.type === 'thinking' ? [block.thinking] : [])).join('');
  const toolCalls = message.content.flatMap((block) =>
    block.type === 'toolCall' ? [{ id: block.id, name: block.name, arguments: block.arguments as Record<string, unknown> }] : [],
  );
  return {
    ...(text === '' ? {} : { text }),
    ...(reasoning === '' ? {} : { reasoning }),
    ...(toolCalls.length === 0 ? {} : { toolCalls }),
    usage: { input: message.usage.input, output: message.usage.output },
  };
}
