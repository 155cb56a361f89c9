import { afterAll, afterEach, beforeAll, expect, test } from 'vitest';
import * as v from 'valibot';
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  type Context,
  type ContextManager,
  type TracerProvider,
  ROOT_CONTEXT,
  SpanStatusCode,
  context as otelContext,
  trace,
} from '@opentelemetry/api';
import { type FlueEvent, type FlueEventContext, defineTool, init, instrument, useModel, useTool } from '@flue/runtime';
import { otelInstrumentation } from '@flue/runtime/otel';
import { RecordingTracer, spansNamed as byName } from './support/recording-tracer.ts';
import { useScriptedRuntime } from './support/scripted-runtime.ts';

/** Context propagation across awaits, as an SDK's AsyncLocalStorage context manager provides. */
class AsyncLocalContextManager implements ContextManager {
  private readonly storage = new AsyncLocalStorage<Context>();
  active(): Context {
    return this.storage.getStore() ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    context: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.storage.run(context, () => fn.call(thisArg, ...args));
  }
  bind<T>(_context: Context, target: T): T {
    return target;
  }
  enable() {
    return this;
  }
  disable() {
    this.storage.disable();
    return this;
  }
}

const globalTracer = new RecordingTracer();
const provider: TracerProvider = { getTracer: () => globalTracer };

// ── The agent ─────────────────────────────────────────────────────────────────────────────────

const ctx = useScriptedRuntime();
const uninstalls: Array<() => Promise<void>> = [];

beforeAll(() => {
  trace.setGlobalTracerProvider(provider);
});
afterEach(async () => {
  await Promise.all(uninstalls.splice(0).map((uninstall) => uninstall()));
  globalTracer.spans.length = 0;
  otelContext.disable();
});
afterAll(() => {
  trace.disable();
});

const lookup = defineTool({
  name: 'lookup',
  description: 'Looks an order up.',
  input: v.object({ id: v.string() }),
  async run({ data }) {
    // The tool's own tracing, as application code would do it.
    const span = trace.getTracer('shop').startSpan('db.lookup');
    span.end();
    if (data.id === 'missing') throw new Error('no such order');
    return { output: { id: data.id, status: 'shipped' } };
  },
});

function Shop() {
  useModel('anthropic/claude-haiku-4-5');
  useTool(lookup);
  return 'Answer order questions.';
}

async function orderQuestion(id: string, orderId: string) {
  ctx.server.script(
    { toolCalls: [{ id: 'call_lookup', name: 'lookup', arguments: { id: orderId } }], usage: { input: 100, output: 10 } },
    { text: 'Done.', usage: { input: 150, output: 5 } },
  );
  const handle = init(Shop, { id });
  const receipt = await handle.dispatch('Where is my order?');
  await handle.read(receipt);
  return receipt.submissionId;
}

test('spans nest submission > model call and submission > tool call, and carry the ids and token usage', async () => {
  await ctx.start([Shop]);
  uninstalls.push(instrument(otelInstrumentation()));
  const submissionId = await orderQuestion('shop-1', '7');

  const spans = globalTracer.spans;
  const [submission] = byName(spans, 'flue.submission');
  const models = byName(spans, 'flue.model_call');
  const [tool] = byName(spans, 'flue.tool_call');
  expect(spans.every((span) => span.ended)).toBe(true);
  expect(byName(spans, 'flue.submission')).toHaveLength(1);
  expect(models).toHaveLength(2);
  for (const child of [...models, tool!]) {
    expect(child.parentSpanId).toBe(submission!.spanId);
    expect(child.traceId).toBe(submission!.traceId);
  }
  const ids = { 'flue.instance_id': 'shop-1', 'flue.submission_id': submissionId, 'flue.agent': expect.any(String) };
  expect(submission!.attributes).toMatchObject({
    ...ids,
    'gen_ai.usage.input_tokens': 250,
    'gen_ai.usage.output_tokens': 15,
    'flue.attempt.outcome': 'completed',
  });
  expect(models[0]!.attributes).toMatchObject({
    ...ids,
    'gen_ai.system': 'anthropic',
    'gen_ai.request.model': 'claude-haiku-4-5',
    'gen_ai.usage.input_tokens': 100,
    'gen_ai.usage.output_tokens': 10,
  });
  expect(models[1]!.attributes).toMatchObject({ 'gen_ai.usage.input_tokens': 150, 'gen_ai.usage.output_tokens': 5 });
  expect(tool!.attributes).toMatchObject({ ...ids, 'flue.tool.name': 'lookup', 'flue.tool_call_id': 'call_lookup' });
  expect(tool!.status.code).toBe(SpanStatusCode.UNSET);
});

test('spans built from runtime events: the prompt operation is a flue.operation span under its submission, with its usage', async () => {
  await ctx.start([Shop]);
  uninstalls.push(instrument(otelInstrumentation()));
  const submissionId = await orderQuestion('shop-ops', '9');
  const spans = globalTracer.spans;
  const [submission] = byName(spans, 'flue.submission');
  const operations = byName(spans, 'flue.operation');
  expect(operations).toHaveLength(1);
  expect(operations[0]).toMatchObject({ parentSpanId: submission!.spanId, traceId: submission!.traceId, ended: true });
  expect(operations[0]!.attributes).toMatchObject({
    'flue.submission_id': submissionId,
    'flue.instance_id': 'shop-ops',
    'flue.operation.id': submissionId,
    'flue.operation.kind': 'prompt',
    'gen_ai.usage.input_tokens': 250,
    'gen_ai.usage.output_tokens': 15,
  });
  expect(operations[0]!.status.code).toBe(SpanStatusCode.UNSET);
});

test('a submission_recovery event is a flue.submission_recovery span: under the attempt while it runs, on its own between attempts', async () => {
  const tracer = new RecordingTracer();
  const otel = otelInstrumentation({ tracer });
  const event = (fields: Record<string, unknown>) =>
    ({
      v: 3,
      type: 'submission_recovery',
      eventIndex: 0,
      timestamp: '',
      instanceId: 'i1',
      agentName: 'A',
      submissionId: 'sub_r',
      kind: 'dispatch',
      attemptCount: 1,
      maxAttempts: 2,
      ...fields,
    }) as FlueEvent;
  const eventCtx = {} as FlueEventContext;
  await otel.interceptor!({ type: 'agent', operationId: 'sub_r', operationKind: 'prompt' }, { submissionId: 'sub_r' }, async () => {
    otel.observe!(
      event({ operation: 'process_submission', outcome: 'deferred', error: { name: 'AttemptStalled', message: 'stalled' } }),
      eventCtx,
    );
  });
  otel.observe!(event({ operation: 'reconcile_submission', outcome: 'deferred' }), eventCtx);
  const [submission] = byName(tracer.spans, 'flue.submission');
  const [during, between] = byName(tracer.spans, 'flue.submission_recovery');
  expect(during).toMatchObject({
    parentSpanId: submission!.spanId,
    ended: true,
    attributes: {
      'flue.submission_id': 'sub_r',
      'flue.recovery.operation': 'process_submission',
      'flue.recovery.outcome': 'deferred',
      'flue.attempt.count': 1,
    },
    status: { code: SpanStatusCode.ERROR, message: 'stalled' },
  });
  expect(between).toMatchObject({
    parentSpanId: undefined,
    ended: true,
    attributes: { 'flue.recovery.operation': 'reconcile_submission' },
  });
  expect(between!.status.code).toBe(SpanStatusCode.UNSET);
});

test('with a context manager, spans nest through the active context; failures are recorded with status ERROR', async () => {
  otelContext.setGlobalContextManager(new AsyncLocalContextManager());
  const tracer = new RecordingTracer();
  await ctx.start([Shop]);
  uninstalls.push(instrument(otelInstrumentation({ tracer })));
  await orderQuestion('shop-2', 'missing');
  const [submission] = byName(tracer.spans, 'flue.submission');
  const [tool] = byName(tracer.spans, 'flue.tool_call');
  expect(tool!.parentSpanId).toBe(submission!.spanId);
  // The tool runs inside its span's context: the application's own spans nest under it.
  expect(globalTracer.spans.map((span) => [span.name, span.parentSpanId])).toEqual([['db.lookup', tool!.spanId]]);
  expect(tool!.status).toEqual({ code: SpanStatusCode.ERROR, message: expect.stringContaining('no such order') });

  // A model call the provider refuses fails the submission: both spans say so.
  tracer.spans.length = 0;
  ctx.server.script({ status: 400, errorBody: 'bad request' });
  const handle = init(Shop, { id: 'shop-3' });
  await handle.read(await handle.dispatch('hello')).catch(() => undefined);
  const [failed] = byName(tracer.spans, 'flue.submission');
  const [model] = byName(tracer.spans, 'flue.model_call');
  expect(model!.parentSpanId).toBe(failed!.spanId);
  expect(model!.status.code).toBe(SpanStatusCode.ERROR);
  expect(failed!.status.code).toBe(SpanStatusCode.ERROR);
  expect(failed!.exceptions).toHaveLength(1);
});
