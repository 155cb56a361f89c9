import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as v from 'valibot';
import { scriptedProvider } from '../../testing/scripted-provider.ts';
import { type ScriptedModelServer, startScriptedModelServer } from '../../testing/scripted-model-server.ts';
import { defineTool } from '../authoring/define-tool.ts';
import { HarnessClosedError, ResultUnavailableError, SessionBusyError } from '../common/errors.ts';
import { type HarnessDeps, createHarness } from './harness.ts';
import { registerProviders } from '../model/providers.ts';
import { renderDelegate } from '../authoring/render.ts';
import type { FlueLogger } from '../common/types.ts';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModelServer();
  registerProviders([scriptedProvider({ baseUrl: server.url, id: 'harness-unit', models: ['model'] })]);
});
afterAll(async () => server.close());

const silent = { debug() {}, info() {}, warn() {}, error() {} } as unknown as FlueLogger;
const tasks: string[] = [];

function deps(overrides: Partial<HarnessDeps> = {}): HarnessDeps {
  return {
    name: 'unit',
    render: () => renderDelegate({ name: 'unit', description: 'A unit.', agent: () => 'Be brief.' }, undefined),
    modelSpec: 'harness-unit/model',
    thinkingLevel: undefined,
    signal: new AbortController().signal,
    log: () => silent,
    depth: 0,
    task: async (call) => {
      tasks.push(String(call.arguments.prompt));
      return { isError: false, content: 'delegated result' };
    },
    ...overrides,
  };
}

/**
 * A tool that runs until its call is aborted and then, like a shell interpreter reaching its next
 * statement boundary, takes a moment to stop; `running` resolves once it has started.
 */
function slowToStop() {
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  const tool = defineTool({
    name: 'slow_to_stop',
    description: 'Runs until aborted, then takes a moment to stop.',
    input: v.object({}),
    run: ({ signal }): Promise<never> => {
      started();
      return new Promise((_resolve, reject) =>
        signal!.addEventListener('abort', () => setTimeout(() => reject(new Error('Execution aborted')), 20), { once: true }),
      );
    },
  });
  return { tool, running };
}

describe('createHarness', () => {
  it("prompts in a scratch conversation with the render's system prompt and answers text, usage and model", async () => {
    server.script({ text: 'Scratch answer.' });
    const harness = createHarness(deps());
    const response = await harness.prompt('Question?');
    expect(response).toMatchObject({ text: 'Scratch answer.', model: { provider: 'harness-unit', id: 'model' } });
    expect(response.usage.output).toBeGreaterThan(0);
    const request = server.requests.at(-1)!;
    expect(request.system).toContain('Be brief.');
  });

  it('keeps the scratch conversation across prompts', async () => {
    server.script({ text: 'First.' }, { text: 'Second.' });
    const harness = createHarness(deps());
    await harness.prompt('One?');
    await harness.prompt('Two?');
    const texts = JSON.stringify(server.requests.at(-1)!.messages);
    expect(texts).toContain('One?');
    expect(texts).toContain('First.');
  });

  it("runs the turn's tool calls through the shared dispatch, then loops to the answer", async () => {
    let ran = 0;
    const add = defineTool({
      name: 'add',
      description: 'Adds.',
      input: v.object({ a: v.number(), b: v.number() }),
      run: ({ data }) => (ran++, { output: data.a + data.b }),
    });
    server.script(
      {
        toolCalls: [
          { name: 'add', arguments: { a: 2, b: 3 } },
          { name: 'missing', arguments: {} },
          { name: 'task', arguments: { prompt: 'sub', agent: 'x' } },
        ],
      },
      { text: 'Five.' },
    );
    const response = await createHarness(deps()).prompt('Add.', { tools: [add] });
    expect(response.text).toBe('Five.');
    expect(ran).toBe(1);
    expect(tasks).toContain('sub');
    const results = server.requests.at(-1)!.messages.filter((m) => m.role === 'tool');
    expect(results.map((m) => m.content)).toEqual(['5', 'Tool "missing" is not available.', 'delegated result']);
  });

  it('resolves a result prompt with the validated data of `finish`, and rejects on `give_up`', async () => {
    server.script({ toolCalls: [{ name: 'finish', arguments: { count: 4 } }] });
    const result = await createHarness(deps()).prompt('Count.', { result: v.object({ count: v.number() }) });
    expect(result.data).toEqual({ count: 4 });
    server.script({ toolCalls: [{ name: 'give_up', arguments: { reason: 'no data' } }] });
    await expect(createHarness(deps()).prompt('Count.', { result: v.number() })).rejects.toBeInstanceOf(ResultUnavailableError);
  });

  it('runs one operation at a time and refuses operations once its scope closed', async () => {
    server.script({ text: 'Slow.', chunkDelayMs: 30 });
    const scope = new AbortController();
    const harness = createHarness(deps({ signal: scope.signal }));
    const first = harness.prompt('One?');
    await expect(harness.prompt('Two?')).rejects.toBeInstanceOf(SessionBusyError);
    await first;
    scope.abort(new Error('tool call ended'));
    await expect(harness.prompt('Three?')).rejects.toBeInstanceOf(HarnessClosedError);
  });

  it('lets the next operation start right after an abort rejected, waiting for the aborted tool call to unwind', async () => {
    const { tool, running } = slowToStop();
    server.script({ toolCalls: [{ name: tool.name, arguments: {} }] }, { text: 'Second.' });
    const harness = createHarness(deps());
    const first = harness.prompt('Run it.', { tools: [tool] });
    await running;
    first.abort('user-cancel');
    const error = await first.then(
      () => undefined,
      (thrown: unknown) => thrown as DOMException,
    );
    expect(error).toBeInstanceOf(DOMException);
    expect(error).toMatchObject({ name: 'AbortError', cause: 'user-cancel' });

    const second = harness.prompt('Next?');
    // A third operation while the second is waiting is concurrent with it, as ever.
    await expect(harness.prompt('Third?')).rejects.toBeInstanceOf(SessionBusyError);
    expect((await second).text).toBe('Second.');
    // The aborted call's result is in the conversation before the next prompt, not interleaved.
    const messages = server.requests.at(-1)!.messages;
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user']);
    expect(messages[2]!.content).toMatch(/slow_to_stop.*aborted/);
  });

  it('rejects an operation aborted while it waits for an earlier one to unwind, without running it', async () => {
    const { tool, running } = slowToStop();
    server.script({ toolCalls: [{ name: tool.name, arguments: {} }] }, { text: 'After.' });
    const harness = createHarness(deps());
    const first = harness.prompt('Run it.', { tools: [tool] });
    await running;
    first.abort('one');
    await first.catch(() => {});
    const requestsBefore = server.requests.length;
    const second = harness.prompt('Never sent.');
    second.abort('two');
    await expect(second).rejects.toMatchObject({ name: 'AbortError', cause: 'two' });
    expect((await harness.prompt('Now?')).text).toBe('After.');
    expect(server.requests.length).toBe(requestsBefore + 1);
    expect(JSON.stringify(server.requests.at(-1)!.messages)).not.toContain('Never sent.');
  });

  it('has no sandbox without an environment', () => {
    expect(() => createHarness(deps()).sandbox).toThrow(/no sandbox/);
  });
});
