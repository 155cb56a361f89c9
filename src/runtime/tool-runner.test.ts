import { describe, expect, it, vi } from 'vitest';
import * as v from 'valibot';
import { defineTool } from './define-tool.ts';
import type { ToolDefinition, ToolStep } from './define-tool.ts';
import {
  FlueError,
  ToolInputValidationError,
  ToolOutputSerializationError,
  ToolOutputValidationError,
  ToolTimeoutError,
} from './errors.ts';
import { invokeTool, raceToolRun, runToolCall, toJsonSnapshot } from './tool-runner.ts';
import type { ToolCallEnvironment, ToolOutcome } from './tool-runner.ts';
import type { FlueHarness, FlueLogger } from './types.ts';

const SUFFIX = ' The tool execution could not be confirmed cancelled and may still be running.';

const logger: FlueLogger = { info() {}, warn() {}, error() {} };

function environment(overrides: Partial<ToolCallEnvironment> = {}): ToolCallEnvironment {
  return { toolCallId: 'call_1', signal: new AbortController().signal, log: logger, ...overrides };
}

/** A tool whose `run` returns whatever the test hands it (typed loosely on purpose). */
function returning(value: unknown, extra: Record<string, unknown> = {}): ToolDefinition {
  return defineTool({ name: 'echo', description: 'Returns a value.', run: () => value, ...extra } as never);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function expectError<E extends FlueError>(
  outcome: ToolOutcome,
  errorClass: new (...args: never[]) => E,
  type: string,
): E {
  expect(outcome.isError).toBe(true);
  expect(outcome.terminate).toBeUndefined();
  expect(outcome.output).toBeUndefined();
  expect(outcome.error).toBeInstanceOf(errorClass);
  const error = outcome.error as E;
  expect(error.type).toBe(type);
  expect(outcome.content).toBe(error.message);
  return error;
}

describe('runToolCall — success', () => {
  it('runs the tool and sends the JSON output to the model', async () => {
    const tool = defineTool({
      name: 'lookup_order',
      description: 'Look up an order.',
      input: v.object({ orderId: v.string() }),
      run: ({ data }) => ({ output: { id: data.orderId, status: 'shipped' } }),
    });
    const outcome = await runToolCall(tool, { orderId: 'o1' }, environment());
    expect(outcome).toEqual({
      toolCallId: 'call_1',
      toolName: 'lookup_order',
      isError: false,
      content: '{"id":"o1","status":"shipped"}',
      output: { id: 'o1', status: 'shipped' },
      durationMs: expect.any(Number),
    });
    expect(outcome.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('passes toolCallId, log and its own signal; no data, harness or step for a plain tool', async () => {
    let seen: Record<string, unknown> = {};
    const host = new AbortController();
    const harness = vi.fn();
    const tool = defineTool({
      name: 'ctx',
      description: 'Context.',
      run(ctx) {
        seen = { ...ctx, frozen: Object.isFrozen(ctx) };
      },
    });
    await runToolCall(tool, { ignored: true }, environment({ signal: host.signal, harness, toolCallId: 'T9' }));
    expect(Object.keys(seen).sort()).toEqual(['frozen', 'log', 'signal', 'toolCallId']);
    expect(seen.toolCallId).toBe('T9');
    expect(seen.log).toBe(logger);
    expect(seen.frozen).toBe(true);
    // The tool's signal is its own, linked to (not equal to) the host signal.
    expect(seen.signal).toBeInstanceOf(AbortSignal);
    expect(seen.signal).not.toBe(host.signal);
    expect(harness).not.toHaveBeenCalled();
  });

  it('leaves the tool signal alone when nothing aborts', async () => {
    const host = new AbortController();
    let toolSignal: AbortSignal | undefined;
    const tool = defineTool({
      name: 'linked',
      description: 'Linked.',
      run: ({ signal }) => {
        toolSignal = signal;
        return 'done';
      },
    });
    await runToolCall(tool, {}, environment({ signal: host.signal }));
    expect(toolSignal?.aborted).toBe(false);
  });

  it('ends in terminate only for terminate: true', async () => {
    const yes = await runToolCall(returning({ output: { status: 'pending' }, terminate: true }), {}, environment());
    expect(yes).toMatchObject({ isError: false, terminate: true, content: '{"status":"pending"}' });
    const no = await runToolCall(returning({ output: 1, terminate: false }), {}, environment());
    expect(no.isError).toBe(false);
    expect('terminate' in no).toBe(false);
    const onlyTerminate = await runToolCall(returning({ terminate: true }), {}, environment());
    expect(onlyTerminate).toMatchObject({ isError: false, terminate: true, content: 'null' });
    expect('output' in onlyTerminate).toBe(false);
  });

  it('sends null for a void result and omits output', async () => {
    const outcome = await runToolCall(returning(undefined), {}, environment());
    expect(outcome.content).toBe('null');
    expect(outcome.isError).toBe(false);
    expect('output' in outcome).toBe(false);
    const explicit = await runToolCall(returning({ output: undefined }), {}, environment());
    expect(explicit.content).toBe('null');
  });

  it('treats a string as { output: string }, JSON-quoted for the model', async () => {
    const outcome = await runToolCall(returning('Invalid approval code.'), {}, environment());
    expect(outcome).toMatchObject({ isError: false, content: '"Invalid approval code."', output: 'Invalid approval code.' });
  });

  it('accepts a null-prototype envelope', async () => {
    const envelope = Object.assign(Object.create(null) as object, { output: [1, 2] });
    expect((await runToolCall(returning(envelope), {}, environment())).content).toBe('[1,2]');
  });

  it('parses the output through the output schema (transforms apply)', async () => {
    const tool = defineTool({
      name: 'stock',
      description: 'Stock.',
      output: v.object({ inStock: v.pipe(v.string(), v.transform(Number)) }),
      run: () => ({ output: { inStock: '3' } }),
    });
    const outcome = await runToolCall(tool, {}, environment());
    expect(outcome).toMatchObject({ isError: false, output: { inStock: 3 }, content: '{"inStock":3}' });
  });

  it('lets an output schema validate the string shorthand', async () => {
    const tool = defineTool({
      name: 'answer',
      description: 'Answer.',
      output: v.picklist(['yes', 'no']),
      run: () => 'maybe' as 'yes',
    });
    expectError(await runToolCall(tool, {}, environment()), ToolOutputValidationError, 'tool_output_validation');
  });

  it('snapshots the output as JSON data', async () => {
    const when = new Date('2024-01-02T03:04:05.000Z');
    const output = JSON.parse('{"__proto__":{"x":1}}') as Record<string, unknown>;
    Object.assign(output, { when, skip: undefined, list: [1, undefined, 'a'], nested: { n: null } });
    const outcome = await runToolCall(returning({ output }), {}, environment());
    expect(outcome.isError).toBe(false);
    expect(outcome.output).toEqual(JSON.parse(JSON.stringify(output)));
    expect(outcome.content).toBe(JSON.stringify(output));
    expect(Object.keys(outcome.output as object)).toContain('__proto__');
    expect((outcome.output as { when: unknown }).when).toBe('2024-01-02T03:04:05.000Z');
    // A copy: mutating what run returned later does not change the recorded output.
    (output.nested as { n: unknown }).n = 5;
    expect((outcome.output as { nested: { n: unknown } }).nested.n).toBeNull();
  });
});

describe('runToolCall — input validation', () => {
  const tool = (run = vi.fn(() => 'ran')) =>
    defineTool({
      name: 'search',
      description: 'Search.',
      input: v.object({ query: v.string(), filter: v.object({ tags: v.array(v.string()) }) }),
      run,
    });

  it('fails with ToolInputValidationError and never runs', async () => {
    const run = vi.fn(() => 'ran');
    const outcome = await runToolCall(tool(run), { query: 5, filter: { tags: ['a', 2] } }, environment());
    const error = expectError(outcome, ToolInputValidationError, 'tool_input_validation');
    expect(run).not.toHaveBeenCalled();
    expect(error.meta).toEqual({
      tool: 'search',
      issues: [
        { message: 'Invalid type: Expected string but received 5', path: ['query'] },
        { message: 'Invalid type: Expected string but received 2', path: ['filter', 'tags', 1] },
      ],
    });
    expect(outcome.content).toBe(
      'Arguments for tool "search" do not match the required schema: Invalid type: Expected string but received 5 (at query); Invalid type: Expected string but received 2 (at filter.tags.1). Call the tool again with corrected arguments.',
    );
  });

  it('parses {} when the model sent no arguments', async () => {
    const run = vi.fn(() => 'ran');
    for (const args of [undefined, null]) {
      const outcome = await runToolCall(tool(run), args, environment());
      const error = expectError(outcome, ToolInputValidationError, 'tool_input_validation');
      expect((error.meta?.issues as { message: string }[])[0]?.message).toBe('Invalid key: Expected "query" but received undefined');
    }
    expect(run).not.toHaveBeenCalled();

    const optional = defineTool({
      name: 'optional',
      description: 'Optional.',
      input: v.object({ limit: v.optional(v.number(), 10) }),
      run: ({ data }) => ({ output: data }),
    });
    expect((await runToolCall(optional, undefined, environment())).output).toEqual({ limit: 10 });
  });

  it('reports a non-object argument without a path', async () => {
    const error = expectError(
      await runToolCall(tool(), 'query', environment()),
      ToolInputValidationError,
      'tool_input_validation',
    );
    expect((error.meta?.issues as object[])[0]).toEqual({ message: expect.stringContaining('Expected Object') });
  });

  it('starts the deadline only once run is invoked', async () => {
    const slowInput = defineTool({
      name: 'slow_input',
      description: 'Slow input.',
      input: v.objectAsync({ id: v.pipeAsync(v.string(), v.checkAsync(async () => (await sleep(40), true))) }),
      timeoutMs: 20,
      run: ({ data }: { data: { id: string } }) => data.id,
    } as never);
    expect(await runToolCall(slowInput, { id: 'x' }, environment())).toMatchObject({ isError: false, content: '"x"' });
  });
});

describe('runToolCall — return-value rules', () => {
  it('rejects envelopes with other keys, telling the author to wrap', async () => {
    const outcome = await runToolCall(returning({ status: 'ok' }), {}, environment());
    expect(outcome.isError).toBe(true);
    expect(outcome.error).toBeInstanceOf(Error);
    expect(outcome.content).toBe(
      '[flue] Tool "echo" returned an object with the key "status", but run must return an envelope { output?, terminate? }. To return the object itself, wrap it as { output: <value> }: `return { output: <value> }`.',
    );
    const mixed = await runToolCall(returning({ output: 1, extra: true }), {}, environment());
    expect(mixed.content).toContain('the key "extra"');
  });

  it('rejects a non-boolean terminate', async () => {
    for (const terminate of ['yes', 1, null]) {
      const outcome = await runToolCall(returning({ output: 1, terminate }), {}, environment());
      expect(outcome.isError).toBe(true);
      expect(outcome.terminate).toBeUndefined();
      expect(outcome.content).toMatch(/^\[flue\] Tool "echo" returned a non-boolean "terminate"/);
    }
  });

  it('rejects bare values, telling the author to wrap them', async () => {
    class Point {
      x = 1;
    }
    const cases: [unknown, string][] = [
      [42, 'number'],
      [true, 'boolean'],
      [null, 'null'],
      [[1, 2], 'array'],
      [new Date(0), 'Date instance'],
      [new Map(), 'Map instance'],
      [new Point(), 'Point instance'],
      [10n, 'bigint'],
    ];
    for (const [value, kind] of cases) {
      const outcome = await runToolCall(returning(value), {}, environment());
      expect(outcome.isError).toBe(true);
      expect(outcome.content).toMatch(new RegExp(`^\\[flue\\] Tool "echo" returned a bare ${kind};`));
      expect(outcome.content).toContain('wrap the value: `return { output: <value> }`');
    }
  });

  it('rejects a void result when an output schema is declared', async () => {
    const tool = returning(undefined, { output: v.string() });
    const error = expectError(await runToolCall(tool, {}, environment()), ToolOutputSerializationError, 'tool_output_serialization');
    expect(error.meta).toEqual({ tool: 'echo' });
    expect(error.message).toContain('run returned nothing, but the tool declares an output schema');
  });

  it('fails with ToolOutputValidationError on an output-schema mismatch', async () => {
    const tool = returning({ output: { inStock: 'many' } }, { output: v.object({ inStock: v.number() }) });
    const error = expectError(await runToolCall(tool, {}, environment()), ToolOutputValidationError, 'tool_output_validation');
    expect(error.meta).toEqual({
      tool: 'echo',
      issues: [{ message: 'Invalid type: Expected number but received "many"', path: ['inStock'] }],
    });
    expect(error.message).toBe(
      'Tool "echo" returned output that does not match its output schema: Invalid type: Expected number but received "many" (at inStock).',
    );
  });

  it('fails with ToolOutputSerializationError when the output schema yields undefined', async () => {
    const tool = returning({ output: undefined, terminate: true }, { output: v.optional(v.string()) });
    const outcome = await runToolCall(tool, {}, environment());
    const error = expectError(outcome, ToolOutputSerializationError, 'tool_output_serialization');
    expect(error.message).toContain('the output schema produced undefined');
  });

  it('fails with ToolOutputSerializationError for output JSON cannot carry', async () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    class Money {
      amount = 5;
    }
    const cases: [unknown, string][] = [
      [cyclic, 'a circular reference at output.self'],
      [{ total: 10n }, 'a BigInt at output.total'],
      [{ fn: () => 1 }, 'a function at output.fn'],
      [{ tags: new Map([['a', 1]]) }, 'a Map instance at output.tags'],
      [{ price: new Money() }, 'a Money instance at output.price'],
      [{ ratio: Number.NaN }, 'the non-finite number NaN at output.ratio'],
      [[Symbol('s')], 'a symbol at output[0]'],
    ];
    for (const [output, reason] of cases) {
      const outcome = await runToolCall(returning({ output }), {}, environment());
      const error = expectError(outcome, ToolOutputSerializationError, 'tool_output_serialization');
      expect(error.meta).toEqual({ tool: 'echo' });
      expect(error.message).toContain(`cannot be serialized as JSON: ${reason}`);
      expect(error.cause).toBeInstanceOf(TypeError);
    }
  });
});

describe('runToolCall — thrown errors', () => {
  it('turns a throw into an error result that never terminates', async () => {
    const failure = new Error('Inventory service unavailable.');
    const tool = defineTool({
      name: 'inventory',
      description: 'Inventory.',
      async run() {
        await sleep(1);
        throw failure;
      },
    });
    const outcome = await runToolCall(tool, {}, environment());
    expect(outcome).toEqual({
      toolCallId: 'call_1',
      toolName: 'inventory',
      isError: true,
      content: 'Inventory service unavailable.',
      durationMs: expect.any(Number),
      error: failure,
    });
  });

  it('handles synchronous throws and non-Error values', async () => {
    const sync = defineTool({
      name: 'sync',
      description: 'Sync.',
      run() {
        throw new TypeError('bad');
      },
    });
    expect((await runToolCall(sync, {}, environment())).content).toBe('bad');
    const stringy = defineTool({
      name: 'stringy',
      description: 'Stringy.',
      run() {
        throw 'plain string';
      },
    });
    expect(await runToolCall(stringy, {}, environment())).toMatchObject({ isError: true, content: 'plain string' });
  });
});

describe('runToolCall — timeout', () => {
  it('aborts the tool signal and settles with the exact timeout text', async () => {
    let reason: unknown;
    let lateSettled = false;
    const tool = defineTool({
      name: 'slow',
      description: 'Slow.',
      timeoutMs: 20,
      run: ({ signal }) =>
        new Promise<string>((resolve) => {
          signal?.addEventListener('abort', () => {
            reason = signal.reason;
          });
          // Settles long after the deadline: must be discarded.
          setTimeout(() => {
            lateSettled = true;
            resolve('late');
          }, 60);
        }),
    });
    const outcome = await runToolCall(tool, {}, environment());
    const error = expectError(outcome, ToolTimeoutError, 'tool_timeout');
    expect(outcome.content).toBe('Tool "slow" timed out after 20ms');
    expect(error.meta).toEqual({ tool: 'slow', timeoutMs: 20 });
    expect(reason).toBe(error);
    expect(outcome.aborted).toBeUndefined();
    expect(outcome.durationMs).toBeGreaterThanOrEqual(15);
    // The late result arrives after the outcome and changes nothing.
    await vi.waitUntil(() => lateSettled, { timeout: 60_000 });
    expect(outcome.content).toBe('Tool "slow" timed out after 20ms');
  });

  it('discards a late rejection after a timeout (no unhandled rejection)', async () => {
    const tool = defineTool({
      name: 'slow_reject',
      description: 'Slow.',
      timeoutMs: 20,
      run: ({ signal }) =>
        new Promise<string>((_, reject) => {
          signal?.addEventListener('abort', () => setTimeout(() => reject(new Error('late failure')), 10));
        }),
    });
    const outcome = await runToolCall(tool, {}, environment());
    expect(outcome.error).toBeInstanceOf(ToolTimeoutError);
    await sleep(30);
  });

  it('does not fire once the tool has finished', async () => {
    const tool = defineTool({ name: 'fast', description: 'Fast.', timeoutMs: 20, run: () => 'quick' });
    expect((await runToolCall(tool, {}, environment())).content).toBe('"quick"');
    await sleep(30);
  });
});

describe('runToolCall — host abort', () => {
  it('settles with the tool rejection when the tool honours its signal', async () => {
    const host = new AbortController();
    const tool = defineTool({
      name: 'fetcher',
      description: 'Fetches.',
      run: ({ signal }) =>
        new Promise<string>((_, reject) => {
          signal?.addEventListener('abort', () => reject(signal.reason));
        }),
    });
    const pending = runToolCall(tool, {}, environment({ signal: host.signal }));
    const reason = new DOMException('Submission aborted.', 'AbortError');
    setTimeout(() => host.abort(reason), 5);
    const outcome = await pending;
    expect(outcome).toMatchObject({ isError: true, aborted: true, content: 'Submission aborted.' });
    expect(outcome.error).toBe(reason);
  });

  it('abandons a tool that ignores the abort after one macrotask', async () => {
    const host = new AbortController();
    let resolveLate: (value: string) => void = () => {};
    const tool = defineTool({
      name: 'stubborn',
      description: 'Ignores aborts.',
      run: () => new Promise<string>((resolve) => (resolveLate = resolve)),
    });
    const pending = runToolCall(tool, {}, environment({ signal: host.signal }));
    setTimeout(() => host.abort(), 5);
    const outcome = await pending;
    expect(outcome.isError).toBe(true);
    expect(outcome.aborted).toBe(true);
    expect(outcome.error).toBeInstanceOf(DOMException);
    expect((outcome.error as DOMException).name).toBe('AbortError');
    expect(outcome.content).toBe(`Tool "stubborn" was aborted.${SUFFIX}`);
    expect(outcome.content.endsWith(SUFFIX)).toBe(true);
    resolveLate('too late'); // discarded
  });

  it('swallows the late rejection of an abandoned tool', async () => {
    const host = new AbortController();
    const tool = defineTool({
      name: 'stubborn_reject',
      description: 'Ignores aborts, then fails.',
      run: () => new Promise<string>((_, reject) => setTimeout(() => reject(new Error('late')), 20)),
    });
    const pending = runToolCall(tool, {}, environment({ signal: host.signal }));
    host.abort();
    expect((await pending).content.endsWith(SUFFIX)).toBe(true);
    await sleep(30);
  });

  it('wins over a timeout that would fire in the same moment', async () => {
    const host = new AbortController();
    // Registered before the tool's own 20ms deadline, so the host abort lands first.
    setTimeout(() => host.abort(), 20);
    const tool = defineTool({
      name: 'racing',
      description: 'Races.',
      timeoutMs: 20,
      run: () => new Promise<string>(() => {}),
    });
    const outcome = await runToolCall(tool, {}, environment({ signal: host.signal }));
    expect(outcome.error).not.toBeInstanceOf(ToolTimeoutError);
    expect((outcome.error as DOMException).name).toBe('AbortError');
    expect(outcome.aborted).toBe(true);
    await sleep(30);
  });

  it('keeps a result that settles within the grace period', async () => {
    const host = new AbortController();
    const tool = defineTool({
      name: 'finishing',
      description: 'Finishes anyway.',
      run: ({ signal }) =>
        new Promise<string>((resolve) => signal?.addEventListener('abort', () => resolve('finished'))),
    });
    const pending = runToolCall(tool, {}, environment({ signal: host.signal }));
    setTimeout(() => host.abort(), 5);
    expect(await pending).toMatchObject({ isError: false, content: '"finished"' });
  });

  it('never starts a tool when the host already aborted', async () => {
    const host = new AbortController();
    host.abort();
    const run = vi.fn(() => 'ran');
    const outcome = await runToolCall(returningFn(run), {}, environment({ signal: host.signal }));
    expect(run).not.toHaveBeenCalled();
    expect(outcome).toMatchObject({ isError: true, aborted: true, content: 'Tool "fn" was aborted before it started.' });
    expect((outcome.error as DOMException).name).toBe('AbortError');
  });
});

function returningFn(run: () => unknown): ToolDefinition {
  return defineTool({ name: 'fn', description: 'Fn.', run } as never);
}

describe('runToolCall — harness and durable tools', () => {
  const harness = { name: 'default' } as FlueHarness;

  it('materializes the harness lazily for harness tools only', async () => {
    const factory = vi.fn(() => harness);
    let seen: unknown;
    const tool = defineTool({
      name: 'review',
      description: 'Review.',
      harness: true,
      run(ctx) {
        expect(factory).not.toHaveBeenCalled();
        seen = ctx.harness;
        void ctx.harness;
      },
    });
    await runToolCall(tool, {}, environment({ harness: factory }));
    expect(seen).toBe(harness);
    expect(factory).toHaveBeenCalledTimes(1);

    const untouched = defineTool({ name: 'untouched', description: 'Untouched.', harness: true, run: () => 'ok' });
    const lazy = vi.fn(() => harness);
    await runToolCall(untouched, {}, environment({ harness: lazy }));
    expect(lazy).not.toHaveBeenCalled();
  });

  it('fails a harness tool outside an agent session without running it', async () => {
    const run = vi.fn(() => 'ran');
    const tool = defineTool({ name: 'review', description: 'Review.', harness: true, run });
    const outcome = await runToolCall(tool, {}, environment());
    expect(outcome.isError).toBe(true);
    expect(outcome.content).toMatch(/^\[flue\] Tool "review" declares harness: true and can only run inside an agent session/);
    expect(run).not.toHaveBeenCalled();
  });

  it('passes the step to durable tools and requires one', async () => {
    const step: ToolStep = { do: async (_name, fn) => fn() };
    const tool = defineTool({
      name: 'provision',
      description: 'Provision.',
      input: v.object({ id: v.string() }),
      durable: true,
      async run({ data, step: s }) {
        const tenant = await s.do('create', () => ({ tenant: data.id }));
        return { output: tenant };
      },
    });
    expect((await runToolCall(tool, { id: 'c1' }, environment({ step }))).output).toEqual({ tenant: 'c1' });
    const missing = await runToolCall(tool, { id: 'c1' }, environment());
    expect(missing.content).toMatch(/^\[flue\] Tool "provision" declares durable: true and needs a step/);
  });
});

describe('invokeTool', () => {
  const tool = defineTool({
    name: 'lookup',
    description: 'Lookup.',
    input: v.object({ id: v.string() }),
    output: v.object({ id: v.string() }),
    run: ({ data, toolCallId }) => ({ output: { id: `${data.id}:${toolCallId.startsWith('call_')}` }, terminate: true }),
  });

  it('returns the canonical result with a synthesized call id', async () => {
    const result = await invokeTool(tool, { id: 'a' });
    expect(result).toEqual({ output: { id: 'a:true' }, terminate: true });
  });

  it('propagates errors instead of returning them', async () => {
    await expect(invokeTool(tool, { id: 1 })).rejects.toBeInstanceOf(ToolInputValidationError);
    const failing = defineTool({
      name: 'failing',
      description: 'Fails.',
      run() {
        throw new Error('nope');
      },
    });
    await expect(invokeTool(failing)).rejects.toThrow('nope');
    const slow = defineTool({ name: 'slow', description: 'Slow.', timeoutMs: 20, run: () => new Promise<string>(() => {}) });
    await expect(invokeTool(slow)).rejects.toThrow('Tool "slow" timed out after 20ms');
  });

  it('synthesizes a unique call id per invocation', async () => {
    const ids: string[] = [];
    const capture = defineTool({
      name: 'capture',
      description: 'Capture.',
      run: ({ toolCallId }) => {
        ids.push(toolCallId);
      },
    });
    await invokeTool(capture);
    await invokeTool(capture);
    expect(new Set(ids).size).toBe(2);
  });
});

describe('raceToolRun', () => {
  it('resolves with the work result and ignores the deadline afterwards', async () => {
    const result = await raceToolRun(async () => 7, {
      label: 'Work',
      signal: new AbortController().signal,
      timeoutMs: 10,
      timeoutError: () => new Error('timeout'),
    });
    expect(result).toBe(7);
  });

  it('skips deadlines beyond the timer range instead of firing at once', async () => {
    const result = await raceToolRun(() => sleep(10).then(() => 'ok'), {
      label: 'Work',
      signal: new AbortController().signal,
      timeoutMs: 2 ** 31,
      timeoutError: () => new Error('timeout'),
    });
    expect(result).toBe('ok');
  });
});

describe('toJsonSnapshot', () => {
  it('copies shared (non-cyclic) references', () => {
    const shared = { a: 1 };
    const copy = toJsonSnapshot({ x: shared, y: shared }) as { x: object; y: object };
    expect(copy).toEqual({ x: { a: 1 }, y: { a: 1 } });
    expect(copy.x).not.toBe(shared);
  });

  it('keeps a top-level undefined and names the root in errors', () => {
    expect(toJsonSnapshot(undefined)).toBeUndefined();
    expect(() => toJsonSnapshot(1n, 'step "x"')).toThrow('a BigInt at step "x"');
  });
});
