/**
 * The Node process's one wake-up for durable timers: a single timeout armed for the earliest due
 * timer across every conversation (re-armed whenever the timers change), so waiting timers cost
 * one timer handle however many there are. It does not keep the process alive: a timer that
 * comes due while no process runs fires on the next `start()`.
 */

/** The longest delay `setTimeout` takes (about 24.8 days); a later wake is re-armed in steps. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

export class TimerWake {
  private readonly fire: () => void;
  private timeout: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;

  /** `fire` delivers the due timers; it reports the next due time back through `arm()`. */
  constructor(fire: () => void) {
    this.fire = fire;
  }

  /** Wakes at `at` (epoch ms; at once when past), replacing any earlier arming; undefined disarms. */
  arm(at: number | undefined): void {
    clearTimeout(this.timeout);
    this.timeout = undefined;
    if (at === undefined || this.stopped) return;
    const delay = Math.max(0, at - Date.now());
    this.timeout =
      delay > MAX_TIMEOUT_MS
        ? setTimeout(() => this.arm(at), MAX_TIMEOUT_MS)
        : setTimeout(() => {
            this.timeout = undefined;
            try {
              this.fire();
            } catch (error) {
              // Never thrown out of a timeout (that would end the process): the next start() retries.
              console.error('[flue] could not deliver due timers:', error);
            }
          }, delay);
    this.timeout.unref?.();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timeout);
    this.timeout = undefined;
  }
}
