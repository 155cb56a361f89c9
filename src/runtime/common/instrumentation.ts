/**
 * `instrument()` (events.md §3): process-wide execution interceptors around submission attempts,
 * model calls and tool calls, for tracing integrations such as `@flue/runtime/otel`.
 *
 * Interceptors observe; they never decide. The runtime always runs the operation exactly once and
 * keeps its own result or error: a throwing interceptor is logged with `[flue:instrument]` and
 * the operation goes on as if it were not installed, because a tracing bug must not fail agent
 * work (the same rule as for `observe()` subscribers).
 */
import { isDevServer } from './dev-mode.ts';
import { FlueError } from './errors.ts';
import { type FlueObservationSubscriber, observe } from './events.ts';

/** What an interceptor wraps. */
export type FlueExecutionOperation =
  /** One attempt of a submission: `operationId` is the submission id. */
  | { type: 'agent'; operationId: string; operationKind: 'prompt' }
  /** One provider call: `turnId` is the model step's id. */
  | { type: 'model'; turnId: string; purpose: 'agent' | 'compaction'; provider: string; model: string }
  /** One tool execution (custom, built-in sandbox, or a delegated `task`). */
  | { type: 'tool'; toolCallId: string; toolName: string };

/** Correlation of the wrapped operation; the same ids as on `observe()` events. */
export interface FlueExecutionContext {
  instanceId?: string;
  agentName?: string;
  submissionId?: string;
  conversationId?: string;
  /** `'default'` for the main conversation, `task:…` inside a delegated task's child conversation. */
  session?: string;
  /** The harness name when a harness scratch conversation made the call. */
  harness?: string;
  /** The delegated task the call runs in. */
  taskId?: string;
  /** The model step that issued a tool call. */
  turnId?: string;
}

/**
 * Wraps one operation. Call `next()` once and return (or rethrow) what it settles with. What
 * `next()` resolves with, per operation: `agent` → `{ outcome: 'completed' | 'continued' }`
 * (`continued`: the attempt stopped at a turn boundary and resumes later) and rejects with the
 * error that fails the attempt; `model` → the provider's final assistant message
 * (`stopReason`, `usage`, `errorMessage`, …); `tool` → `{ isError, content, durationMs }`.
 * Results are shared with the runtime: read them, never change them.
 */
export type FlueExecutionInterceptor = <T>(op: FlueExecutionOperation, ctx: FlueExecutionContext, next: () => Promise<T>) => Promise<T>;

export interface FlueInstrumentation {
  /** Installing a second instrumentation with the same key throws, except under `flue dev` (it replaces: a reload ran the module again). */
  key?: string | symbol;
  interceptor?: FlueExecutionInterceptor;
  /** Registered like `observe()` for as long as the instrumentation is installed. */
  observe?: FlueObservationSubscriber;
  /** Called once, after uninstalling. */
  dispose?(): void | Promise<void>;
}

/** What `next()` of an `agent` operation resolves with. */
export interface FlueAttemptResult {
  outcome: 'completed' | 'continued';
}

/** What `next()` of a `tool` operation resolves with. */
export interface FlueToolCallResult {
  isError: boolean;
  content: string;
  durationMs?: number;
}

export class InstrumentationAlreadyInstalledError extends FlueError {
  constructor(key: string | symbol) {
    const name = typeof key === 'symbol' ? (key.description ?? 'symbol') : key;
    super('instrumentation_already_installed', {
      message: `[flue] instrument(): an instrumentation with key "${name}" is already installed.`,
      details:
        'Call the function instrument() returned to uninstall the installed one first. Only `flue dev` replaces an instrumentation with the same key (its reloads run your modules again).',
      meta: { key: name },
    });
    this.name = 'InstrumentationAlreadyInstalledError';
  }
}

interface Installed {
  instrumentation: FlueInstrumentation;
  uninstall: () => Promise<void>;
}

// Replaced, never mutated, so an operation keeps the chain it started with.
let chain: readonly Installed[] = [];
const byInstrumentation = new Map<FlueInstrumentation, Installed>();
const byKey = new Map<string | symbol, Installed>();

export function instrument(instrumentation: FlueInstrumentation): () => Promise<void> {
  if (typeof instrumentation !== 'object' || instrumentation === null) {
    throw new TypeError('[flue] instrument() expects an object with an `interceptor` and/or `observe` function.');
  }
  const { key, interceptor, observe: subscriber, dispose } = instrumentation;
  if (interceptor !== undefined && typeof interceptor !== 'function')
    throw new TypeError('[flue] instrument(): `interceptor` must be a function.');
  if (subscriber !== undefined && typeof subscriber !== 'function')
    throw new TypeError('[flue] instrument(): `observe` must be a function.');
  if (dispose !== undefined && typeof dispose !== 'function') throw new TypeError('[flue] instrument(): `dispose` must be a function.');
  if (key !== undefined && typeof key !== 'string' && typeof key !== 'symbol')
    throw new TypeError('[flue] instrument(): `key` must be a string or a symbol.');
  const already = byInstrumentation.get(instrumentation);
  if (already !== undefined) return already.uninstall;
  if (key !== undefined) {
    const holder = byKey.get(key);
    if (holder !== undefined) {
      // Under `flue dev` the module ran again after an edit: the previous copy goes away. Anywhere
      // else (a deployed build, a `start()` script, a test) a second install is a mistake.
      if (!isDevServer()) throw new InstrumentationAlreadyInstalledError(key);
      holder
        .uninstall()
        .catch((error: unknown) => console.error('[flue:instrument] Disposing the replaced instrumentation failed:', error));
    }
  }
  const unsubscribe = subscriber === undefined ? undefined : observe(subscriber);
  let disposed: Promise<void> | undefined;
  const entry: Installed = {
    instrumentation,
    uninstall: () => {
      disposed ??= (async () => {
        chain = chain.filter((installed) => installed !== entry);
        byInstrumentation.delete(instrumentation);
        if (key !== undefined && byKey.get(key) === entry) byKey.delete(key);
        unsubscribe?.();
        await instrumentation.dispose?.();
      })();
      return disposed;
    },
  };
  byInstrumentation.set(instrumentation, entry);
  if (key !== undefined) byKey.set(key, entry);
  if (interceptor !== undefined) chain = [...chain, entry];
  return entry.uninstall;
}

/**
 * Runs `work` inside the installed interceptors (registration order, outermost first). With none
 * installed it is one length check: `describe` is never called.
 */
export function intercept<T>(describe: () => [FlueExecutionOperation, FlueExecutionContext], work: () => Promise<T>): Promise<T> {
  const layers = chain;
  if (layers.length === 0) return work();
  const [op, ctx] = describe();
  return runLayer(layers, 0, op, ctx, work);
}

function runLayer<T>(
  layers: readonly Installed[],
  index: number,
  op: FlueExecutionOperation,
  ctx: FlueExecutionContext,
  work: () => Promise<T>,
): Promise<T> {
  if (index === layers.length) return work();
  const layer = layers[index]!;
  let started: Promise<T> | undefined;
  const run = () => (started ??= runLayer(layers, index + 1, op, ctx, work));
  const next = () => (started === undefined ? run() : Promise.reject(new Error('Flue execution next() called more than once.')));
  let returned: Promise<unknown>;
  try {
    returned = Promise.resolve(layer.instrumentation.interceptor!(op, ctx, next));
  } catch (error) {
    returned = Promise.reject(error);
  }
  return returned.then(
    () => {
      if (started === undefined) report(layer, new Error('the interceptor returned without calling next(); the operation ran after it'));
      return run();
    },
    (error: unknown) => {
      if (started === undefined) {
        report(layer, error);
        return run();
      }
      // Rethrowing the operation's own error is what an interceptor should do; anything else is its fault.
      return started.then(
        (value) => {
          report(layer, error);
          return value;
        },
        (failure: unknown) => {
          if (failure !== error) report(layer, error);
          throw failure;
        },
      );
    },
  );
}

function report(layer: Installed, error: unknown): void {
  const key = layer.instrumentation.key;
  const name =
    key === undefined ? 'an instrumentation' : `instrumentation "${typeof key === 'symbol' ? (key.description ?? 'symbol') : key}"`;
  console.error(`[flue:instrument] The interceptor of ${name} failed; the operation continues unaffected:`, error);
}
