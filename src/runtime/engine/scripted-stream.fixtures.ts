/**
 * A model for the engine's table tests that answers each model call from a script, in memory: a
 * pi-ai provider whose `streamSimple` is ours (the registry's own seam for a provider), so the loop
 * streams through `getModels().streamSimple` exactly as in production, with no HTTP server.
 *
 * Every answer is deterministic: one `text_delta` per scripted chunk, zero usage, timestamp 0.
 */
import { createAssistantMessageEventStream, createProvider } from '@earendil-works/pi-ai';
import type { Api, AssistantMessage, AssistantMessageEventStream, Model, SimpleStreamOptions, ToolCall } from '@earendil-works/pi-ai';
import type { Provider } from '../model/model-types.ts';
import { emptyUsage } from '../model/usage.ts';

export interface ScriptedCall {
  id: string;
  name: string;
  arguments: ToolCall['arguments'];
}

/** What one model call answers. */
export type ScriptedStep =
  /** Text chunks (one delta each), then tool calls if any: the step ends `stop` or `toolUse`. */
  | {
      text?: string[];
      toolCalls?: ScriptedCall[];
      deliver?: string /** Input tokens the provider reports for the call (default 0). */;
      tokens?: number;
    }
  /** The provider fails the call with this message (not a transient error: no retry). */
  | { error: string }
  /**
   * The stream says `text` (if any) and then goes silent until the attempt's signal ends it: an
   * idle window, a deadline, or (with `abort`) an abort request the harness makes at that moment.
   */
  | { stall: true; text?: string[]; abort?: true };

/** What the harness does for a step at the moment the model is called. */
export interface StepActions {
  /** Admits a delivery to the conversation (a message arriving while the model streams). */
  deliver(body: string): Promise<void>;
  /** Requests an abort of the conversation (`POST /:id/abort` arriving mid-call). */
  abort(): void;
}

export interface ScriptedModel {
  readonly provider: Provider;
  /** Replaces the script; each model call takes the next step. */
  play(steps: readonly ScriptedStep[], actions: StepActions): void;
  /** Steps not taken yet. */
  readonly left: number;
}

/** One provider serving every id of `modelIds` from the same script. */
export function scriptedModel(providerId: string, modelIds: readonly string[] = ['model']): ScriptedModel {
  let script: ScriptedStep[] = [];
  let actions: StepActions | undefined;
  const streamSimple = (model: Model<Api>, _context: unknown, options?: SimpleStreamOptions): AssistantMessageEventStream => {
    const step = script.shift();
    const events = createAssistantMessageEventStream();
    void play(events, model, step, options?.signal, actions);
    return events;
  };
  const provider = createProvider({
    id: providerId,
    name: providerId,
    baseUrl: '',
    auth: { apiKey: { name: 'scripted', resolve: async () => ({ auth: { apiKey: 'scripted' }, source: 'scripted' }) } },
    models: modelIds.map((modelId) => ({
      id: modelId,
      name: modelId,
      api: 'scripted',
      provider: providerId,
      baseUrl: '',
      reasoning: false,
      input: ['text'],
      contextWindow: 128_000,
      maxTokens: 8192,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    })),
    api: { stream: streamSimple, streamSimple },
  });
  return {
    provider: provider as Provider,
    play(steps, next) {
      script = [...steps];
      actions = next;
    },
    get left() {
      return script.length;
    },
  };
}

async function play(
  events: AssistantMessageEventStream,
  model: Model<Api>,
  step: ScriptedStep | undefined,
  signal: AbortSignal | undefined,
  actions: StepActions | undefined,
): Promise<void> {
  // Events are pushed after the caller got the stream, as a real provider's arrive.
  await Promise.resolve();
  const message: AssistantMessage = {
    role: 'assistant',
    content: [],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: emptyUsage(),
    stopReason: 'stop',
    timestamp: 0,
  };
  const end = (stopReason: 'error' | 'aborted', errorMessage: string) => {
    message.stopReason = stopReason;
    message.errorMessage = errorMessage;
    events.push({ type: 'error', reason: stopReason, error: message });
    events.end(message);
  };
  if (step === undefined) return end('error', 'The script has no step left for this model call.');
  if ('error' in step) return end('error', step.error);
  events.push({ type: 'start', partial: message });
  if (step.text !== undefined) {
    const text = { type: 'text' as const, text: '' };
    message.content.push(text);
    events.push({ type: 'text_start', contentIndex: 0, partial: message });
    for (const delta of step.text) {
      text.text += delta;
      events.push({ type: 'text_delta', contentIndex: 0, delta, partial: message });
    }
    events.push({ type: 'text_end', contentIndex: 0, content: text.text, partial: message });
  }
  if ('stall' in step) {
    if (step.abort) actions?.abort();
    await aborted(signal);
    return end('aborted', 'Request was aborted');
  }
  if (step.deliver !== undefined) await actions?.deliver(step.deliver);
  for (const call of step.toolCalls ?? []) {
    const toolCall: ToolCall = { type: 'toolCall', ...call };
    message.content.push(toolCall);
    const contentIndex = message.content.length - 1;
    events.push({ type: 'toolcall_start', contentIndex, partial: message });
    events.push({ type: 'toolcall_end', contentIndex, toolCall, partial: message });
  }
  if (step.tokens !== undefined) message.usage = { ...emptyUsage(), input: step.tokens, totalTokens: step.tokens };
  message.stopReason = step.toolCalls?.length ? 'toolUse' : 'stop';
  events.push({ type: 'done', reason: message.stopReason, message });
  events.end(message);
}

function aborted(signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal === undefined) return;
    if (signal.aborted) return resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
}
