/**
 * How streamed content is committed while it streams (the turn stream's deltas, a running tool's
 * progress lines): in batches, one row per flush.
 *
 * While a reader follows the conversation's log as it grows (the updates view, `read()` with
 * `onEvent`), the first flush comes after 250 ms, then at doubling intervals up to 2 s: short
 * streams cost one or two rows, a long one about a row every two seconds, and a crash loses at
 * most that much. While nobody follows, what streams is committed every 30 s and when it ends: a
 * reply read only when it is done costs no rows for its deltas, and a crash loses at most 30 s of
 * it (the model call runs again from what was committed). A reader that arrives gets what is held
 * at once, as the followed schedule would have committed it.
 */
const DELTA_FLUSH_FIRST_MS = 250;
const DELTA_FLUSH_MAX_MS = 2_000;
export const UNFOLLOWED_FLUSH_MS = 30_000;

/** What a stream's schedule asks of the conversation it writes to. */
export interface Following {
  /** Whether a reader follows the log now. */
  readonly followed: boolean;
  /** Calls `arrived` each time a reader starts following; returns what stops that. */
  onFollow(arrived: () => void): () => void;
}

/**
 * One stream's flush timing. The stream calls `held()` after adding content, `flushed()` whenever
 * it committed and `end()` when it stops; the schedule calls `flush` once held content is due (at
 * once, or from its one timer, or when a reader arrives), never after `stopped()` says the run is
 * over (the run's exit commits what is left).
 */
export class FlushSchedule {
  readonly #flush: () => void;
  readonly #following: Following;
  readonly #stopped: () => boolean;
  #last = Date.now();
  #interval = DELTA_FLUSH_FIRST_MS;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #timerAt = 0;
  /** While content waits for a flush: what stops an arriving reader from reconsidering it. */
  #unfollow: (() => void) | undefined;

  constructor(flush: () => void, following: Following, stopped: () => boolean) {
    this.#flush = flush;
    this.#following = following;
    this.#stopped = stopped;
  }

  /** Content was added: commits it now if it is due, else makes sure one timer will when it is. */
  held(): void {
    // An armed timer flushes what is held, and a reader's arrival reconsiders it: most of a
    // stream's events end here.
    if (this.#timer === undefined) this.#consider();
  }

  #consider(): void {
    this.#unfollow ??= this.#following.onFollow(() => this.#consider());
    const at = this.#last + (this.#following.followed ? this.#interval : Math.max(this.#interval, UNFOLLOWED_FLUSH_MS));
    // The timer armed for then (or sooner) flushes it: no clock read for each of a stream's events.
    if (this.#timer !== undefined && this.#timerAt <= at) return;
    const now = Date.now();
    if (now >= at) {
      if (!this.#stopped()) this.#flush();
      return;
    }
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (!this.#stopped()) this.#flush();
    }, at - now);
  }

  /** The stream committed what it held: the next interval doubles. */
  flushed(): void {
    this.#release();
    this.#last = Date.now();
    this.#interval = Math.min(this.#interval * 2, DELTA_FLUSH_MAX_MS);
  }

  /** The stream ended: no timer outlives it, and arriving readers no longer reach it. */
  end(): void {
    this.#release();
  }

  #release(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#unfollow?.();
    this.#unfollow = undefined;
  }
}
