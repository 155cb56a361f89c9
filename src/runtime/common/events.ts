/**
 * Live runtime events (events.md): in-process only, never persisted, never on the conversation
 * wire. Tool and hook `log` lines travel here, so the model and clients never see them.
 */
import { FlueError, isAbortError } from './errors.ts';
import type { FlueLogger } from './types.ts';

export interface FlueEvent {
  v: 3;
  type: string;
  eventIndex: number;
  timestamp: string;
  instanceId?: string;
  agentName?: string;
  submissionId?: string;
  [field: string]: unknown;
}

export interface FlueEventContext {
  readonly id: string;
  readonly agentName: string | undefined;
  readonly env: Record<string, unknown>;
  readonly req: Request | undefined;
  readonly log: FlueLogger;
}

export type FlueObservation = FlueEvent;
export type FlueObservationSubscriber = (observation: FlueObservation, ctx: FlueEventContext) => void | Promise<void>;
export type FlueEventSubscriber = FlueObservationSubscriber;

const subscribers = new Set<FlueObservationSubscriber>();
let eventIndex = 0;

export function observe(subscriber: FlueObservationSubscriber): () => void {
  subscribers.add(subscriber);
  return () => {
    subscribers.delete(subscriber);
  };
}

/**
 * Someone observes this isolate's events. Hot emitters (each streamed delta) ask this before they
 * build a payload, so emitting costs one size check when nobody listens.
 */
export function observed(): boolean {
  return subscribers.size > 0;
}

/** Replaces the bytes of every image block in runtime event payloads; the model's context keeps the real bytes. */
export const IMAGE_DATA_OMITTED = '[image data omitted from event]';

/** A copy of message-bearing values with every image block's `data` replaced by the sentinel. */
export function omitImageData<T>(value: T): T {
  if (Array.isArray(value)) return value.map((item) => omitImageData(item)) as T;
  if (typeof value !== 'object' || value === null) return value;
  const record = value as Record<string, unknown>;
  if (record.type === 'image' && typeof record.data === 'string') return { ...record, data: IMAGE_DATA_OMITTED } as T;
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(record)) out[key] = omitImageData(child);
  return out as T;
}

export interface EmitScope {
  instanceId: string;
  agentName: string;
  env: Record<string, unknown>;
  submissionId?: string;
  /** Further correlation fields (`conversationId`, `session`, `parentSession`, `taskId`, …). */
  correlation?: Record<string, string>;
}

/** Emitting never throws and never awaits a subscriber: observers cannot break the engine. */
export function emit(scope: EmitScope, type: string, payload: Record<string, unknown> = {}): void {
  if (subscribers.size === 0) return;
  const event = deepFreeze(
    structuredClone({
      ...scope.correlation,
      ...payload,
      v: 3 as const,
      type,
      eventIndex: eventIndex++,
      timestamp: new Date().toISOString(),
      instanceId: scope.instanceId,
      agentName: scope.agentName,
      ...(scope.submissionId === undefined ? {} : { submissionId: scope.submissionId }),
    }),
  ) as FlueEvent;
  const ctx: FlueEventContext = {
    id: scope.instanceId,
    agentName: scope.agentName,
    env: scope.env,
    req: undefined,
    log: createLogger(scope, {}),
  };
  for (const subscriber of subscribers) {
    try {
      const result = subscriber(event, ctx);
      if (result !== undefined && typeof (result as Promise<void>).then === 'function') {
        (result as Promise<void>).then(undefined, (error) => console.error('[flue:observe] subscriber rejected:', error));
      }
    } catch (error) {
      console.error('[flue:observe] subscriber threw:', error);
    }
  }
}

/** A logger whose lines become `log` events stamped with where they came from. */
export function createLogger(scope: EmitScope, provenance: Record<string, unknown>): FlueLogger {
  const line = (level: 'info' | 'warn' | 'error') => (message: string, attributes?: Record<string, unknown>) => {
    emit(scope, 'log', {
      level,
      message: String(message),
      attributes: { ...normalizeAttributes(attributes), ...provenance },
    });
  };
  return { info: line('info'), warn: line('warn'), error: line('error') };
}

function normalizeAttributes(attributes: Record<string, unknown> | undefined): Record<string, unknown> {
  if (attributes === undefined) return {};
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(attributes)) {
    out[key] = value instanceof Error ? errorShape(value) : safeClone(value);
  }
  return out;
}

/** A thrown value as durable-shaped event fields carry it: never a stack; a non-`Error` passes as is. */
export function eventError(error: unknown): unknown {
  return error instanceof Error ? errorShape(error) : safeClone(error);
}

function errorShape(error: Error): Record<string, unknown> {
  const shape: Record<string, unknown> = { name: error.name, message: error.message };
  if (error instanceof FlueError) Object.assign(shape, { type: error.type, details: error.details, meta: error.meta });
  return shape;
}

function safeClone(value: unknown): unknown {
  try {
    return structuredClone(value);
  } catch {
    return String(value);
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** Classification of a thrown value for observers. */
export function errorInfo(error: unknown): { type: string; name?: string; message?: string; meta?: Record<string, unknown> } {
  if (isAbortError(error)) return { type: 'AbortError', message: (error as Error).message };
  if (error instanceof FlueError)
    return { type: error.type, name: error.name, message: error.message, ...(error.meta ? { meta: error.meta } : {}) };
  if (error instanceof Error) return { type: error.name || '_OTHER', name: error.name, message: error.message };
  if (typeof error === 'string') return { type: '_OTHER', message: error };
  return { type: '_OTHER' };
}
