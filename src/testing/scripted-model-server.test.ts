import { createModels } from '@earendil-works/pi-ai';
import type {
  Api,
  AssistantMessage,
  AssistantMessageEvent,
  Context,
  Model,
  MutableModels,
  Provider,
  SimpleStreamOptions,
  Tool,
  ToolResultMessage,
} from '@earendil-works/pi-ai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NO_STEP_QUEUED_MESSAGE, startScriptedModelServer } from './scripted-model-server.ts';
import type { ScriptedModelServer } from './scripted-model-server.ts';
import { scriptedProvider } from './scripted-provider.ts';
import type { ScriptedApi } from './scripted-provider.ts';

const weatherTool: Tool = {
  name: 'get_weather',
  description: 'Look up the weather for a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string', description: 'City name' } },
    required: ['city'],
  },
};

const SYSTEM_PROMPT = 'You are a terse weather assistant.';

function userMessage(text: string): Context['messages'][number] {
  return { role: 'user', content: text, timestamp: Date.now() };
}

function toolResult(toolCallId: string, text: string): ToolResultMessage {
  return {
    role: 'toolResult',
    toolCallId,
    toolName: 'get_weather',
    content: [{ type: 'text', text }],
    isError: false,
    timestamp: Date.now(),
  };
}

interface Run {
  events: AssistantMessageEvent[];
  result: AssistantMessage;
}

describe.each<ScriptedApi>(['openai-completions', 'anthropic-messages'])('scripted model server (%s)', (api) => {
  let server: ScriptedModelServer;
  let models: MutableModels;
  let model: Model<Api>;

  beforeAll(async () => {
    server = await startScriptedModelServer();
    models = createModels();
    // scriptedProvider() is declared by the members the runtime reads; the object is pi-ai's own.
    models.setProvider(scriptedProvider({ baseUrl: server.url, api }) as Provider);
    const found = models.getModel('scripted', 'model');
    if (!found) throw new Error('scripted model not registered');
    model = found;
  });

  afterEach(() => {
    server.reset();
  });

  afterAll(async () => {
    await server.close();
  });

  async function run(context: Context, options?: SimpleStreamOptions): Promise<Run> {
    const stream = models.streamSimple(model, context, options);
    const events: AssistantMessageEvent[] = [];
    for await (const event of stream) events.push(event);
    return { events, result: await stream.result() };
  }

  it('streams text as several deltas and assembles the final message', async () => {
    server.script({ text: 'The weather in Paris is sunny today.' });
    const { events, result } = await run({ systemPrompt: SYSTEM_PROMPT, messages: [userMessage('Weather?')] });

    const deltas = events.filter((event) => event.type === 'text_delta').map((event) => event.delta);
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe('The weather in Paris is sunny today.');
    expect(result.stopReason).toBe('stop');
    expect(result.content).toEqual([{ type: 'text', text: 'The weather in Paris is sunny today.' }]);
    expect(result.api).toBe(api);
    expect(server.pending()).toBe(0);
  });

  it('sends explicit chunks verbatim and streams reasoning before text', async () => {
    server.script({ reasoning: ['Think', 'ing...'], text: ['Hel', 'lo'] });
    const { events, result } = await run({ messages: [userMessage('hi')] });

    expect(events.filter((e) => e.type === 'thinking_delta').map((e) => e.delta)).toEqual(['Think', 'ing...']);
    expect(events.filter((e) => e.type === 'text_delta').map((e) => e.delta)).toEqual(['Hel', 'lo']);
    expect(result.content.map((block) => block.type)).toEqual(['thinking', 'text']);
    expect(result.content[0]).toMatchObject({ type: 'thinking', thinking: 'Thinking...' });
  });

  it('streams a tool call in argument fragments and stops with toolUse', async () => {
    server.script({ text: 'Let me check.', toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] });
    const { events, result } = await run({
      systemPrompt: SYSTEM_PROMPT,
      messages: [userMessage('Weather in Paris?')],
      tools: [weatherTool],
    });

    const fragments = events
      .filter((e) => e.type === 'toolcall_delta')
      .map((e) => e.delta)
      .filter(Boolean);
    expect(fragments.length).toBeGreaterThan(1);
    expect(fragments.join('')).toBe('{"city":"Paris"}');
    expect(result.stopReason).toBe('toolUse');
    const call = result.content.find((block) => block.type === 'toolCall');
    expect(call).toMatchObject({ type: 'toolCall', id: 'call_1', name: 'get_weather', arguments: { city: 'Paris' } });
  });

  it('passes raw argument fragments through and honours explicit ids', async () => {
    server.script({
      toolCalls: [
        { id: 'abc', name: 'get_weather', arguments: ['{"ci', 'ty": "Ro', 'me"}'] },
        { name: 'get_weather', arguments: { city: 'Oslo' } },
      ],
    });
    const { result } = await run({ messages: [userMessage('two cities')], tools: [weatherTool] });

    const calls = result.content.filter((block) => block.type === 'toolCall');
    expect(calls.map((c) => [c.id, c.arguments])).toEqual([
      ['abc', { city: 'Rome' }],
      ['call_1', { city: 'Oslo' }],
    ]);
  });

  it('reports the scripted usage', async () => {
    server.script({ text: 'ok', usage: { input: 120, output: 7, cacheRead: 30 } });
    const { result } = await run({ messages: [userMessage('count me')] });

    expect(result.usage).toMatchObject({ input: 120, output: 7, cacheRead: 30, cacheWrite: 0, totalTokens: 157 });
  });

  it('estimates usage when the step does not give it', async () => {
    server.script({ text: 'a reply of some length' });
    const { result } = await run({ messages: [userMessage('x'.repeat(400))] });

    expect(result.usage.input).toBeGreaterThanOrEqual(100);
    expect(result.usage.output).toBe(Math.ceil('a reply of some length'.length / 4));
  });

  it('maps finishReason length', async () => {
    server.script({ text: 'cut of', finishReason: 'length' });
    const { result } = await run({ messages: [userMessage('long')] });

    expect(result.stopReason).toBe('length');
  });

  it('records system prompt, tools and messages, including a tool result turn', async () => {
    server.script(
      { reasoning: 'Need weather.', toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] },
      { text: 'Sunny in Paris.' },
    );
    const first = await run({ systemPrompt: SYSTEM_PROMPT, messages: [userMessage('Weather in Paris?')], tools: [weatherTool] });
    const callId = first.result.content.find((block) => block.type === 'toolCall')?.id;
    expect(callId).toBe('call_1');

    const second = await run({
      systemPrompt: SYSTEM_PROMPT,
      messages: [userMessage('Weather in Paris?'), first.result, toolResult('call_1', 'sunny, 24C')],
      tools: [weatherTool],
    });
    expect(second.result.content).toEqual([{ type: 'text', text: 'Sunny in Paris.' }]);

    const [req1, req2] = await server.waitForRequests(2);
    for (const request of [req1, req2]) {
      expect(request?.api).toBe(api);
      expect(request?.system).toBe(SYSTEM_PROMPT);
      expect(request?.tools).toEqual([
        {
          name: 'get_weather',
          description: 'Look up the weather for a city',
          parameters: expect.objectContaining({
            type: 'object',
            properties: { city: { type: 'string', description: 'City name' } },
            required: ['city'],
          }),
        },
      ]);
    }
    expect(req1?.messages).toEqual([{ role: 'user', content: 'Weather in Paris?' }]);
    expect(req2?.messages).toMatchObject([
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: { city: 'Paris' } }],
      },
      { role: 'tool', content: 'sunny, 24C', toolCallId: 'call_1' },
    ]);
    expect(req2?.messages).toHaveLength(3);
    expect(req2?.body.stream).toBe(true);
    expect(req2?.headers['content-type']).toContain('application/json');
    if (api === 'anthropic-messages') {
      expect(req2?.path).toBe('/v1/messages?beta=true');
      expect(req2?.headers['x-api-key']).toBe('scripted');
    } else {
      expect(req2?.path).toBe('/v1/chat/completions');
      expect(req2?.headers.authorization).toBe('Bearer scripted');
      expect(req2?.body.stream_options).toEqual({ include_usage: true });
    }
  });

  it('lets a function step answer from the recorded request', async () => {
    server.script((request) => ({ text: `you said: ${request.messages.at(-1)?.content}` }));
    const { result } = await run({ messages: [userMessage('ping')] });

    expect(result.content).toEqual([{ type: 'text', text: 'you said: ping' }]);
  });

  it('turns an HTTP 500 step into stopReason error', async () => {
    server.script({ status: 500, errorBody: 'upstream exploded' });
    const { events, result } = await run({ messages: [userMessage('hi')] });

    expect(result.stopReason).toBe('error');
    expect(result.errorMessage).toContain('upstream exploded');
    expect(events.at(-1)?.type).toBe('error');
    expect(server.requests).toHaveLength(1);
  });

  it('answers an empty queue with an obvious error', async () => {
    const { result } = await run({ messages: [userMessage('anyone?')] });

    expect(result.stopReason).toBe('error');
    expect(result.errorMessage).toContain(NO_STEP_QUEUED_MESSAGE);
  });

  it('holds a hung stream open until the caller aborts', async () => {
    server.script({ text: ['one ', 'two ', 'three'], hangAfterChunks: 3 });
    const controller = new AbortController();
    const stream = models.streamSimple(model, { messages: [userMessage('hang')] }, { signal: controller.signal });
    const events: AssistantMessageEvent[] = [];
    let sawDelta!: () => void;
    const firstDelta = new Promise<void>((resolve) => {
      sawDelta = resolve;
    });
    const consumed = (async () => {
      for await (const event of stream) {
        events.push(event);
        if (event.type === 'text_delta') sawDelta();
      }
    })();

    // The stream is under way; a whole second response through the same server after that shows
    // the end of the first would have arrived by now, had it been sent (a sleep would pass
    // vacuously on a slow machine).
    await firstDelta;
    server.script({ text: 'control' });
    expect((await run({ messages: [userMessage('control')] })).result.stopReason).toBe('stop');
    expect(events.some((e) => e.type === 'done' || e.type === 'error')).toBe(false);

    controller.abort();
    await consumed;
    const result = await stream.result();
    expect(result.stopReason).toBe('aborted');
    expect(events.at(-1)?.type).toBe('error');
  });

  it('fails the stream when the socket is dropped mid-stream', async () => {
    server.script({ text: ['one ', 'two ', 'three'], dropAfterChunks: 2 });
    const { result } = await run({ messages: [userMessage('drop')] });

    expect(result.stopReason).toBe('error');
  });

  it('serves steps in FIFO order and waits for requests', async () => {
    server.script({ text: 'first' }, { text: 'second' });
    const pending = server.waitForRequests(2, 2000);
    const a = await run({ messages: [userMessage('1')] });
    const b = await run({ messages: [userMessage('2')] });

    expect([a.result.content, b.result.content]).toEqual([[{ type: 'text', text: 'first' }], [{ type: 'text', text: 'second' }]]);
    expect((await pending).map((request) => request.messages[0]?.content)).toEqual(['1', '2']);
    await expect(server.waitForRequests(3, 50)).rejects.toThrow(/waited 50 ms for 3 request/);
  });
});

describe('scripted model server without pi-ai', () => {
  let server: ScriptedModelServer;

  beforeAll(async () => {
    server = await startScriptedModelServer();
  });

  afterEach(() => {
    server.reset();
  });

  afterAll(async () => {
    await server.close();
  });

  it('answers non-stream chat-completions requests', async () => {
    server.script({ text: 'plain', toolCalls: [{ id: 't1', name: 'f', arguments: { a: 1 } }] });
    const response = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    });
    const body = (await response.json()) as any;

    expect(response.status).toBe(200);
    expect(body.choices[0]).toMatchObject({
      finish_reason: 'tool_calls',
      message: {
        role: 'assistant',
        content: 'plain',
        tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
      },
    });
  });

  it('emits the raw OpenAI stream shape, usage chunk only on request', async () => {
    server.script({ text: ['a'], usage: { input: 3, output: 1 } }, { text: ['a'] });
    const request = (includeUsage: boolean) =>
      fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        body: JSON.stringify({
          model: 'm',
          stream: true,
          messages: [],
          ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
        }),
      }).then((response) => response.text());

    const withUsage = (await request(true)).split('\n\n').filter(Boolean);
    expect(withUsage.at(-1)).toBe('data: [DONE]');
    const usageChunk = JSON.parse(withUsage.at(-2)?.slice('data: '.length) ?? '{}');
    expect(usageChunk).toMatchObject({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } });

    const without = (await request(false)).split('\n\n').filter(Boolean);
    expect(without.some((frame) => frame.includes('"usage"'))).toBe(false);
    expect(without).toHaveLength(4); // role, content, finish, [DONE]
  });

  const post = (path: string, body: unknown): Promise<Response> =>
    fetch(`${server.url}${path}`, { method: 'POST', body: JSON.stringify(body) });

  it('normalizes leading and later system messages and mixed Anthropic user turns', async () => {
    server.script({ text: 'a' }, { text: 'b' });
    await post('/v1/chat/completions', {
      model: 'm',
      messages: [
        { role: 'system', content: 'S1' },
        { role: 'developer', content: [{ type: 'text', text: 'S2' }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'image_url', image_url: { url: 'data:x' } },
          ],
        },
        { role: 'system', content: 'later' },
      ],
    });
    await post('/v1/messages', {
      model: 'm',
      system: 'plain system',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'x1', content: [{ type: 'text', text: 'r1' }], is_error: true },
            { type: 'text', text: 'and also' },
          ],
        },
      ],
    });

    const [openai, anthropic] = server.requests;
    expect(openai?.system).toBe('S1\n\nS2');
    expect(openai?.messages).toEqual([
      { role: 'user', content: 'look\n[image]' },
      { role: 'system', content: 'later' },
    ]);
    expect(anthropic?.system).toBe('plain system');
    expect(anthropic?.messages).toEqual([
      { role: 'tool', content: 'r1', toolCallId: 'x1', isError: true },
      { role: 'user', content: 'and also' },
    ]);
  });

  it('ends hung streams on close', async () => {
    const other = await startScriptedModelServer();
    other.script({ text: ['a', 'b'], hangAfterChunks: 1 });
    const response = await fetch(`${other.url}/v1/messages`, {
      method: 'POST',
      body: JSON.stringify({ model: 'm', stream: true, messages: [] }),
    });
    const body = response.text();
    await other.close();

    await expect(body).rejects.toThrow();
  });

  it('404s unknown routes without consuming a step', async () => {
    server.script({ text: 'kept' });
    const response = await fetch(`${server.url}/v2/other`, { method: 'POST', body: '{}' });

    expect(response.status).toBe(404);
    expect(server.pending()).toBe(1);
    server.reset();
    expect(server.pending()).toBe(0);
  });
});
