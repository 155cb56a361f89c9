/**
 * The harness handed to `harness: true` tools and event hooks: `prompt()` runs model work in a
 * scratch conversation of its own (never shown to clients), `compact()` summarizes that scratch
 * conversation, `sandbox` is the agent's environment. Here is what is built synchronously (the
 * harness, its operations' handles and their order); the model work itself is harness-scratch.ts,
 * which the first operation loads (lazy-parts.ts).
 */
import type { Message, ToolCall } from '@earendil-works/pi-ai';
import type * as v from 'valibot';
import { HarnessClosedError, SessionBusyError, abortError } from '../common/errors.ts';
import type { RenderResult } from '../authoring/render.ts';
import type { FlueExecutionContext } from '../common/instrumentation.ts';
import type { AgentSandbox } from './agent-sandbox.ts';
import type {
  CallHandle,
  FlueHarness,
  FlueLogger,
  PromptOptions,
  PromptResponse,
  PromptResultResponse,
  PromptUsage,
  Sandbox,
  ThinkingLevel,
} from '../common/types.ts';
import { harnessScratchPart } from './lazy-parts.ts';

export interface HarnessDeps {
  name: string;
  /** The agent's current render: system prompt and tools the scratch conversation runs with. */
  render(): RenderResult;
  modelSpec: string;
  thinkingLevel: ThinkingLevel | undefined;
  /** Where the owning response runs, for interceptors (instrumentation.ts). */
  executionContext?: () => FlueExecutionContext;
  /**
   * The harness's scope: it aborts when what the harness was handed to (a tool call, a hook, the
   * response) ends. In-flight operations are aborted with it and later ones are refused.
   */
  signal: AbortSignal;
  log(toolCallId: string, toolName: string): FlueLogger;
  /** Told each model call's usage as it returns (failed calls too): what the ledger and budgets count. */
  spend?(usage: PromptUsage): void;
  /** How deep this harness sits in nested harness/task delegation (the root harness is 0). */
  depth: number;
  /** The agent's environment: its live sandbox and built-in tools, when it declared one. */
  environment?: AgentSandbox;
  /**
   * Runs one `task` call of this scratch conversation as a recorded child conversation retained on the
   * conversation that owns the harness (task-run.ts).
   */
  task(
    call: ToolCall,
    site: { harness: string; depth: number; subagents: RenderResult['subagents']; signal: AbortSignal },
  ): Promise<{ isError: boolean; content: string }>;
}

export function createHarness(deps: HarnessDeps): FlueHarness {
  const scratch: Message[] = [];
  /**
   * The operation that owns the scratch conversation until its work has unwound, and a promise
   * that settles (never rejects) when it has.
   */
  let owner: { signal: AbortSignal; unwound: Promise<void> } | undefined;

  /**
   * Runs one operation under its own signal, which follows the harness's scope and any caller
   * signal. An abort rejects at once with a standard AbortError whose `cause` is the abort reason,
   * even if the work is slow to unwind (a shell stops at its next statement boundary). The scratch
   * conversation stays owned until it has: an operation started meanwhile waits for that instead
   * of failing as concurrent, because its caller has already seen the aborted one end. Only an
   * operation that overlaps one still live is refused with SessionBusyError.
   */
  function operate<T>(
    operation: 'prompt' | 'compact',
    sources: readonly (AbortSignal | undefined)[],
    run: (signal: AbortSignal) => Promise<T>,
  ): { promise: Promise<T>; controller: AbortController } {
    const controller = new AbortController();
    if (deps.signal.aborted) {
      return { promise: Promise.reject(new HarnessClosedError(operation, deps.signal.reason)), controller };
    }
    const unlink: (() => void)[] = [];
    for (const source of [deps.signal, ...sources]) {
      if (source === undefined) continue;
      if (source.aborted) {
        controller.abort(source.reason);
        break;
      }
      const follow = () => controller.abort(source.reason);
      source.addEventListener('abort', follow, { once: true });
      unlink.push(() => source.removeEventListener('abort', follow));
    }
    const promise = new Promise<T>((resolve, reject) => {
      const signal = controller.signal;
      const aborted = () => abortError(`harness.${operation}() was aborted.`, signal.reason);
      const onAbort = () => reject(aborted());
      const cleanup = () => {
        signal.removeEventListener('abort', onAbort);
        for (const remove of unlink) remove();
      };
      const previous = owner;
      if (signal.aborted || (previous !== undefined && !previous.signal.aborted)) {
        cleanup();
        return reject(signal.aborted ? aborted() : new SessionBusyError());
      }
      signal.addEventListener('abort', onAbort, { once: true });
      const mine = { signal, unwound: Promise.resolve() };
      owner = mine;
      // Free the conversation before settling, so a caller can chain the next operation at once.
      const release = () => {
        if (owner === mine) owner = undefined;
        cleanup();
      };
      const execute = (): Promise<void> =>
        run(signal).then(
          (value) => {
            release();
            resolve(value);
          },
          (error: unknown) => {
            release();
            reject(signal.aborted ? aborted() : error);
          },
        );
      if (previous === undefined) {
        mine.unwound = execute();
        return;
      }
      // Aborted while waiting: onAbort has rejected it; it never touches the conversation.
      mine.unwound = previous.unwound.then(() => (signal.aborted ? release() : execute()));
    });
    return { promise, controller };
  }

  function prompt(
    text: string,
    options: PromptOptions<v.GenericSchema | undefined> = {},
  ): CallHandle<PromptResponse | PromptResultResponse<unknown>> {
    const { promise, controller } = operate('prompt', [options.signal], async (signal) =>
      (await harnessScratchPart()).runPrompt({ deps, scratch, text, options, signal }),
    );
    return Object.assign(promise, {
      signal: controller.signal,
      abort(reason?: unknown) {
        controller.abort(reason);
      },
    }) as CallHandle<PromptResponse | PromptResultResponse<unknown>>;
  }

  return {
    name: deps.name,
    prompt: prompt as FlueHarness['prompt'],
    compact() {
      return operate('compact', [], async (signal) => {
        await (await harnessScratchPart()).compactScratch(deps, scratch, signal);
      }).promise;
    },
    get sandbox(): Sandbox {
      const sandbox = deps.environment?.current;
      if (sandbox === undefined) {
        throw new Error('[flue] This agent has no sandbox. Declare one with useSandbox() to use shell and filesystem operations.');
      }
      return sandbox;
    },
  };
}
