import { beforeEach, describe, expect, it } from 'vitest';
import { fauxProvider, normalizeContext } from '@earendil-works/pi-ai';
import { CloudflareAIBindingError } from '../runtime/common/errors.ts';
import { getModels, modelErrorFromMessage, resolveModel } from '../runtime/model/model-registry.ts';
import { setProvider } from '../runtime/model/providers.ts';
import { isOverflow, isRetryableModelError } from '../runtime/model/model-retry.ts';
import { configureFlueWorker } from './worker-config.ts';
import { cloudflareBindingProvider, type WorkersAIBinding } from './workers-ai-provider.ts';

/** A binding that answers every run() with `answer` and records what it was asked. */
function binding(answer: () => Promise<unknown>) {
  const runs: { model: string; inputs: Record<string, unknown>; options?: Record<string, unknown> }[] = [];
  const ai: WorkersAIBinding = {
    run: async (model, inputs, options) => {
      runs.push({ model, inputs, ...(options !== undefined ? { options } : {}) });
      return answer();
    },
  };
  return { ai, runs };
}

const MODEL = '@cf/meta/llama-3.3-70b-instruct-fp8-fast';
const context = () => normalizeContext({ messages: [{ role: 'user', content: 'hi', timestamp: Date.now() }] });

beforeEach(() => getModels().clearProviders());

const workersAI = (ai: WorkersAIBinding) => cloudflareBindingProvider({ binding: ai });

describe('registration in configureFlueWorker', () => {
  it('registers provider "cloudflare" when the Worker has an AI binding; any model id resolves, with unknown limits', () => {
    configureFlueWorker({ env: { AI: binding(async () => ({ response: '' })).ai }, agents: [], workersAI });
    const model = resolveModel(`cloudflare/${MODEL}`);
    expect(model).toMatchObject({ id: MODEL, provider: 'cloudflare', contextWindow: 0, maxTokens: 0, reasoning: false, input: ['text'] });
  });

  it('FLUE_WORKERS_AI=off opts out: cloudflare/ models then fail naming the AI binding', () => {
    configureFlueWorker({ env: { AI: binding(async () => ({ response: '' })).ai, FLUE_WORKERS_AI: 'off' }, agents: [], workersAI });
    expect(getModels().getProvider('cloudflare')).toBeUndefined();
    const error = (() => {
      try {
        resolveModel(`cloudflare/${MODEL}`);
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(CloudflareAIBindingError);
    expect(error).toMatchObject({ type: 'cloudflare_ai_binding_error', meta: { reason: 'binding_missing', binding: 'AI' } });
    expect((error as Error).message).toContain('"ai": { "binding": "AI" }');
  });

  it('a Worker built without the Workers AI provider registers nothing, even with an AI binding', () => {
    configureFlueWorker({ env: { AI: binding(async () => ({ response: '' })).ai }, agents: [] });
    expect(getModels().getProvider('cloudflare')).toBeUndefined();
    expect(() => resolveModel(`cloudflare/${MODEL}`)).toThrow(
      /names a cloudflare\/ model literally or flue\.config\.ts lists "cloudflare"/,
    );
  });

  it('without an AI binding nothing is registered', () => {
    configureFlueWorker({ env: {}, agents: [] });
    expect(() => resolveModel(`cloudflare/${MODEL}`)).toThrow(CloudflareAIBindingError);
  });

  it('a provider the app registered under "cloudflare" wins', () => {
    const own = fauxProvider({ provider: 'cloudflare', models: [{ id: 'mine' }] }).provider;
    setProvider(own);
    configureFlueWorker({ env: { AI: binding(async () => ({ response: '' })).ai }, agents: [], workersAI });
    expect(getModels().getProvider('cloudflare')).toBe(own);
  });
});

describe('cloudflareBindingProvider', () => {
  const model = () => {
    setProvider(cloudflareBindingProvider({ binding: binding(async () => ({})).ai }));
    return resolveModel(`cloudflare/${MODEL}`);
  };

  it('passes an AI Gateway only when one is given', async () => {
    const { ai, runs } = binding(async () => ({ response: 'ok' }));
    await cloudflareBindingProvider({ binding: ai, stream: false, gateway: { id: 'my-gateway' } })
      .streamSimple(model(), context())
      .result();
    await cloudflareBindingProvider({ binding: ai, stream: false }).streamSimple(model(), context()).result();
    expect(runs.map((run) => run.options)).toEqual([{ gateway: { id: 'my-gateway' } }, undefined]);
  });

  it('a 413 from the binding is a request_too_large error that triggers overflow handling, not a retry', async () => {
    const { ai } = binding(async () => {
      throw new Error('AiError: 413 Request Entity Too Large');
    });
    const message = await cloudflareBindingProvider({ binding: ai }).streamSimple(model(), context()).result();
    expect(message.stopReason).toBe('error');
    expect(isOverflow(message, 0)).toBe(true);
    expect(isRetryableModelError(message)).toBe(false);
    expect(modelErrorFromMessage(message.errorMessage)).toMatchObject({
      type: 'cloudflare_ai_binding_error',
      meta: { reason: 'request_too_large', binding: 'AI', model: MODEL },
    });
  });

  it('a busy model is retried like other transient provider errors; an invalid input is not', async () => {
    const answer = (text: string) => async () => {
      throw new Error(text);
    };
    const busy = await cloudflareBindingProvider({
      binding: binding(answer('AiError: 3040: Capacity temporarily exceeded, please try again.')).ai,
    })
      .streamSimple(model(), context())
      .result();
    const invalid = await cloudflareBindingProvider({
      binding: binding(answer('AiError: 3010: Invalid or incomplete input for the model')).ai,
    })
      .streamSimple(model(), context())
      .result();
    expect(isRetryableModelError(busy)).toBe(true);
    expect(isRetryableModelError(invalid)).toBe(false);
    expect(modelErrorFromMessage(busy.errorMessage)).toMatchObject({ meta: { reason: 'run_failed' } });
  });

  it('a stream that goes quiet past streamIdleTimeoutMs ends as a retryable interruption', async () => {
    const { ai } = binding(async () => new ReadableStream<Uint8Array>({ pull: () => new Promise(() => {}) }));
    const message = await cloudflareBindingProvider({ binding: ai, streamIdleTimeoutMs: 20 }).streamSimple(model(), context()).result();
    expect(message.stopReason).toBe('error');
    expect(isRetryableModelError(message)).toBe(true);
    expect(modelErrorFromMessage(message.errorMessage)).toMatchObject({ meta: { reason: 'stream_idle' } });
  });

  it('a result that is not a text-generation response is invalid_response', async () => {
    const { ai } = binding(async () => 'just a string');
    const message = await cloudflareBindingProvider({ binding: ai }).streamSimple(model(), context()).result();
    expect(modelErrorFromMessage(message.errorMessage)).toMatchObject({ meta: { reason: 'invalid_response' } });
  });

  it('reads tool calls nested under `function` with object arguments (the llama-4-scout result schema)', async () => {
    const { ai } = binding(async () => ({
      response: '',
      tool_calls: [{ id: 'chatcmpl-tool-1', type: 'function', function: { name: 'forecast', arguments: { city: 'Lima' } } }],
      usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
    }));
    const message = await cloudflareBindingProvider({ binding: ai }).streamSimple(model(), context()).result();
    expect(message.stopReason).toBe('toolUse');
    expect(message.content).toEqual([{ type: 'toolCall', id: 'chatcmpl-tool-1', name: 'forecast', arguments: { city: 'Lima' } }]);
  });

  it('streamed OpenAI-style tool call pieces are joined by index', async () => {
    const encoder = new TextEncoder();
    const events = [
      {
        choices: [
          { delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'forecast', arguments: '{"ci' } }] } },
        ],
      },
      { choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: 'ty":"Rome"}' } }] } }] },
      { choices: [{ delta: {}, finish_reason: 'tool_calls' }], usage: { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 } },
    ];
    const body = events.map((event) => `data: ${JSON.stringify(event)}\n\n`).join('') + 'data: [DONE]\n\n';
    const { ai } = binding(async () => new ReadableStream({ start: (c) => (c.enqueue(encoder.encode(body)), c.close()) }));
    const message = await cloudflareBindingProvider({ binding: ai }).streamSimple(model(), context()).result();
    expect(message.stopReason).toBe('toolUse');
    expect(message.content).toEqual([{ type: 'toolCall', id: 'call_1', name: 'forecast', arguments: { city: 'Rome' } }]);
    expect(message.usage).toMatchObject({ input: 9, output: 3, totalTokens: 12 });
  });
});
