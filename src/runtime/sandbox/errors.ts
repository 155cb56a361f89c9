/** Sandbox-specific typed errors; they extend the runtime's `FlueError`. */
import { FlueError } from '../common/errors.ts';

/** An adapter cannot honour a verb or option; thrown before anything changes. */
export class SandboxOperationUnsupportedError extends FlueError {
  constructor(operation: string, provider: string, options?: unknown, message?: string) {
    super('sandbox_operation_unsupported', {
      message:
        message ??
        `The ${provider} sandbox does not support ${operation}${options === undefined ? '' : ` with options ${JSON.stringify(options)}`}.`,
      meta: { operation, provider, options },
    });
    this.name = 'SandboxOperationUnsupportedError';
  }
}

/** The adapter detected that the sandbox itself is gone; in-flight calls reject with this. */
export class SandboxDiedError extends FlueError {
  constructor(message = 'The sandbox is no longer running.', cause?: unknown) {
    super('sandbox_died', { message, cause });
    this.name = 'SandboxDiedError';
  }
}

/** The `AbortError` DOMException the contract demands, carrying the abort reason as `cause`. */
export function abortError(reason: unknown): Error {
  const error = new DOMException('The operation was aborted.', 'AbortError');
  Object.defineProperty(error, 'cause', { value: reason, configurable: true, writable: true });
  return error as unknown as Error;
}

/**
 * `type` codes with which a confining adapter (`local()`) refuses a path it will not touch. The
 * search tools probe their paths through `stat` and must surface these, whatever else fails.
 */
const PATH_REFUSAL_TYPES: ReadonlySet<string> = new Set(['sandbox_path_outside_root', 'sandbox_path_invalid']);

/** Matched by code, not class: the adapter may come from another copy of the package. */
export function isSandboxPathRefusal(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const type = (error as { type?: unknown }).type;
  return typeof type === 'string' && PATH_REFUSAL_TYPES.has(type);
}
