import { env } from 'cloudflare:test';
import { afterEach, expect, test } from 'vitest';
import { normalizeContext } from '@earendil-works/pi-ai';
import type { Api, Model } from '@earendil-works/pi-ai';
import { AgentRunError, dispatch, init } from '@flue/runtime';
import { cloudflareBindingProvider, type WorkersAIBinding } from '@flue/runtime/cloudflare';
import type { FakeAICall, FakeAIStep } from './fake-workers-ai.ts';
import { Forecaster, GPT_OSS, LLAMA } from './workers-ai-agents.ts';
import { DEFAULT_CONTEXT_WINDOW } from '../../src/runtime/model/compaction.ts';
import { configuredRuntime } from '../../src/runtime/host/runtime.ts';
import { expectReduced } from '../support/reduced-text.ts';
import './worker.ts';

interface FakeAI extends WorkersAIBinding {
  script(model: string, steps: FakeAIStep[]): Promise<void>;
  calls(model: string): Promise<FakeAICall[]>;
  reset(): Promise<void>;
}
const ai = (env as unknown as { AI: FakeAI }).AI;

afterEach(async () => ai.reset());

async function ask(id: string, message: string) {
  const receipt = await dispatch(Forecaster, { id, message });
  return init(Forecaster, { id }).read(receipt);
}

test('a cloudflare/ model streams its reply from the AI binding, with the prompt, history and tools in the documented input shape', async () => {
  await ai.script(LLAMA, [
    {
      events: [
        { response: 'Hel' },
        { response: 'lo' },
        { response: '', usage: { prompt_tokens: 12, completion_tokens: 2, total_tokens: 14 } },
      ],
    },
  ]);
  const reply = await ask('plain', 'hi');
  expect(reply.text).toBe('Hello');

  const [call] = await ai.calls(LLAMA);
  expect(call!.inputs.stream).toBe(true);
  const messages = call!.inputs.messages as { role: string; content: string }[];
  expect(messages[0]!.role).toBe('system');
  expect(messages[0]!.content).toContain('You report the weather.');
  expect(messages.at(-1)).toEqual({ role: 'user', content: 'hi' });
  expect(call!.inputs.tools).toContainEqual({
    type: 'function',
    function: {
      name: 'forecast',
      description: 'The weather forecast for a city.',
      parameters: expect.objectContaining({ type: 'object' }),
    },
  });
});

test('a streamed tool call runs the tool, sends its result back as a tool message, and the final text is the reply', async () => {
  await ai.script(LLAMA, [
    { events: [{ response: '', tool_calls: [{ name: 'forecast', arguments: { city: 'Paris' } }] }] },
    { events: [{ response: 'Sunny in Paris.' }] },
  ]);
  const reply = await ask('tools', 'weather in Paris?');
  expect(reply.text).toBe('Sunny in Paris.');

  const calls = await ai.calls(LLAMA);
  expect(calls).toHaveLength(2);
  const messages = calls[1]!.inputs.messages as Record<string, unknown>[];
  const assistant = messages.find((message) => message.role === 'assistant')!;
  const toolCalls = assistant.tool_calls as { id: string; type: string; function: { name: string; arguments: string } }[];
  expect(toolCalls).toHaveLength(1);
  expect(toolCalls[0]!.function.name).toBe('forecast');
  expect(JSON.parse(toolCalls[0]!.function.arguments)).toEqual({ city: 'Paris' });
  const result = messages.find((message) => message.role === 'tool')!;
  expect(result.tool_call_id).toBe(toolCalls[0]!.id);
  expect(result.name).toBe('forecast');
  expect(result.content).toContain('sunny');
});

test('non-streamed results are read in both documented shapes: choices[0].message (OpenAI-compatible) and response/tool_calls', async () => {
  await ai.script(GPT_OSS, [
    {
      result: {
        choices: [
          {
            message: {
              role: 'assistant',
              content: null,
              tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'forecast', arguments: '{"city":"Oslo"}' } }],
            },
            finish_reason: 'tool_calls',
          },
        ],
        usage: { prompt_tokens: 20, completion_tokens: 5, total_tokens: 25 },
      },
    },
    { result: { response: 'Sunny in Oslo.', tool_calls: [], usage: { prompt_tokens: 30, completion_tokens: 4, total_tokens: 34 } } },
  ]);
  const reply = await ask('oai-plain', 'weather in Oslo?');
  expect(reply.text).toBe('Sunny in Oslo.');
  const calls = await ai.calls(GPT_OSS);
  const tool = (calls[1]!.inputs.messages as Record<string, unknown>[]).find((message) => message.role === 'tool')!;
  expect(tool.tool_call_id).toBe('call_a');
  expect(tool.content).toContain('Oslo');
});

test('an error from the binding fails the submission with CloudflareAIBindingError', async () => {
  await ai.script(LLAMA, [{ error: 'AiError: 3010: Invalid or incomplete input for the model' }]);
  const error = await ask('broken', 'hi').catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(AgentRunError);
  expect((error as AgentRunError).cause).toMatchObject({
    type: 'cloudflare_ai_binding_error',
    meta: { reason: 'run_failed', binding: 'AI', model: LLAMA },
  });
  expect((error as Error).message).toContain('Invalid or incomplete input');
});

/** A direct call on a provider instance, as pi-ai's Models would make it. */
function llama(): Model<Api> {
  return {
    id: LLAMA,
    name: LLAMA,
    api: 'cloudflare-workers-ai-binding',
    provider: 'cloudflare',
    baseUrl: '',
    reasoning: false,
    input: ['text'],
    contextWindow: 0,
    maxTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  };
}

test('stream: false asks the binding for a whole result and maps its usage', async () => {
  await ai.script(LLAMA, [{ result: { response: 'Plain.', usage: { prompt_tokens: 7, completion_tokens: 1, total_tokens: 8 } } }]);
  const provider = cloudflareBindingProvider({ binding: ai, stream: false });
  const message = await provider
    .streamSimple(
      llama(),
      normalizeContext({ systemPrompt: 'Be terse.', messages: [{ role: 'user', content: 'hi', timestamp: Date.now() }] }),
    )
    .result();
  expect(message.stopReason).toBe('stop');
  expect(message.content).toEqual([{ type: 'text', text: 'Plain.' }]);
  expect(message.usage).toMatchObject({ input: 7, output: 1, totalTokens: 8 });
  const [call] = await ai.calls(LLAMA);
  expect(call!.inputs).toEqual({
    messages: [
      { role: 'system', content: 'Be terse.' },
      { role: 'user', content: 'hi' },
    ],
    stream: false,
  });
});

test('a provider whose binding is missing from the env fails naming the binding', async () => {
  const provider = cloudflareBindingProvider({ bindingName: 'NO_SUCH_AI' });
  const message = await provider
    .streamSimple(llama(), normalizeContext({ messages: [{ role: 'user', content: 'hi', timestamp: Date.now() }] }))
    .result();
  expect(message.stopReason).toBe('error');
  expect(message.errorMessage).toContain('no "NO_SUCH_AI" binding');
  expect(message.errorMessage).toContain('(cloudflare_ai_binding_error:binding_missing:NO_SUCH_AI)');
});

test('a Workers AI model has no known window, so the default one holds: an oversized message reaches it reduced, the history keeps it whole', async () => {
  await ai.script(LLAMA, [{ events: [{ response: 'Got the gist.' }] }]);
  const body = `BEGIN ${'lorem ipsum '.repeat(40_000)} END`;
  expect((await ask('oversized', body)).text).toBe('Got the gist.');
  const [call] = await ai.calls(LLAMA);
  const messages = call!.inputs.messages as { role: string; content: string }[];
  const chars = messages.reduce((sum, message) => sum + message.content.length, 0) + JSON.stringify(call!.inputs.tools).length;
  expect(Math.ceil(chars / 4)).toBeLessThanOrEqual(DEFAULT_CONTEXT_WINDOW);
  expectReduced(messages.at(-1)!.content, body, 'message', DEFAULT_CONTEXT_WINDOW);
  const history = (await configuredRuntime()!.history('Forecaster', 'oversized'))!;
  expect((history.messages[0]!.parts[0] as { text: string }).text).toBe(body);
});
