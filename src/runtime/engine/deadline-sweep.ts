/**
 * Many bounded waits under one timer. A remote reader's poll waits at most a bound (the Worker asks
 * again after it); a burst of sends parks hundreds of polls on one conversation, and a timer each
 * (armed, then cleared when the reply comes) is most of what a parked poll costs. Here the timer is
 * armed for the earliest deadline only; a wait that ends first just leaves its entry behind, and
 * the timer is cleared once no wait is left, so an idle host holds none.
 */
import { EarliestTimer } from './earliest-timer.ts';

interface Wait {
  at: number;
  expire: (() => void) | undefined;
}

export class DeadlineSweep {
  private waits: Wait[] = [];
  private live = 0;
  private readonly timer = new EarliestTimer(() => this.sweep());

  /** Calls `expire` at `at` (a wall-clock time in ms) unless the returned cancel runs first. */
  add(at: number, expire: () => void): () => void {
    const wait: Wait = { at, expire };
    this.waits.push(wait);
    this.live++;
    this.timer.armBy(at);
    return () => {
      if (wait.expire === undefined) return;
      wait.expire = undefined;
      if (--this.live === 0) this.disarm();
    };
  }

  private disarm(): void {
    this.timer.disarm();
    this.waits = [];
  }

  /** Expires every wait that is due, drops the ended ones and arms for the earliest left. */
  private sweep(): void {
    const now = Date.now();
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
    if (left.length > 0) this.timer.armBy(next);
    for (const expire of due) expire();
  }
}
