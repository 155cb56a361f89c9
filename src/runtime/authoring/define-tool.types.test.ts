/**
 * Compile-time contract of the tool types (checked by `tsc --noEmit`; the vitest run only needs
 * the file to load). Each `@ts-expect-error` marks something that must NOT compile.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import * as v from 'valibot';
import { defineTool } from './define-tool.ts';
import type { ToolContext, ToolDefinition, ToolInput, ToolOutput, ToolStep, UseToolSignature } from './define-tool.ts';
import type { FlueHarness, FlueLogger } from '../common/types.ts';

// A stand-in with `useTool`'s signature, to check inline definitions infer like defineTool.
const useTool: UseToolSignature = () => {};

describe('defineTool types', () => {
  it('infers data from the input schema', () => {
    const tool = defineTool({
      name: 'lookup_order',
      description: 'Look up an order.',
      input: v.object({ orderId: v.string(), limit: v.optional(v.number(), 5) }),
      async run(ctx) {
        expectTypeOf(ctx.data).toEqualTypeOf<{ orderId: string; limit: number }>();
        expectTypeOf(ctx.toolCallId).toEqualTypeOf<string>();
        expectTypeOf(ctx.signal).toEqualTypeOf<AbortSignal | undefined>();
        expectTypeOf(ctx.log).toEqualTypeOf<FlueLogger>();
        expectTypeOf(ctx).not.toHaveProperty('harness');
        expectTypeOf(ctx).not.toHaveProperty('step');
        return { output: { status: 'shipped' } };
      },
    });
    expectTypeOf<ToolInput<typeof tool>>().toEqualTypeOf<{ orderId: string; limit: number }>();
    expectTypeOf(tool).toExtend<ToolDefinition>();
  });

  it('infers through v.pipe', () => {
    defineTool({
      name: 'piped',
      description: 'Piped input.',
      input: v.pipe(
        v.object({ a: v.string() }),
        v.check((value) => value.a !== ''),
      ),
      run({ data }) {
        expectTypeOf(data).toEqualTypeOf<{ a: string }>();
      },
    });
  });

  it('has no data key without input', () => {
    const tool = defineTool({
      name: 'ping',
      description: 'Ping.',
      run(ctx) {
        expectTypeOf(ctx).not.toHaveProperty('data');
        // @ts-expect-error -- no input, no data
        void ctx.data;
        return 'pong';
      },
    });
    expectTypeOf<ToolInput<typeof tool>>().toEqualTypeOf<undefined>();
    expectTypeOf<ToolOutput<typeof tool>>().toEqualTypeOf<unknown>();
  });

  it('adds harness only with harness: true', () => {
    defineTool({
      name: 'review',
      description: 'Review.',
      harness: true,
      run(ctx) {
        expectTypeOf(ctx.harness).toEqualTypeOf<FlueHarness>();
        expectTypeOf(ctx).not.toHaveProperty('step');
      },
    });
    defineTool({
      name: 'plain',
      description: 'Plain.',
      harness: false,
      run(ctx) {
        expectTypeOf(ctx).not.toHaveProperty('harness');
      },
    });
  });

  it("compiles the seed's harness tool", () => {
    const Report = v.object({ riskLevel: v.picklist(['low', 'medium', 'high']), summary: v.string() });
    const reviewContract = defineTool({
      name: 'review_contract',
      description: 'Review the contract and return a structured risk report.',
      input: v.object({ contract: v.string() }),
      harness: true,
      async run({ harness, data }) {
        await harness.sandbox.writeFile('contract.md', data.contract);
        const { data: report } = await harness.prompt('Review contract.md.', { result: Report });
        expectTypeOf(report).toEqualTypeOf<v.InferOutput<typeof Report>>();
        return { output: report };
      },
    });
    expectTypeOf(reviewContract.harness).toEqualTypeOf<true | undefined>();
  });

  it('adds step only with durable: true, and both flags compose', () => {
    defineTool({
      name: 'provision',
      description: 'Provision.',
      input: v.object({ customerId: v.string() }),
      durable: true,
      async run({ data, step }) {
        expectTypeOf(step).toEqualTypeOf<ToolStep>();
        const tenant = await step.do('create-tenant', () => ({ id: data.customerId }));
        expectTypeOf(tenant).toEqualTypeOf<{ id: string }>();
        return { output: { tenantId: tenant.id } };
      },
    });
    defineTool({
      name: 'both',
      description: 'Both.',
      durable: true,
      harness: true,
      run(ctx) {
        expectTypeOf(ctx).toHaveProperty('step');
        expectTypeOf(ctx).toHaveProperty('harness');
        expectTypeOf(ctx).not.toHaveProperty('data');
      },
    });
  });

  it('types the return value by the output schema', () => {
    const tool = defineTool({
      name: 'check_inventory',
      description: 'Check stock.',
      input: v.object({ sku: v.string() }),
      output: v.object({ inStock: v.number(), warehouse: v.string() }),
      async run() {
        return { output: { inStock: 3, warehouse: 'north' }, terminate: true };
      },
    });
    expectTypeOf<ToolOutput<typeof tool>>().toEqualTypeOf<{ inStock: number; warehouse: string }>();

    defineTool({
      name: 'wrong_output',
      description: 'Wrong.',
      output: v.object({ inStock: v.number() }),
      // @ts-expect-error -- inStock must be a number
      run: () => ({ output: { inStock: 'many' } }),
    });
    defineTool({
      name: 'string_with_object_schema',
      description: 'Wrong.',
      output: v.object({ inStock: v.number() }),
      // @ts-expect-error -- the string shorthand does not fit an object schema
      run: () => 'three',
    });
    defineTool({
      name: 'void_with_schema',
      description: 'Wrong.',
      output: v.object({ inStock: v.number() }),
      // @ts-expect-error -- returning nothing is only allowed without an output schema
      run: () => {},
    });
    defineTool({
      name: 'string_schema',
      description: 'Fine.',
      output: v.picklist(['yes', 'no']),
      run: () => 'yes' as const,
    });
  });

  it('rejects bare returns and non-object input schemas', () => {
    defineTool({
      name: 'bare',
      description: 'Bare.',
      // @ts-expect-error -- a bare number is not an envelope
      run: () => 42,
    });
    expect(() =>
      defineTool({
        name: 'bad_input',
        description: 'Bad.',
        // @ts-expect-error -- input must be an object schema
        input: v.string(),
        run: () => undefined,
      }),
    ).toThrow('input must be a top-level object schema.');
  });

  it('fits every definition into ToolDefinition[]', () => {
    const tools: ToolDefinition[] = [
      defineTool({ name: 'a', description: 'A.', run: () => 'a' }),
      defineTool({
        name: 'b',
        description: 'B.',
        input: v.object({ id: v.string() }),
        output: v.object({ id: v.string() }),
        harness: true,
        durable: true,
        timeoutMs: 100,
        annotations: { readOnlyHint: true, 'x-extra': 1 },
        run: ({ data }) => ({ output: { id: data.id } }),
      }),
    ];
    expectTypeOf(tools).toEqualTypeOf<ToolDefinition[]>();
  });

  it('exposes ToolContext as the seed describes', () => {
    type Schema = ReturnType<typeof v.object<{ q: v.StringSchema<undefined> }>>;
    expectTypeOf<ToolContext<Schema>['data']>().toEqualTypeOf<{ q: string }>();
    expectTypeOf<ToolContext>().not.toHaveProperty('data');
    expectTypeOf<ToolContext<undefined, true>['harness']>().toEqualTypeOf<FlueHarness>();
    expectTypeOf<ToolContext<undefined, false>>().not.toHaveProperty('harness');
    expectTypeOf<ToolContext<undefined, undefined, true>['step']>().toEqualTypeOf<ToolStep>();
  });
});

describe('useTool inline inference', () => {
  it('infers inline definitions like defineTool and accepts defined tools', () => {
    useTool({
      name: 'record_approval',
      description: 'Record an approval code.',
      input: v.object({ code: v.string() }),
      async run({ data }) {
        expectTypeOf(data.code).toEqualTypeOf<string>();
        return data.code === 'ok' ? 'Approval recorded.' : 'Invalid approval code.';
      },
    });
    useTool({
      name: 'no_input',
      description: 'No input.',
      run(ctx) {
        expectTypeOf(ctx).not.toHaveProperty('data');
      },
    });
    useTool(
      defineTool({
        name: 'defined',
        description: 'Defined.',
        input: v.object({ id: v.string() }),
        run: ({ data }) => data.id,
      }),
    );
  });

  it("keeps a caller's generic input schema usable (the seed's approval gate)", () => {
    function useApprovalGate<TInput extends v.GenericSchema<Record<string, unknown>>>(gate: {
      name: string;
      description: string;
      input: TInput;
      needsApproval?: (args: v.InferOutput<TInput>) => boolean;
      execute: (args: v.InferOutput<TInput>, approvalId: string) => Promise<string>;
    }): void {
      useTool({
        name: gate.name,
        description: `${gate.description} Some calls need operator approval before they run.`,
        input: gate.input,
        async run({ data, toolCallId }) {
          if (gate.needsApproval && !gate.needsApproval(data)) {
            return { output: { status: 'executed', result: await gate.execute(data, toolCallId) } };
          }
          return { output: { status: 'pending_approval', approvalId: toolCallId }, terminate: true };
        },
      });
    }
    expectTypeOf(useApprovalGate).toBeFunction();
  });
});
