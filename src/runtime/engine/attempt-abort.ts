/**
 * How one attempt's work is ended: the engine (deadline, drain, abort requests), a stalled model
 * stream and a delegating task all end it through `abort(reason)`, and every part of the loop
 * watches the one signal. The reason is kept as given, so the engine can tell why the attempt
 * ended after it unwound.
 *
 * The attempt's deadline and its model streams' silences are watched by one timer: armed when the
 * engine starts watching, it fires at the deadline or after at most one idle window, checks both
 * and re-arms for what is left. A turn's model steps arm nothing of their own (each event only
 * notes its time), so a turn costs the host two timer calls however many steps it streams.
 */
import { abortError } from '../common/errors.ts';
import { EarliestTimer } from './earliest-timer.ts';
import { AttemptStalled } from './run-signals.ts';

/** A model stream being watched: abandoned once quiet for `idleMs`. */
export interface WatchedStream {
  /** An event arrived. */
  heard(): void;
  /** The stream ended (or failed): its silence no longer matters. */
  end(): void;
}

export class AttemptAbort {
  private readonly controller = new AbortController();
  /** Why the attempt was aborted; undefined while it runs. */
  reason: unknown;
  private deadline: { at: number; idleMs: number; reason: () => unknown } | undefined;
  private stream: { idleMs: number; lastEvent: number } | undefined;
  private readonly timer = new EarliestTimer(() => this.check());

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

  /**
   * Aborts the attempt with `reason()` at `at` (a wall-clock time), checking at least every
   * `idleMs` (the model idle window) so the streams it will run need no timer; `unwatch()` once
   * the attempt is over.
   */
  watch(at: number, idleMs: number, reason: () => unknown): void {
    this.deadline = { at, idleMs, reason };
    this.timer.armBy(Math.min(at, Date.now() + idleMs));
  }

  unwatch(): void {
    this.deadline = undefined;
    this.stream = undefined;
    this.timer.disarm();
  }

  /** Watches one model stream: quiet for `idleMs`, the attempt is abandoned (`AttemptStalled`). */
  watchStream(idleMs: number): WatchedStream {
    const stream = { idleMs, lastEvent: Date.now() };
    this.stream = stream;
    this.timer.armBy(stream.lastEvent + idleMs);
    return {
      heard: () => {
        stream.lastEvent = Date.now();
      },
      end: () => {
        if (this.stream === stream) this.stream = undefined;
        // Nothing else to watch: no timer outlives the stream.
        if (this.deadline === undefined) this.timer.disarm();
      },
    };
  }

  private check(): void {
    if (this.controller.signal.aborted) return;
    const now = Date.now();
    const { deadline, stream } = this;
    if (deadline !== undefined && now >= deadline.at) return this.abort(deadline.reason());
    if (stream !== undefined && now - stream.lastEvent >= stream.idleMs) return this.abort(new AttemptStalled(stream.idleMs));
    let next = Number.POSITIVE_INFINITY;
    if (deadline !== undefined) next = Math.min(deadline.at, now + deadline.idleMs);
    if (stream !== undefined) next = Math.min(next, stream.lastEvent + stream.idleMs);
    if (next !== Number.POSITIVE_INFINITY) this.timer.armBy(next);
  }
}
