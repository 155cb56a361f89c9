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

describe('createHarness', () => {
  it('prompts in a scratch conversation with the render\'s system prompt and answers text, usage and model', async () => {
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

  it('runs the turn\'s tool calls through the shared dispatch, then loops to the answer', async () => {
    let ran = 0;
    const add = defineTool({ name: 'add', description: 'Adds.', input: v.object({ a: v.number(), b: v.number() }), run: ({ data }) => (ran++, { output: data.a + data.b }) });
    server.script(
      { toolCalls: [{ name: 'add', arguments: { a: 2, b: 3 } }, { name: 'missing', arguments: {} }, { name: 'task', arguments: { prompt: 'sub', agent: 'x' } }] },
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

  it('has no sandbox without an environment', () => {
    expect(() => createHarness(deps()).sandbox).toThrow(/no sandbox/);
  });
});
