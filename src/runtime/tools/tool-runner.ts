/**
 * Executes one tool call through the pipeline of tools.md §4–§7: parse arguments, run under the
 * abort signal and `timeoutMs`, resolve the return value to an envelope, validate and snapshot the
 * output. `runToolCall` (model turns) turns every failure into an error outcome; `invokeTool`
 * (standalone use) lets the same failures propagate.
 */
import * as v from 'valibot';
import {
  PayloadTooLargeError,
  ToolInputValidationError,
  ToolOutputSerializationError,
  ToolOutputValidationError,
  ToolTimeoutError,
  abortError,
} from '../common/errors.ts';
import type { ValidationIssue } from '../common/errors.ts';
import type { ToolOutcome } from '../store/records.ts';
import { noteContentIsOutputJson } from '../store/record-packing.ts';
import { MAX_TOOL_OUTPUT_BYTES, checkSize, utf8Size } from '../common/limits.ts';
import type { ToolDefinition, ToolOutput, ToolStep } from '../authoring/define-tool.ts';
import type { FlueHarness, FlueLogger } from '../common/types.ts';
import { bareKind, isPlainObject, toJsonSnapshot } from '../common/values.ts';

export interface ToolCallEnvironment {
  toolCallId: string;
  /** Host abort (submission abort / shutdown). */
  signal: AbortSignal;
  log: FlueLogger;
  /**
   * Called lazily, and only for `harness: true` tools, with the call's scope: a signal that aborts
   * when the call settles, times out or is aborted, which closes the harness.
   */
  harness?: (scope: AbortSignal) => FlueHarness;
  /** Supplied by the engine for `durable: true` tools. */
  step?: ToolStep;
  /** Called just before `run` (arguments validated); a throw there fails the call like `run`'s. */
  onRun?: () => void;
}

export type { ToolOutcome } from '../store/records.ts';

/** The canonical result of a successful call. */
export interface ToolCallResult<O = unknown> {
  output: O;
  terminate: boolean;
}

const ABANDONED_SUFFIX = ' The tool execution could not be confirmed cancelled and may still be running.';

/** Runs one model tool call; never throws — every failure becomes an error outcome. */
export async function runToolCall(tool: ToolDefinition, args: unknown, env: ToolCallEnvironment): Promise<ToolOutcome> {
  const started = Date.now();
  const base = { toolCallId: env.toolCallId, toolName: tool.name };
  try {
    const result = await executeToolCall(tool, args, env);
    const content = result.output === undefined ? 'null' : JSON.stringify(result.output);
    // Oversized output becomes an error the model can act on; the output itself is never kept.
    checkSize(
      `Tool "${tool.name}" output`,
      content.length * 3 <= MAX_TOOL_OUTPUT_BYTES ? content.length : utf8Size(content),
      MAX_TOOL_OUTPUT_BYTES,
      'Return less: summarize, page through the data, or write it to a sandbox file and return its path.',
    );
    const outcome: ToolOutcome = {
      ...base,
      isError: false,
      content,
      durationMs: Date.now() - started,
    };
    if (result.output !== undefined) outcome.output = result.output;
    if (result.terminate) outcome.terminate = true;
    if (result.output !== undefined) noteContentIsOutputJson(outcome);
    return outcome;
  } catch (error) {
    const outcome: ToolOutcome = {
      ...base,
      isError: true,
      // A size refusal carries what to do about it; the model needs that advice too.
      content: error instanceof PayloadTooLargeError ? `${error.message} ${error.details}` : errorText(error),
      durationMs: Date.now() - started,
      error,
    };
    // A timeout is the tool's own failure; anything failing while the host aborted is the abort.
    if (env.signal.aborted && !(error instanceof ToolTimeoutError)) outcome.aborted = true;
    return outcome;
  }
}

/**
 * The same pipeline for standalone use (tests, scripts): errors propagate. Missing environment
 * pieces are synthesized — a unique call id, a no-op logger, a signal that never aborts.
 */
export async function invokeTool<T extends ToolDefinition>(
  tool: T,
  args?: unknown,
  env: Partial<ToolCallEnvironment> = {},
): Promise<ToolCallResult<ToolOutput<T>>> {
  const result = await executeToolCall(tool, args, {
    toolCallId: env.toolCallId ?? `call_${crypto.randomUUID()}`,
    signal: env.signal ?? new AbortController().signal,
    log: env.log ?? NOOP_LOGGER,
    harness: env.harness,
    step: env.step,
  });
  return result as ToolCallResult<ToolOutput<T>>;
}

const NOOP_LOGGER: FlueLogger = Object.freeze({ info() {}, warn() {}, error() {} });

async function executeToolCall(tool: ToolDefinition, args: unknown, env: ToolCallEnvironment): Promise<ToolCallResult> {
  const label = `Tool "${tool.name}"`;
  if (env.signal.aborted) throw abortError(`${label} was aborted before it started.`);

  // 1. Arguments. Without `input` the model's arguments are ignored entirely.
  let data: unknown;
  if (tool.input !== undefined) {
    const parsed = await v.safeParseAsync(tool.input, args ?? {});
    if (!parsed.success) throw new ToolInputValidationError(tool.name, toIssues(parsed.issues));
    data = parsed.output;
  }
  if (tool.harness === true && env.harness === undefined) {
    throw new Error(
      `[flue] ${label} declares harness: true and can only run inside an agent session, where the runtime supplies its harness.`,
    );
  }
  if (tool.durable === true && env.step === undefined) {
    throw new Error(`[flue] ${label} declares durable: true and needs a step. Outside an agent session, pass your own step stub.`);
  }

  // 2. Run, raced against the host signal and the tool's deadline. A harness is scoped to the
  // call: it closes with the call's own signal (timeout, abort) and at the latest when it settles,
  // so a run that outlives its call, or a stashed harness, cannot keep spending model calls. Only
  // a `harness: true` tool is handed one, so only its scope is closed (an abort reason is an error
  // with its stack: not built for every call).
  const scoped = tool.harness === true;
  const scope = new AbortController();
  let returned: unknown;
  try {
    returned = await raceToolRun(
      (signal) => {
        if (scoped) {
          if (signal.aborted) scope.abort(signal.reason);
          else signal.addEventListener('abort', () => scope.abort(signal.reason), { once: true });
        }
        env.onRun?.();
        return tool.run(buildContext(tool, data, signal, scope.signal, env) as never);
      },
      {
        label,
        signal: env.signal,
        timeoutMs: tool.timeoutMs,
        timeoutError: () => new ToolTimeoutError(tool.name, tool.timeoutMs ?? 0),
      },
    );
  } finally {
    if (scoped) scope.abort(abortError(`${label} settled; its harness is closed.`));
  }

  // 3. Envelope.
  const envelope = toEnvelope(tool, returned);

  // 4. Output schema.
  let output = envelope.output;
  if (tool.output !== undefined) {
    if (returned === undefined) {
      throw new ToolOutputSerializationError(tool.name, 'run returned nothing, but the tool declares an output schema.');
    }
    const parsed = await v.safeParseAsync(tool.output, output);
    if (!parsed.success) throw new ToolOutputValidationError(tool.name, toIssues(parsed.issues));
    if (parsed.output === undefined) {
      throw new ToolOutputSerializationError(tool.name, 'the output schema produced undefined.');
    }
    output = parsed.output;
  }

  // 5. JSON snapshot.
  if (output !== undefined) {
    try {
      output = toJsonSnapshot(output, 'output');
    } catch (error) {
      throw new ToolOutputSerializationError(tool.name, errorText(error), error);
    }
  }
  return { output, terminate: envelope.terminate === true };
}

function buildContext(tool: ToolDefinition, data: unknown, signal: AbortSignal, scope: AbortSignal, env: ToolCallEnvironment): object {
  const ctx: Record<string, unknown> = { toolCallId: env.toolCallId, signal, log: env.log };
  if (tool.input !== undefined) ctx.data = data;
  if (tool.harness === true) {
    const factory = env.harness as (scope: AbortSignal) => FlueHarness;
    let harness: FlueHarness | undefined;
    // A getter, so the harness is only materialized if the tool touches it.
    Object.defineProperty(ctx, 'harness', { enumerable: true, get: () => (harness ??= factory(scope)) });
  }
  if (tool.durable === true) ctx.step = env.step;
  return Object.freeze(ctx);
}

// ── Return-value rules (tools.md §5) ──────────────────────────────────────────────────────────

function toEnvelope(tool: ToolDefinition, returned: unknown): { output?: unknown; terminate?: boolean } {
  const label = `[flue] Tool "${tool.name}"`;
  if (returned === undefined) return {};
  if (typeof returned === 'string') return { output: returned };
  if (isPlainObject(returned)) {
    for (const key of Reflect.ownKeys(returned)) {
      if (key !== 'output' && key !== 'terminate') {
        throw new Error(
          `${label} returned an object with the key "${String(key)}", but run must return an envelope { output?, terminate? }. To return the object itself, wrap it as { output: <value> }: \`return { output: <value> }\`.`,
        );
      }
    }
    const envelope = returned as { output?: unknown; terminate?: unknown };
    if (envelope.terminate !== undefined && typeof envelope.terminate !== 'boolean') {
      throw new Error(
        `${label} returned a non-boolean "terminate" (${bareKind(envelope.terminate)}); use terminate: true or leave it out.`,
      );
    }
    return envelope as { output?: unknown; terminate?: boolean };
  }
  throw new Error(
    `${label} returned a bare ${bareKind(returned)}; run must return a string, nothing, or an envelope { output?, terminate? }. To send the value to the model, wrap the value: \`return { output: <value> }\`.`,
  );
}

// ── Abort and timeout racing (tools.md §6) ────────────────────────────────────────────────────

export interface RaceToolRunOptions {
  /** Names the work in abort messages, e.g. `Tool "lookup"`. */
  label: string;
  /** The host signal. */
  signal: AbortSignal;
  timeoutMs?: number;
  /** The timeout's error; also becomes the work's signal reason. */
  timeoutError: () => unknown;
}

// setTimeout fires at once for delays past 2^31-1 ms; a deadline that far out means no deadline.
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Runs `start` with its own signal, linked to the host signal. Settles with the work's own
 * settlement unless the deadline passes first (abort the work with the timeout error, reject with
 * it) or the host aborts and the work does not settle within one macrotask (reject with an
 * `AbortError`). A host abort disarms the deadline, so it always surfaces as an abort. Late
 * settlements are observed and discarded, never left unhandled.
 */
export function raceToolRun<T>(start: (signal: AbortSignal) => T | PromiseLike<T>, options: RaceToolRunOptions): Promise<T> {
  const host = options.signal;
  if (host.aborted) return Promise.reject(abortError(`${options.label} was aborted before it started.`));
  const controller = new AbortController();
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    let deadline: ReturnType<typeof setTimeout> | undefined;
    let grace: ReturnType<typeof setTimeout> | undefined;
    const settle = (finish: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      clearTimeout(grace);
      host.removeEventListener('abort', onHostAbort);
      finish();
    };
    const onHostAbort = (): void => {
      if (settled) return;
      clearTimeout(deadline);
      controller.abort(host.reason);
      grace = setTimeout(() => {
        settle(() => reject(abortError(`${options.label} was aborted.${ABANDONED_SUFFIX}`)));
      }, 0);
    };
    host.addEventListener('abort', onHostAbort, { once: true });
    const ms = options.timeoutMs;
    if (ms !== undefined && ms <= MAX_TIMER_MS) {
      deadline = setTimeout(() => {
        if (settled || host.aborted) return;
        const error = options.timeoutError();
        settle(() => reject(error));
        controller.abort(error);
      }, ms);
    }
    let work: Promise<T>;
    try {
      work = Promise.resolve(start(controller.signal));
    } catch (error) {
      work = Promise.reject(error);
    }
    work.then(
      (value) => settle(() => resolve(value)),
      (error: unknown) => settle(() => reject(error)),
    );
  });
}

// ── Helpers ───────────────────────────────────────────────────────────────────────────────────

function toIssues(issues: readonly v.BaseIssue<unknown>[]): ValidationIssue[] {
  return issues.map((issue) => {
    const mapped: ValidationIssue = { message: issue.message };
    if (issue.path !== undefined && issue.path.length > 0) {
      mapped.path = issue.path.map((item) => {
        const key: unknown = item.key;
        return typeof key === 'string' || typeof key === 'number' || typeof key === 'symbol' ? key : String(key);
      });
    }
    return mapped;
  });
}

/** The model-facing text of a failure: the error's message. */
export function errorText(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string') {
    return (error as { message: string }).message;
  }
  if (error === undefined || error === null) return 'The tool failed without an error message.';
  return String(error);
}
