/**
 * How one attempt's work is ended: the engine (deadline, drain, abort requests), a stalled model
 * stream and a delegating task all end it through `abort(reason)`, and every part of the loop
 * watches the one signal. The reason is kept as given, so the engine can tell why the attempt
 * ended after it unwound.
 */
import { abortError } from '../common/errors.ts';

export class AttemptAbort {
  private readonly controller = new AbortController();
  /** Why the attempt was aborted; undefined while it runs. */
  reason: unknown;

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Ends the attempt's work; the first reason wins. */
  abort(reason: unknown): void {
    if (this.controller.signal.aborted) return;
    this.reason = reason;
    this.controller.abort(reason);
  }

  /** Throws why the attempt was aborted, if it was. */
  throwIfAborted(): void {
    if (this.controller.signal.aborted) throw this.reason ?? abortError();
  }

  /** What an aborted piece of work is rethrown as. */
  get error(): unknown {
    return this.reason ?? abortError();
  }
}
