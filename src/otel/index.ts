/**
 * `@flue/runtime/otel`: OpenTelemetry spans for submissions, model calls and tool calls, built on
 * `instrument()`. Only `@opentelemetry/api` is used; the application installs an SDK and exporter.
 *
 *   instrument(otelInstrumentation());
 *
 * Spans: `flue.submission` (one per attempt) > `flue.model_call` and `flue.tool_call`, from the
 * interceptors. Nesting follows the active OpenTelemetry context when a context manager is
 * registered (so a delegated task's calls nest under its `task` tool call); without one, calls
 * still nest under their submission's span, which is looked up by submission id. From runtime
 * events: `flue.operation` (operation_start → operation), `flue.task` (task_start → task) and a
 * `flue.submission_recovery` span per recovery event, under their submission's span.
 */
import { type Attributes, type Context, type Span, SpanKind, SpanStatusCode, type Tracer, context, trace } from '@opentelemetry/api';
import type { FlueEvent } from '../runtime/common/events.ts';
import type { FlueExecutionContext, FlueExecutionOperation, FlueInstrumentation } from '../runtime/common/instrumentation.ts';
import { skipUnknown } from '../shared/exhaustive.ts';

export interface OtelInstrumentationOptions {
  /** Defaults to the global tracer provider's tracer named `@flue/runtime`, looked up per span. */
  tracer?: Tracer;
  /** The `instrument()` key; defaults to `'flue.otel'`. */
  key?: string | symbol;
}

/** Tool error text and model error messages are cut to this length in span status messages. */
const STATUS_MESSAGE_LIMIT = 1_000;

interface SubmissionSpan {
  span: Span;
  inputTokens: number;
  outputTokens: number;
}

interface ModelResultShape {
  stopReason?: string;
  errorMessage?: string;
  responseId?: string;
  model?: string;
  usage?: { input?: number; output?: number; cacheRead?: number; cacheWrite?: number; totalTokens?: number };
}

export function otelInstrumentation(options: OtelInstrumentationOptions = {}): FlueInstrumentation {
  // The attempt spans in flight, so calls can find their parent without a context manager.
  const submissions = new Map<string, SubmissionSpan>();
  const tracer = () => options.tracer ?? trace.getTracer('@flue/runtime');

  // Spans built from bounding events (start → terminal), keyed by the bound's id.
  const bounded = new Map<string, Span>();
  /** A span for an event of a submission: under the submission's attempt span while it runs. */
  const startUnder = (name: string, event: FlueEvent, attributes: Attributes): Span => {
    const attempt = typeof event.submissionId === 'string' ? submissions.get(event.submissionId) : undefined;
    const parent = attempt === undefined ? context.active() : trace.setSpan(context.active(), attempt.span);
    return tracer().startSpan(name, { kind: SpanKind.INTERNAL, attributes: { ...eventAttributes(event), ...attributes } }, parent);
  };
  const end = (key: string, failed: boolean, message: unknown, attributes: Attributes = {}) => {
    const span = bounded.get(key);
    if (span === undefined) return;
    bounded.delete(key);
    span.setAttributes(attributes);
    if (failed) span.setStatus({ code: SpanStatusCode.ERROR, message: truncate(errorMessage(message)) });
    span.end();
  };

  return {
    key: options.key ?? 'flue.otel',
    observe: (event) => {
      switch (event.type) {
        case 'operation_start':
          bounded.set(
            `op:${event.operationId}`,
            startUnder('flue.operation', event, {
              'flue.operation.id': String(event.operationId),
              'flue.operation.kind': String(event.operationKind),
            }),
          );
          return;
        case 'operation':
          return end(`op:${event.operationId}`, event.isError === true, event.error, usageAttributes(event.usage));
        case 'task_start':
          bounded.set(`task:${event.taskId}`, startUnder('flue.task', event, { 'flue.task_id': String(event.taskId) }));
          return;
        case 'task':
          return end(`task:${event.taskId}`, event.isError === true, event.result);
        case 'submission_recovery': {
          const span = startUnder('flue.submission_recovery', event, {
            'flue.recovery.operation': String(event.operation),
            'flue.recovery.outcome': String(event.outcome),
            ...(typeof event.attemptCount === 'number' ? { 'flue.attempt.count': event.attemptCount } : {}),
          });
          if (event.error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: truncate(errorMessage(event.error)) });
          span.end();
          return;
        }
        default:
          // Every other event is already a span (model and tool calls) or no span of its own.
          return;
      }
    },
    interceptor: async <T>(op: FlueExecutionOperation, ctx: FlueExecutionContext, next: () => Promise<T>): Promise<T> => {
      const parent = op.type === 'agent' ? context.active() : parentContext(ctx, submissions);
      const span = tracer().startSpan(
        spanName(op),
        { kind: op.type === 'model' ? SpanKind.CLIENT : SpanKind.INTERNAL, attributes: startAttributes(op, ctx) },
        parent,
      );
      const attemptId = op.type === 'agent' ? op.operationId : undefined;
      const attempt: SubmissionSpan | undefined = attemptId === undefined ? undefined : { span, inputTokens: 0, outputTokens: 0 };
      if (attemptId !== undefined) submissions.set(attemptId, attempt!);
      try {
        const result = await context.with(trace.setSpan(parent, span), next);
        recordResult(op, span, result, ctx.submissionId === undefined ? undefined : submissions.get(ctx.submissionId));
        return result;
      } catch (error) {
        span.recordException(error instanceof Error ? error : String(error));
        span.setStatus({ code: SpanStatusCode.ERROR, message: truncate(error instanceof Error ? error.message : String(error)) });
        throw error;
      } finally {
        if (attemptId !== undefined && attempt !== undefined) {
          // The attempt's total: every model call it made, compaction included.
          span.setAttribute('gen_ai.usage.input_tokens', attempt.inputTokens);
          span.setAttribute('gen_ai.usage.output_tokens', attempt.outputTokens);
          if (submissions.get(attemptId) === attempt) submissions.delete(attemptId);
        }
        span.end();
      }
    },
  };
}

/** The ids an event carries, as the span attributes the interceptor spans use. */
function eventAttributes(event: FlueEvent): Attributes {
  const attributes: Attributes = {};
  const names: Record<string, string> = {
    agentName: 'flue.agent',
    instanceId: 'flue.instance_id',
    submissionId: 'flue.submission_id',
    conversationId: 'flue.conversation_id',
    session: 'flue.session',
    harness: 'flue.harness',
    taskId: 'flue.task_id',
  };
  for (const [field, name] of Object.entries(names)) {
    const value = event[field];
    if (typeof value === 'string') attributes[name] = value;
  }
  return attributes;
}

function usageAttributes(usage: unknown): Attributes {
  if (typeof usage !== 'object' || usage === null) return {};
  const { input, output } = usage as { input?: unknown; output?: unknown };
  return {
    ...(typeof input === 'number' ? { 'gen_ai.usage.input_tokens': input } : {}),
    ...(typeof output === 'number' ? { 'gen_ai.usage.output_tokens': output } : {}),
  };
}

function errorMessage(error: unknown): string {
  if (typeof error === 'string') return error;
  if (typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string')
    return (error as { message: string }).message;
  return 'failed';
}

function parentContext(ctx: FlueExecutionContext, submissions: Map<string, SubmissionSpan>): Context {
  const active = context.active();
  if (trace.getSpan(active) !== undefined) return active;
  const attempt = ctx.submissionId === undefined ? undefined : submissions.get(ctx.submissionId);
  return attempt === undefined ? active : trace.setSpan(active, attempt.span);
}

const SPAN_NAMES = {
  agent: 'flue.submission',
  model: 'flue.model_call',
  tool: 'flue.tool_call',
} as const satisfies Record<FlueExecutionOperation['type'], string>;

function spanName(op: FlueExecutionOperation): string {
  return SPAN_NAMES[op.type];
}

function startAttributes(op: FlueExecutionOperation, ctx: FlueExecutionContext): Attributes {
  const attributes: Attributes = {};
  const set = (name: string, value: string | undefined) => {
    if (value !== undefined) attributes[name] = value;
  };
  set('flue.agent', ctx.agentName);
  set('flue.instance_id', ctx.instanceId);
  set('flue.submission_id', ctx.submissionId);
  set('flue.conversation_id', ctx.conversationId);
  set('flue.session', ctx.session);
  set('flue.harness', ctx.harness);
  set('flue.task_id', ctx.taskId);
  set('flue.turn_id', ctx.turnId);
  if (op.type === 'model') {
    set('gen_ai.operation.name', 'chat');
    set('gen_ai.system', op.provider);
    set('gen_ai.request.model', op.model);
    set('flue.model.purpose', op.purpose);
  } else if (op.type === 'tool') {
    set('gen_ai.operation.name', 'execute_tool');
    set('flue.tool.name', op.toolName);
    set('flue.tool_call_id', op.toolCallId);
    set('gen_ai.tool.name', op.toolName);
    set('gen_ai.tool.call.id', op.toolCallId);
  }
  return attributes;
}

function recordResult(op: FlueExecutionOperation, span: Span, result: unknown, attempt: SubmissionSpan | undefined): void {
  if (typeof result !== 'object' || result === null) return;
  switch (op.type) {
    case 'agent': {
      const outcome = (result as { outcome?: unknown }).outcome;
      if (typeof outcome === 'string') span.setAttribute('flue.attempt.outcome', outcome);
      return;
    }
    case 'tool': {
      const { isError, content } = result as { isError?: unknown; content?: unknown };
      if (isError === true)
        span.setStatus({ code: SpanStatusCode.ERROR, message: truncate(typeof content === 'string' ? content : 'the tool call failed') });
      return;
    }
    case 'model':
      return recordModelResult(span, result as ModelResultShape, attempt);
    default:
      return skipUnknown(op);
  }
}

function recordModelResult(span: Span, message: ModelResultShape, attempt: SubmissionSpan | undefined): void {
  const usage = message.usage;
  if (usage !== undefined) {
    const input = usage.input ?? 0;
    const output = usage.output ?? 0;
    span.setAttribute('gen_ai.usage.input_tokens', input);
    span.setAttribute('gen_ai.usage.output_tokens', output);
    if (usage.cacheRead !== undefined) span.setAttribute('flue.usage.cache_read_tokens', usage.cacheRead);
    if (usage.cacheWrite !== undefined) span.setAttribute('flue.usage.cache_write_tokens', usage.cacheWrite);
    if (attempt !== undefined) {
      attempt.inputTokens += input;
      attempt.outputTokens += output;
    }
  }
  if (message.stopReason !== undefined) span.setAttribute('gen_ai.response.finish_reasons', [message.stopReason]);
  if (message.responseId !== undefined) span.setAttribute('gen_ai.response.id', message.responseId);
  if (message.model !== undefined) span.setAttribute('gen_ai.response.model', message.model);
  if (message.stopReason === 'error')
    span.setStatus({ code: SpanStatusCode.ERROR, message: truncate(message.errorMessage ?? 'the model call failed') });
}

function truncate(text: string): string {
  return text.length <= STATUS_MESSAGE_LIMIT ? text : `${text.slice(0, STATUS_MESSAGE_LIMIT)}…`;
}
