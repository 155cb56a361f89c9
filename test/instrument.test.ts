import { afterEach, expect, test, vi } from 'vitest';
import * as v from 'valibot';
import {
  InstrumentationAlreadyInstalledError,
  defineTool,
  init,
  instrument,
  useModel,
  useTool,
  type FlueExecutionInterceptor,
} from '@flue/runtime';
import { sqlite, start } from '@flue/runtime/node';
import { seedProviders, useScriptedRuntime } from './support/scripted-runtime.ts';

const ctx = useScriptedRuntime();
const uninstalls: Array<() => Promise<void>> = [];

afterEach(async () => {
  await Promise.all(uninstalls.splice(0).map((uninstall) => uninstall()));
  vi.restoreAllMocks();
});

function install(...args: Parameters<typeof instrument>) {
  const uninstall = instrument(...args);
  uninstalls.push(uninstall);
  return uninstall;
}

const add = defineTool({
  name: 'add',
  description: 'Adds two numbers.',
  input: v.object({ a: v.number(), b: v.number() }),
  async run({ data }) {
    return { output: data.a + data.b };
  },
});

function Calculator() {
  useModel('anthropic/claude-haiku-4-5');
  useTool(add);
  return 'Add numbers.';
}

/** An interceptor that writes what it sees to `log`, tagged with `tag`. */
function recorder(tag: string, log: unknown[]): FlueExecutionInterceptor {
  return async (op, context, next) => {
    log.push([tag, 'start', op, context]);
    try {
      const result = await next();
      log.push([tag, 'end', op.type, result]);
      return result;
    } catch (error) {
      log.push([tag, 'error', op.type, error]);
      throw error;
    }
  };
}

async function addition(id: string) {
  ctx.server.script(
    { toolCalls: [{ id: 'call_add', name: 'add', arguments: { a: 2, b: 3 } }], usage: { input: 40, output: 6 } },
    { text: 'It is 5.', usage: { input: 60, output: 4 } },
  );
  const handle = init(Calculator, { id });
  const receipt = await handle.dispatch('What is 2 + 3?');
  const reply = await handle.read(receipt);
  return { receipt, reply };
}

test('interceptors wrap the submission attempt, each model call and each tool call, with their ids, in order', async () => {
  await ctx.start([Calculator]);
  const log: unknown[] = [];
  install({ interceptor: recorder('a', log) });
  const { receipt, reply } = await addition('calc-1');
  expect(reply.text).toBe('It is 5.');
  const shape = log.map((entry) => {
    const [, phase, op] = entry as [string, string, { type: string } | string];
    return `${phase}:${typeof op === 'string' ? op : op.type}`;
  });
  expect(shape).toEqual(['start:agent', 'start:model', 'end:model', 'start:tool', 'end:tool', 'start:model', 'end:model', 'end:agent']);

  const starts = log.filter((entry) => (entry as unknown[])[1] === 'start') as Array<
    [string, string, Record<string, unknown>, Record<string, unknown>]
  >;
  const [agent, firstModel, tool] = starts;
  const ids = { instanceId: 'calc-1', agentName: expect.any(String), submissionId: receipt.submissionId };
  expect(agent![2]).toEqual({ type: 'agent', operationId: receipt.submissionId, operationKind: 'prompt' });
  expect(agent![3]).toMatchObject({ ...ids, session: 'default' });
  expect(firstModel![2]).toEqual({
    type: 'model',
    turnId: expect.any(String),
    purpose: 'agent',
    provider: 'anthropic',
    model: 'claude-haiku-4-5',
  });
  expect(firstModel![3]).toMatchObject({ ...ids, turnId: (firstModel![2] as { turnId: string }).turnId });
  expect(tool![2]).toEqual({ type: 'tool', toolCallId: 'call_add', toolName: 'add' });
  // The tool call knows the model step that issued it.
  expect(tool![3]).toMatchObject({ ...ids, turnId: (firstModel![2] as { turnId: string }).turnId });

  const ends = log.filter((entry) => (entry as unknown[])[1] === 'end') as Array<[string, string, string, Record<string, unknown>]>;
  expect(ends[0]![3]).toMatchObject({ stopReason: 'toolUse', usage: { input: 40, output: 6 } });
  expect(ends[1]![3]).toMatchObject({ isError: false, content: '5' });
  expect(ends[3]![3]).toEqual({ outcome: 'completed' });
});

test('several instrumentations nest in registration order; uninstalling removes one and disposes it once', async () => {
  await ctx.start([Calculator]);
  const log: unknown[] = [];
  const dispose = vi.fn();
  const observed: string[] = [];
  const instrumentation = {
    interceptor: recorder('outer', log),
    dispose,
    observe: (event: { type: string }) => void observed.push(event.type),
  };
  const uninstallOuter = install(instrumentation);
  expect(instrument(instrumentation)).toBe(uninstallOuter);
  install({ interceptor: recorder('inner', log) });
  await addition('calc-2');
  const agentEntries = log.filter((entry) => {
    const op = (entry as unknown[])[2];
    return op === 'agent' || (op as { type?: string }).type === 'agent';
  });
  expect(agentEntries.map((entry) => `${(entry as string[])[0]}:${(entry as string[])[1]}`)).toEqual([
    'outer:start',
    'inner:start',
    'inner:end',
    'outer:end',
  ]);

  expect(observed).toContain('submission_settled');

  await uninstallOuter();
  await uninstallOuter();
  expect(dispose).toHaveBeenCalledTimes(1);
  log.length = 0;
  observed.length = 0;
  await addition('calc-3');
  expect(observed).toEqual([]);
  expect(log.length).toBeGreaterThan(0);
  expect(log.every((entry) => (entry as string[])[0] === 'inner')).toBe(true);
});

test('a second instrumentation with the same key throws outside flue dev', () => {
  // No runtime is started and the process is not served by `flue dev`.
  install({ key: 'tracing', interceptor: recorder('first', []) });
  let caught: unknown;
  try {
    install({ key: 'tracing', interceptor: recorder('second', []) });
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(InstrumentationAlreadyInstalledError);
  expect((caught as InstrumentationAlreadyInstalledError).type).toBe('instrumentation_already_installed');
  expect((caught as Error).message).toContain('"tracing"');
});

test('in a start() script (dev mode, not flue dev) a second instrumentation with the same key throws, as in production', async () => {
  await ctx.start([Calculator]); // start() runs in dev mode for error prose; that is not a reload
  const first: unknown[] = [];
  install({ key: 'tracing', interceptor: recorder('first', first) });
  expect(() => install({ key: 'tracing', interceptor: recorder('second', []) })).toThrow(InstrumentationAlreadyInstalledError);
  await addition('calc-3b');
  expect(first.length).toBe(8); // the installed one stays in place
});

test('under flue dev (FLUE_DEV=1) a second instrumentation with the same key replaces the first (a reload ran the module again)', async () => {
  await ctx.flue?.stop();
  ctx.flue = await start({ agents: [Calculator], db: sqlite(), providers: seedProviders(ctx.server), env: { FLUE_DEV: '1' } });
  const first: unknown[] = [];
  const second: unknown[] = [];
  const disposeFirst = vi.fn();
  install({ key: 'tracing', interceptor: recorder('first', first), dispose: disposeFirst });
  install({ key: 'tracing', interceptor: recorder('second', second) });
  await addition('calc-4');
  expect(first).toEqual([]);
  expect(second.length).toBe(8);
  await vi.waitFor(() => expect(disposeFirst).toHaveBeenCalledTimes(1));
});

test('an interceptor that throws or misuses next() is logged and the operation runs exactly as without it', async () => {
  await ctx.start([Calculator]);
  const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
  let toolRuns = 0;
  install({
    key: 'before',
    interceptor: async (op) => {
      if (op.type === 'tool') toolRuns++;
      throw new Error('broken before next');
    },
  });
  install({
    key: 'after',
    interceptor: async (_op, _context, next) => {
      await next();
      throw new Error('broken after next');
    },
  });
  install({
    key: 'twice',
    interceptor: async (_op, _context, next) => {
      const result = await next();
      await next();
      return result;
    },
  });
  install({ key: 'skips', interceptor: async () => 'not the result' as never });
  const { reply } = await addition('calc-5');
  expect(reply.text).toBe('It is 5.');
  expect(toolRuns).toBe(1);
  expect(ctx.server.requests).toHaveLength(2);
  // The model saw the real tool result.
  expect(JSON.stringify(ctx.server.requests[1]!.messages)).toContain('"content":"5"');
  const lines = errors.mock.calls.map((call) => `${call[0]} ${(call[1] as Error)?.message}`);
  expect(lines.some((line) => line.includes('[flue:instrument]') && line.includes('"before"') && line.includes('broken before next'))).toBe(
    true,
  );
  expect(lines.some((line) => line.includes('"after"') && line.includes('broken after next'))).toBe(true);
  expect(lines.some((line) => line.includes('"twice"') && line.includes('Flue execution next() called more than once.'))).toBe(true);
  expect(lines.some((line) => line.includes('"skips"') && line.includes('without calling next()'))).toBe(true);
});

test('a failing submission reaches interceptors as a rejection of next()', async () => {
  await ctx.start([Calculator]);
  vi.spyOn(console, 'error').mockImplementation(() => {});
  const log: unknown[] = [];
  install({ interceptor: recorder('a', log) });
  ctx.server.script({ status: 400, errorBody: 'bad request' });
  const handle = init(Calculator, { id: 'calc-6' });
  const receipt = await handle.dispatch('hi');
  await expect(handle.read(receipt)).rejects.toThrow();
  const agentEnd = log.find((entry) => (entry as unknown[])[2] === 'agent') as unknown[];
  expect(agentEnd[1]).toBe('error');
  const modelEnd = log.find((entry) => (entry as unknown[])[2] === 'model') as [string, string, string, { stopReason: string }];
  expect(modelEnd[3].stopReason).toBe('error');
});

const ask = defineTool({
  name: 'ask',
  description: 'Asks a helper model.',
  input: v.object({ question: v.string() }),
  harness: true,
  async run({ harness, data }) {
    const { text } = await harness.prompt(data.question);
    return text;
  },
});

function Asker() {
  useModel('anthropic/claude-haiku-4-5');
  useTool(ask);
  useTool(add);
  return 'Ask for help.';
}

test('harness prompts are wrapped too: their model and tool calls carry the harness name, inside the calling tool', async () => {
  await ctx.start([Asker]);
  const log: unknown[] = [];
  install({ interceptor: recorder('a', log) });
  ctx.server.script(
    { toolCalls: [{ id: 'call_ask', name: 'ask', arguments: { question: 'What is 2 + 3?' } }] },
    // The harness scratch conversation.
    { toolCalls: [{ id: 'call_inner_add', name: 'add', arguments: { a: 2, b: 3 } }] },
    { text: '5' },
    { text: 'The helper says 5.' },
  );
  const handle = init(Asker, { id: 'ask-1' });
  const receipt = await handle.dispatch('Ask the helper.');
  expect((await handle.read(receipt)).text).toBe('The helper says 5.');
  const trail = log.map((entry) => {
    const [, phase, op, context] = entry as [string, string, { type: string; toolName?: string } | string, { harness?: string } | unknown];
    if (phase !== 'start') return `end:${op as string}`;
    const start = op as { type: string; toolName?: string };
    const where = (context as { harness?: string }).harness === undefined ? '' : '@harness';
    return `start:${start.type}${start.toolName ? `(${start.toolName})` : ''}${where}`;
  });
  expect(trail).toEqual([
    'start:agent',
    'start:model',
    'end:model',
    'start:tool(ask)',
    'start:model@harness',
    'end:model',
    'start:tool(add)@harness',
    'end:tool',
    'start:model@harness',
    'end:model',
    'end:tool',
    'start:model',
    'end:model',
    'end:agent',
  ]);
  const harnessModel = log.find(
    (entry) => (entry as unknown[])[1] === 'start' && ((entry as unknown[])[3] as { harness?: string }).harness !== undefined,
  ) as unknown[];
  expect(harnessModel[3]).toMatchObject({ harness: 'default', instanceId: 'ask-1', submissionId: receipt.submissionId });
});
