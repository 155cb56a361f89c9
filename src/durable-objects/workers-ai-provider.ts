/**
 * `cloudflareBindingProvider()`: a pi-ai provider with id `cloudflare` whose models run on the
 * Worker's Workers AI binding (`env.AI.run(model, inputs)`), so a Worker needs no third-party key.
 * Any model id is accepted (`cloudflare/@cf/meta/llama-3.3-70b-instruct-fp8-fast`): the catalog
 * lives at Cloudflare, so unknown ids resolve to a zero-metadata model instead of failing.
 */
import { createAssistantMessageEventStream, createProvider } from '@earendil-works/pi-ai';
import type { Api, AssistantMessage, AssistantMessageEventStream, Model, StreamOptions, TranscriptContext } from '@earendil-works/pi-ai';
import { withDynamicModels } from '../runtime/model/model-registry.ts';
import type { Provider } from '../runtime/model/model-types.ts';
import { REQUEST_TOO_LARGE_MARKER, RETRYABLE_INTERRUPTION_MARKER } from '../runtime/model/model-retry.ts';
import type { CloudflareAIBindingErrorReason } from '../runtime/common/errors.ts';
import { WorkersAIResponse, sseData } from './workers-ai-response.ts';
import { workersAIInputs } from './workers-ai-request.ts';
import { raceAbort } from '../runtime/common/race-abort.ts';
import { emptyUsage } from '../runtime/model/usage.ts';
import { workersAIBinding } from './workers-ai-binding.ts';

export const WORKERS_AI_PROVIDER_ID = 'cloudflare';
export const WORKERS_AI_API = 'cloudflare-workers-ai-binding';
const DEFAULT_BINDING = 'AI';
const DEFAULT_STREAM_IDLE_TIMEOUT_MS = 5 * 60_000;

/** The part of the `Ai` binding this provider calls. */
export interface WorkersAIBinding {
  run(model: string, inputs: Record<string, unknown>, options?: Record<string, unknown>): Promise<unknown>;
}

export interface CloudflareBindingProviderOptions {
  /**
   * The Workers AI binding, e.g. `env.AI`. Omitted ⇒ the binding named `bindingName` in the env
   * the Flue Worker was configured with, looked up at call time.
   */
  binding?: WorkersAIBinding;
  /** Name of the binding (for lookup and error messages). Default `'AI'`. */
  bindingName?: string;
  /** Routes calls through this AI Gateway (`run(…, { gateway })`). Off unless given. */
  gateway?: { id: string; skipCache?: boolean; cacheTtl?: number };
  /** A stream with no data for this long is ended as a retryable interruption. Default 5 min; 0 disables. */
  streamIdleTimeoutMs?: number;
  /** Ask for streamed results (SSE). Default true. */
  stream?: boolean;
}

export function cloudflareBindingProvider(options: CloudflareBindingProviderOptions = {}): Provider {
  const bindingName = options.bindingName ?? DEFAULT_BINDING;
  const streams = {
    stream: (model: Model<Api>, context: TranscriptContext, streamOptions?: StreamOptions) =>
      streamWorkersAI(model, context, streamOptions, options, bindingName),
    streamSimple: (model: Model<Api>, context: TranscriptContext, streamOptions?: StreamOptions) =>
      streamWorkersAI(model, context, streamOptions, options, bindingName),
  };
  const provider = createProvider({
    id: WORKERS_AI_PROVIDER_ID,
    name: 'Cloudflare Workers AI (binding)',
    baseUrl: '',
    // The binding is the credential; pi still needs auth to resolve before it calls a provider.
    auth: { apiKey: { name: `Workers AI binding ${bindingName}`, resolve: async () => ({ auth: {}, source: `binding ${bindingName}` }) } },
    models: [],
    api: streams,
  });
  return withDynamicModels(provider, workersAIModel);
}

/** Zero metadata: Cloudflare's catalog is not mirrored here (contextWindow 0 = unknown). */
function workersAIModel(modelId: string): Model<Api> {
  return {
    id: modelId,
    name: modelId,
    api: WORKERS_AI_API,
    provider: WORKERS_AI_PROVIDER_ID,
    baseUrl: '',
    reasoning: false,
    input: ['text'],
    contextWindow: 0,
    maxTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  };
}

function streamWorkersAI(
  model: Model<Api>,
  context: TranscriptContext,
  streamOptions: StreamOptions | undefined,
  options: CloudflareBindingProviderOptions,
  bindingName: string,
): AssistantMessageEventStream {
  const events = createAssistantMessageEventStream();
  const output: AssistantMessage = {
    role: 'assistant',
    content: [],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: emptyUsage(),
    stopReason: 'stop',
    timestamp: Date.now(),
  };
  const fail = (reason: CloudflareAIBindingErrorReason | 'aborted', detail: string) => {
    output.stopReason = reason === 'aborted' ? 'aborted' : 'error';
    output.errorMessage = reason === 'aborted' ? detail : bindingErrorMessage(reason, bindingName, model.id, detail);
    events.push({ type: 'error', reason: output.stopReason as 'aborted' | 'error', error: output });
    events.end();
  };
  void (async () => {
    const binding = (options.binding ?? workersAIBinding(bindingName)) as WorkersAIBinding | undefined;
    if (binding === undefined || binding === null || typeof binding.run !== 'function') {
      fail(
        'binding_missing',
        `the Worker has no "${bindingName}" binding. Add "ai": { "binding": "${bindingName}" } to wrangler.jsonc, or pass cloudflareBindingProvider({ binding }).`,
      );
      return;
    }
    const stream = options.stream ?? true;
    const inputs = workersAIInputs(context, { stream, maxTokens: streamOptions?.maxTokens, temperature: streamOptions?.temperature });
    const signal = streamOptions?.signal;
    events.push({ type: 'start', partial: output });
    let result: unknown;
    try {
      const run = binding.run(
        model.id,
        inputs as unknown as Record<string, unknown>,
        options.gateway ? { gateway: options.gateway } : undefined,
      );
      result = await (signal === undefined ? run : raceAbort(run, signal));
    } catch (error) {
      if (signal?.aborted) return fail('aborted', 'Request was aborted');
      const detail = error instanceof Error ? error.message : String(error);
      return fail(/\b413\b|too large/i.test(detail) ? 'request_too_large' : 'run_failed', detail);
    }
    const response = new WorkersAIResponse();
    let text: { type: 'text'; text: string } | undefined;
    const addText = (delta: string) => {
      if (delta === '') return;
      if (text === undefined) {
        text = { type: 'text', text: '' };
        output.content.push(text);
        events.push({ type: 'text_start', contentIndex: output.content.length - 1, partial: output });
      }
      text.text += delta;
      events.push({ type: 'text_delta', contentIndex: output.content.indexOf(text), delta, partial: output });
    };
    try {
      if (result instanceof ReadableStream) {
        const reader = (result as ReadableStream<Uint8Array>).getReader();
        const read = guardedRead(reader, options.streamIdleTimeoutMs ?? DEFAULT_STREAM_IDLE_TIMEOUT_MS, signal);
        for await (const chunk of sseData(read)) addText(response.add(chunk));
      } else if (typeof result === 'object' && result !== null) {
        addText(response.add(result));
      } else {
        return fail(
          'invalid_response',
          `run() returned ${result === null ? 'null' : typeof result}, expected a text-generation result or a stream.`,
        );
      }
    } catch (error) {
      if (signal?.aborted) return fail('aborted', 'Request was aborted');
      if (error instanceof StreamIdleError) return fail('stream_idle', error.message);
      return fail('invalid_response', error instanceof Error ? error.message : String(error));
    }
    if (text !== undefined)
      events.push({ type: 'text_end', contentIndex: output.content.indexOf(text), content: text.text, partial: output });
    for (const call of response.toolCalls()) {
      output.content.push(call);
      const contentIndex = output.content.length - 1;
      events.push({ type: 'toolcall_start', contentIndex, partial: output });
      events.push({ type: 'toolcall_delta', contentIndex, delta: JSON.stringify(call.arguments), partial: output });
      events.push({ type: 'toolcall_end', contentIndex, toolCall: call, partial: output });
    }
    const usage = response.usage;
    if (usage !== undefined) {
      output.usage.input = usage.prompt_tokens ?? 0;
      output.usage.output = usage.completion_tokens ?? 0;
      output.usage.totalTokens = usage.total_tokens ?? output.usage.input + output.usage.output;
    }
    const hasToolCalls = output.content.some((part) => part.type === 'toolCall');
    output.stopReason = hasToolCalls ? 'toolUse' : response.finishReason === 'length' ? 'length' : 'stop';
    if (response.finishReason !== undefined) output.rawStopReason = response.finishReason;
    events.push({ type: 'done', reason: output.stopReason as 'stop' | 'length' | 'toolUse', message: output });
    events.end();
  })();
  return events;
}

/**
 * The error text pi carries on the failed turn. The trailing marker lets the runtime rebuild the
 * typed error from a persisted message (modelErrorFromMessage), and the shared markers drive
 * overflow compaction (413) and retry (idle stream).
 */
function bindingErrorMessage(reason: CloudflareAIBindingErrorReason, binding: string, model: string, detail: string): string {
  const retryable = reason === 'stream_idle' || (reason === 'run_failed' && CAPACITY.test(detail));
  const extra = reason === 'request_too_large' ? ` ${REQUEST_TOO_LARGE_MARKER}` : retryable ? ` ${RETRYABLE_INTERRUPTION_MARKER}` : '';
  return `Workers AI binding "${binding}" failed for model "${model}": ${detail}${extra} (cloudflare_ai_binding_error:${reason}:${binding})`;
}

// Workers AI reports a busy model as "capacity temporarily exceeded", which the generic transient
// pattern does not catch; rate limits and 5xx statuses it already does.
const CAPACITY = /capacity|temporarily/i;

class StreamIdleError extends Error {}

function guardedRead(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  idleMs: number,
  signal: AbortSignal | undefined,
): () => Promise<ReadableStreamReadResult<Uint8Array>> {
  return async () => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const pending: Promise<ReadableStreamReadResult<Uint8Array>>[] = [reader.read()];
    if (idleMs > 0) {
      pending.push(
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new StreamIdleError(`no stream data for ${idleMs} ms`)), idleMs);
        }),
      );
    }
    try {
      return await (signal === undefined ? Promise.race(pending) : raceAbort(Promise.race(pending), signal));
    } catch (error) {
      void reader.cancel().catch(() => {});
      throw error;
    } finally {
      if (timer !== undefined) clearTimeout(timer);
    }
  };
}
