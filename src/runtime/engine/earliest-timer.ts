/**
 * One timer for the earliest of the times its owner needs: `armBy(at)` moves it earlier, never
 * later, and `fire` runs when it comes; the owner then arms it again for what is left. Owners watch
 * many times (an attempt's deadline and its streams' silences, a reader's parked polls) with one
 * timer instead of one each.
 */

/** The longest delay a timer takes (about 24.8 days): a later time fires early, and the owner re-arms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class EarliestTimer {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private armedAt = Number.POSITIVE_INFINITY;
  private readonly fire: () => void;

  constructor(fire: () => void) {
    this.fire = fire;
  }

  /** Fires no later than `at` (a wall-clock time in ms). */
  armBy(at: number): void {
    if (at >= this.armedAt) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.armedAt = at;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.armedAt = Number.POSITIVE_INFINITY;
        this.fire();
      },
      Math.min(MAX_TIMER_MS, Math.max(0, at - Date.now())),
    );
  }

  disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.armedAt = Number.POSITIVE_INFINITY;
  }
}
