/**
 * `step.do()` for durable tools. The engine owns storage: it looks
 * recorded steps up and appends new ones; this module owns the per-call rules — name checks,
 * JSON cloning, replay, and recording before `do` resolves.
 */
import type { ToolStep } from '../authoring/define-tool.ts';
import { MAX_STEP_VALUE_BYTES, checkSize, jsonSize } from '../common/limits.ts';
import { errorText } from './tool-runner.ts';
import { toJsonSnapshot } from '../common/values.ts';
import type { FlueLogger } from '../common/types.ts';

export interface ToolStepOptions {
  toolCallId: string;
  toolName: string;
  /** The value recorded for this call's step, if a previous execution completed it. */
  lookup(stepName: string): { found: true; value: unknown } | { found: false };
  /** Durably appends the step's value; `do` resolves only after this settles. */
  record(stepName: string, value: unknown): Promise<void> | void;
  /** The call's logger; step progress is reported on it. */
  log: FlueLogger;
}

export function createToolStep(options: ToolStepOptions): ToolStep {
  const { toolName, log } = options;
  // Names used in this execution. A replayed step counts too: the re-executed call walks the
  // same names again, once each.
  const used = new Set<string>();

  const clone = (stepName: string, value: unknown): unknown => {
    try {
      return toJsonSnapshot(value, `step "${stepName}"`);
    } catch (error) {
      throw new Error(
        `[flue] Tool "${toolName}" step "${stepName}" produced a value that is not JSON-serializable: ${errorText(error)}. Step values must be JSON data; keep them small and store large artifacts elsewhere.`,
        { cause: error },
      );
    }
  };

  return {
    async do<T>(name: string, fn: () => T | Promise<T>): Promise<T> {
      if (typeof name !== 'string' || name === '') {
        throw new Error(`[flue] Tool "${toolName}" called step.do() without a name; the name must be a non-empty string.`);
      }
      if (typeof fn !== 'function') {
        throw new Error(`[flue] Tool "${toolName}" called step.do("${name}") without a function to run.`);
      }
      if (used.has(name)) {
        throw new Error(
          `[flue] Tool "${toolName}" ran step.do("${name}") twice in one call. Step names identify work within a call; derive a distinct name for each step (e.g. \`seed:\${id}\`).`,
        );
      }
      used.add(name);

      const recorded = options.lookup(name);
      if (recorded.found) {
        const value = clone(name, recorded.value);
        log.info(`step "${name}" replayed`, { step: name });
        return value as T;
      }

      const value = clone(name, await fn());
      checkSize(
        `Tool "${toolName}" step "${name}" value`,
        jsonSize(value),
        MAX_STEP_VALUE_BYTES,
        'Keep step values small and store large artifacts elsewhere, e.g. in a sandbox file.',
      );
      // The record gets its own copy, so the caller mutating the returned value cannot change it.
      await options.record(name, clone(name, value));
      log.info(`step "${name}" completed`, { step: name });
      return value as T;
    },
  };
}
