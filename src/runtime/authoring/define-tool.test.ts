import { describe, expect, it } from 'vitest';
import * as v from 'valibot';
import {
  HARNESS_RESERVED_TOOL_NAMES,
  RESERVED_TOOL_NAMES,
  assembleToolSet,
  defineTool,
  toolParameters,
  toolSpec,
  validateToolDefinition,
} from './define-tool.ts';
import type { ToolDefinition } from './define-tool.ts';
import { ToolDefinitionError, ToolNameConflictError } from '../common/errors.ts';

const base = { name: 'lookup', description: 'Look something up.', run: () => 'ok' };

/** Calls defineTool with an untyped object, as JavaScript callers (or bad casts) would. */
function define(options: Record<string, unknown>): ToolDefinition {
  return defineTool(options as never);
}

function expectDefineError(options: Record<string, unknown>, pattern: RegExp | string): void {
  let thrown: unknown;
  try {
    define(options);
  } catch (error) {
    thrown = error;
  }
  // Typed, so a bad useTool() inside a render reaches the caller with its reason.
  expect(thrown).toBeInstanceOf(ToolDefinitionError);
  expect((thrown as ToolDefinitionError).type).toBe('tool_definition_invalid');
  expect((thrown as ToolDefinitionError).meta).toMatchObject({ site: 'defineTool' });
  const message = (thrown as Error).message;
  expect(message.startsWith('[flue] defineTool():')).toBe(true);
  if (typeof pattern === 'string') expect(message).toContain(pattern);
  else expect(message).toMatch(pattern);
}

describe('defineTool validation', () => {
  it('returns a frozen copy holding only the declared keys', () => {
    const options = { ...base, input: v.object({ id: v.string() }), timeoutMs: 500 };
    const tool = define(options);
    expect(tool).not.toBe(options);
    expect(Object.isFrozen(tool)).toBe(true);
    expect(Object.keys(tool).sort()).toEqual(['description', 'input', 'name', 'run', 'timeoutMs']);
    expect(tool.input).toBe(options.input);
    expect(tool.run).toBe(options.run);
    // Later mutation of the options object does not reach the definition.
    options.name = 'changed';
    expect(tool.name).toBe('lookup');
  });

  it('treats undefined optional keys as absent', () => {
    const tool = define({ ...base, input: undefined, harness: undefined, timeoutMs: undefined });
    expect('input' in tool).toBe(false);
    expect('harness' in tool).toBe(false);
  });

  it('rejects a non-object definition', () => {
    for (const bad of [null, undefined, 'tool', 42, [base]]) {
      expect(() => defineTool(bad as never)).toThrow(/^\[flue\] defineTool\(\): a tool definition must be an object/);
    }
  });

  it('rejects unknown keys, naming the key and the tool', () => {
    expectDefineError({ ...base, inputs: v.object({}) }, 'tool "lookup": unknown key "inputs"');
    expectDefineError({ ...base, parameters: {} }, 'unknown key "parameters"');
  });

  it('requires a non-empty name', () => {
    expectDefineError({ ...base, name: undefined }, '"name" must be a non-empty string, received undefined');
    expectDefineError({ ...base, name: '   ' }, '"name" must be a non-empty string, received "   "');
    expectDefineError({ ...base, name: 7 }, '"name" must be a non-empty string, received 7');
  });

  it('requires a non-empty description', () => {
    expectDefineError({ ...base, description: '' }, 'tool "lookup": "description" must be a non-empty string');
    expectDefineError({ ...base, description: ' \n ' }, '"description" must be a non-empty string');
    expectDefineError({ ...base, description: undefined }, '"description"');
  });

  it('accepts every top-level object schema, also inside v.pipe', () => {
    const schemas = [
      v.object({ a: v.string() }),
      v.strictObject({ a: v.string() }),
      v.looseObject({ a: v.string() }),
      v.objectWithRest({ a: v.string() }, v.number()),
      v.pipe(
        v.object({ a: v.string() }),
        v.check((value) => value.a.length > 0),
      ),
      v.pipe(v.pipe(v.strictObject({})), v.description('nested pipe')),
    ];
    for (const input of schemas) expect(define({ ...base, input }).input).toBe(input);
  });

  it('rejects input that is not a top-level object schema', () => {
    for (const input of [
      v.string(),
      v.array(v.object({})),
      v.optional(v.object({})),
      v.union([v.object({}), v.object({ a: v.string() })]),
      v.pipe(
        v.string(),
        v.transform((value) => ({ value })),
      ),
      { type: 'object' },
      'object',
    ]) {
      expectDefineError({ ...base, input }, 'tool "lookup": input must be a top-level object schema.');
    }
  });

  it('requires output to be a Valibot schema', () => {
    expect(define({ ...base, output: v.string() }).output).toBeDefined();
    expectDefineError({ ...base, output: { type: 'string' } }, 'tool "lookup": "output" must be a Valibot schema.');
    expectDefineError({ ...base, output: null }, '"output" must be a Valibot schema.');
  });

  it('requires harness and durable to be booleans', () => {
    expect(define({ ...base, harness: true, durable: false })).toMatchObject({ harness: true, durable: false });
    expectDefineError({ ...base, harness: 'yes' }, '"harness" must be a boolean when present, received a string');
    expectDefineError({ ...base, durable: 1 }, '"durable" must be a boolean when present, received a number');
  });

  it('requires timeoutMs to be a positive finite integer', () => {
    expect(define({ ...base, timeoutMs: 15_000 }).timeoutMs).toBe(15_000);
    for (const [timeoutMs, shown] of [
      [0, '0'],
      [-5, '-5'],
      [1.5, '1.5'],
      [Number.POSITIVE_INFINITY, 'Infinity'],
      [Number.NaN, 'NaN'],
      ['100', '"100"'],
    ] as const) {
      expectDefineError(
        { ...base, timeoutMs },
        `tool "lookup": "timeoutMs" must be a positive finite integer (milliseconds), received ${shown}.`,
      );
    }
  });

  it('type-checks known annotation keys and preserves unknown ones', () => {
    const annotations = {
      title: 'Lookup',
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
      'x-vendor': { cost: 3 },
    };
    const tool = define({ ...base, annotations });
    expect(tool.annotations).toEqual(annotations);
    expect(tool.annotations).not.toBe(annotations);
    expect(Object.isFrozen(tool.annotations)).toBe(true);

    expectDefineError({ ...base, annotations: [] }, '"annotations" must be a plain object, received an array');
    expectDefineError({ ...base, annotations: new Map() }, '"annotations" must be a plain object');
    expectDefineError({ ...base, annotations: 'hint' }, '"annotations" must be a plain object');
    expectDefineError({ ...base, annotations: { title: 3 } }, '"annotations.title" must be a string, received a number');
    for (const hint of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint']) {
      expectDefineError({ ...base, annotations: { [hint]: 'true' } }, `"annotations.${hint}" must be a boolean`);
    }
  });

  it('requires run to be a function', () => {
    expectDefineError({ ...base, run: undefined }, 'tool "lookup": "run" must be a function, received undefined');
    expectDefineError({ ...base, run: 'go' }, '"run" must be a function, received a string');
  });

  it('labels errors with the call site', () => {
    expect(() => validateToolDefinition({ ...base, name: '' }, 'useTool')).toThrow(
      /^\[flue\] useTool\(\): a tool definition: "name" must be a non-empty string/,
    );
    expect(() => validateToolDefinition({ ...base, extra: 1 }, 'useTool')).toThrow('[flue] useTool(): tool "lookup": unknown key "extra".');
  });

  it('returns an already validated definition unchanged', () => {
    const tool = define(base);
    expect(validateToolDefinition(tool, 'useTool')).toBe(tool);
    expect(defineTool(tool as never)).toBe(tool);
    const inline = validateToolDefinition({ ...base }, 'useTool');
    expect(Object.isFrozen(inline)).toBe(true);
  });
});

describe('toolParameters', () => {
  it('gives an empty object schema without input', () => {
    expect(toolParameters(define(base))).toEqual({ type: 'object', properties: {} });
  });

  it('offers a definition to every turn as one spec object: its name, description and schema', () => {
    const tool = define({ ...base, input: v.object({ key: v.string() }) });
    const spec = toolSpec(tool);
    expect(spec).toEqual({ name: tool.name, description: tool.description, parameters: toolParameters(tool) });
    expect(toolSpec(tool)).toBe(spec);
    expect(toolSpec(define({ ...base }))).not.toBe(spec);
  });

  it('converts a nested valibot object to JSON Schema without $schema', () => {
    const tool = define({
      ...base,
      input: v.object({
        orderId: v.pipe(v.string(), v.description('The order id.')),
        limit: v.optional(v.number(), 10),
        filter: v.object({
          tags: v.array(v.string()),
          status: v.picklist(['open', 'closed']),
        }),
      }),
    });
    expect(toolParameters(tool)).toEqual({
      type: 'object',
      properties: {
        orderId: { type: 'string', description: 'The order id.' },
        limit: { type: 'number', default: 10 },
        filter: {
          type: 'object',
          properties: {
            tags: { type: 'array', items: { type: 'string' } },
            status: { type: 'string', enum: ['open', 'closed'] },
          },
          required: ['tags', 'status'],
        },
      },
      required: ['orderId', 'filter'],
    });
  });

  it('describes what the model sends, not what transforms produce', () => {
    const tool = define({
      ...base,
      input: v.object({ count: v.pipe(v.string(), v.transform(Number)) }),
    });
    expect(toolParameters(tool)).toEqual({
      type: 'object',
      properties: { count: { type: 'string' } },
      required: ['count'],
    });
  });

  it('prefers explicit parameters set by adapters, returning a copy', () => {
    const parameters = { type: 'object', properties: { q: { type: 'string' } } };
    const adapted: ToolDefinition = Object.freeze({ ...base, parameters });
    const result = toolParameters(adapted);
    expect(result).toEqual(parameters);
    expect(result).not.toBe(parameters);
  });
});

describe('assembleToolSet', () => {
  const tool = (name: string): ToolDefinition => define({ ...base, name });

  it('flattens the groups in assembly order', () => {
    const tools = assembleToolSet({
      custom: [tool('lookup_order')],
      result: [tool('finish'), tool('give_up')],
      framework: [tool('task'), tool('activate_skill')],
      builtin: [tool('read'), tool('bash')],
    });
    expect(tools.map((t) => t.name)).toEqual(['task', 'activate_skill', 'read', 'bash', 'lookup_order', 'finish', 'give_up']);
  });

  it('lists the reserved names', () => {
    expect(RESERVED_TOOL_NAMES).toEqual(['task', 'activate_skill', 'read_skill_resource']);
    expect(HARNESS_RESERVED_TOOL_NAMES).toEqual(['finish', 'give_up']);
  });

  it('rejects reserved names in the custom and builtin groups', () => {
    for (const name of RESERVED_TOOL_NAMES) {
      for (const group of ['custom', 'builtin'] as const) {
        let thrown: unknown;
        try {
          assembleToolSet({ [group]: [tool(name)] });
        } catch (error) {
          thrown = error;
        }
        expect(thrown).toBeInstanceOf(ToolNameConflictError);
        expect((thrown as ToolNameConflictError).type).toBe('tool_name_conflict');
        expect((thrown as Error).message).toBe(`Tool name "${name}" is reserved by the framework.`);
      }
    }
  });

  it('reserves finish and give_up inside harness prompts only', () => {
    for (const name of HARNESS_RESERVED_TOOL_NAMES) {
      expect(assembleToolSet({ custom: [tool(name)] }).map((t) => t.name)).toEqual([name]);
      expect(() => assembleToolSet({ custom: [tool(name)], harnessPrompt: true })).toThrow(
        new ToolNameConflictError(`Tool name "${name}" is reserved by the framework inside harness prompts.`),
      );
    }
  });

  it('allows reserved names in the framework and result groups', () => {
    expect(() => assembleToolSet({ framework: [tool('task'), tool('read_skill_resource')], result: [tool('finish')] })).not.toThrow();
  });

  it('rejects duplicates within and across groups', () => {
    const cases = [
      { custom: [tool('lookup'), tool('lookup')] },
      { builtin: [tool('read')], custom: [tool('read')] },
      { framework: [tool('task')], result: [tool('task')] },
    ];
    for (const groups of cases) {
      let thrown: unknown;
      try {
        assembleToolSet(groups);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(ToolNameConflictError);
      expect((thrown as ToolNameConflictError).type).toBe('tool_name_conflict');
      expect((thrown as Error).message).toMatch(/^Duplicate tool name "(lookup|read|task)"\.$/);
    }
  });
});
