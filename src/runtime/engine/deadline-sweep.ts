/**
 * Many bounded waits under one timer. A remote reader's poll waits at most a bound (the Worker asks
 * again after it); a burst of sends parks hundreds of polls on one conversation, and a timer each
 * (armed, then cleared when the reply comes) is most of what a parked poll costs. Here the timer is
 * armed for the earliest deadline only; a wait that ends first just leaves its entry behind, and
 * the timer is cleared once no wait is left, so an idle host holds none.
 */
interface Wait {
  at: number;
  expire: (() => void) | undefined;
}

export class DeadlineSweep {
  private waits: Wait[] = [];
  private live = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private armedAt = Number.POSITIVE_INFINITY;
  private readonly now: () => number;

  constructor(now: () => number = () => Date.now()) {
    this.now = now;
  }

  /** Calls `expire` at `at` (ms on the `now` clock) unless the returned cancel runs first. */
  add(at: number, expire: () => void): () => void {
    const wait: Wait = { at, expire };
    this.waits.push(wait);
    this.live++;
    if (at < this.armedAt) this.arm(at);
    return () => {
      if (wait.expire === undefined) return;
      wait.expire = undefined;
      if (--this.live === 0) this.disarm();
    };
  }

  private arm(at: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.armedAt = at;
    this.timer = setTimeout(() => this.sweep(), Math.max(0, at - this.now()));
  }

  private disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.armedAt = Number.POSITIVE_INFINITY;
    this.waits = [];
  }

  /** Expires every wait that is due, drops the ended ones and arms for the earliest left. */
  private sweep(): void {
    this.timer = undefined;
    this.armedAt = Number.POSITIVE_INFINITY;
    const now = this.now();
    const due: (() => void)[] = [];
    const left: Wait[] = [];
    let next = Number.POSITIVE_INFINITY;
    for (const wait of this.waits) {
      const { expire } = wait;
      if (expire === undefined) continue;
      if (wait.at <= now) {
        // Ended before its callback runs: a cancel from inside it is a no-op.
        wait.expire = undefined;
        due.push(expire);
      } else {
        left.push(wait);
        next = Math.min(next, wait.at);
      }
    }
    this.waits = left;
    this.live = left.length;
    if (left.length > 0) this.arm(next);
    for (const expire of due) expire();
  }
}
