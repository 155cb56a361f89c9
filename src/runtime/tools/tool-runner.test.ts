import { describe, expect, it, vi } from 'vitest';
import * as v from 'valibot';
import { defineTool } from '../authoring/define-tool.ts';
import { ToolInputValidationError, ToolOutputSerializationError, ToolOutputValidationError } from '../common/errors.ts';
import { environment, expectError, logger, returning, sleep } from './tool-runner.fixtures.ts';
import { runToolCall } from './tool-runner.ts';

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
    const error = expectError(await runToolCall(tool(), 'query', environment()), ToolInputValidationError, 'tool_input_validation');
    expect((error.meta?.issues as object[])[0]).toEqual({ message: expect.stringContaining('Expected Object') });
  });

  it('starts the deadline only once run is invoked', async () => {
    const slowInput = defineTool({
      name: 'slow_input',
      description: 'Slow input.',
      input: v.objectAsync({
        id: v.pipeAsync(
          v.string(),
          v.checkAsync(async () => (await sleep(40), true)),
        ),
      }),
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
