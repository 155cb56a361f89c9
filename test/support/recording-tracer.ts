/**
 * Test support: a tiny in-memory OpenTelemetry tracer that records every span with its parent.
 * Platform-neutral, so Node and workerd tests share it.
 */
import {
  type Attributes,
  type AttributeValue,
  type Context,
  type Span,
  type SpanContext,
  type SpanOptions,
  type SpanStatus,
  type Tracer,
  SpanStatusCode,
  context as otelContext,
  trace,
} from '@opentelemetry/api';

export interface Recorded {
  name: string;
  spanId: string;
  traceId: string;
  parentSpanId: string | undefined;
  attributes: Record<string, AttributeValue | undefined>;
  status: SpanStatus;
  exceptions: unknown[];
  ended: boolean;
}

class RecordingSpan implements Span {
  readonly record: Recorded;
  private readonly context: SpanContext;
  constructor(record: Recorded, context: SpanContext) {
    this.record = record;
    this.context = context;
  }
  spanContext() {
    return this.context;
  }
  setAttribute(key: string, value: AttributeValue) {
    this.record.attributes[key] = value;
    return this;
  }
  setAttributes(attributes: Attributes) {
    Object.assign(this.record.attributes, attributes);
    return this;
  }
  addEvent() {
    return this;
  }
  addLink() {
    return this;
  }
  addLinks() {
    return this;
  }
  setStatus(status: SpanStatus) {
    this.record.status = status;
    return this;
  }
  updateName(name: string) {
    this.record.name = name;
    return this;
  }
  end() {
    this.record.ended = true;
  }
  isRecording() {
    return !this.record.ended;
  }
  recordException(exception: unknown) {
    this.record.exceptions.push(exception);
  }
}

export class RecordingTracer implements Tracer {
  readonly spans: Recorded[] = [];
  startSpan(name: string, options: SpanOptions = {}, context: Context = otelContext.active()): Span {
    const parent = trace.getSpan(context)?.spanContext();
    const record: Recorded = {
      name,
      spanId: hexId(16),
      traceId: parent?.traceId ?? hexId(32),
      parentSpanId: parent?.spanId,
      attributes: { ...options.attributes },
      status: { code: SpanStatusCode.UNSET },
      exceptions: [],
      ended: false,
    };
    this.spans.push(record);
    return new RecordingSpan(record, { traceId: record.traceId, spanId: record.spanId, traceFlags: 1 });
  }
  startActiveSpan<F extends (span: Span) => unknown>(name: string, ...rest: unknown[]): ReturnType<F> {
    const fn = rest.at(-1) as F;
    const options = (typeof rest[0] === 'object' ? rest[0] : {}) as SpanOptions;
    const parent = (rest.length === 3 ? rest[1] : otelContext.active()) as Context;
    const span = this.startSpan(name, options, parent);
    return otelContext.with(trace.setSpan(parent, span), () => fn(span)) as ReturnType<F>;
  }
}

function hexId(length: number): string {
  const bytes = crypto.getRandomValues(new Uint8Array(length / 2));
  return [...bytes].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

export function spansNamed(spans: Recorded[], name: string): Recorded[] {
  return spans.filter((span) => span.name === name);
}
