/**
 * Sessions kept by the receipt they answered until a read takes them, and let go once unread for
 * `unreadMs`. The letting go rides on the next `keep` instead of a timer per session: a burst of
 * sends would otherwise arm (and later fire) one timer each. A session nobody reads and no later
 * admission sweeps goes with its request anyway.
 */
interface Kept<S> {
  session: S | undefined;
  keptAt: number;
}

export class SessionShelf<K extends object, S> {
  private readonly byKey = new WeakMap<K, Kept<S>>();
  /** Every kept session, oldest first; a taken one stays (emptied) until it is old enough to drop. */
  private readonly inOrder: Kept<S>[] = [];
  /** How many of `inOrder`'s first entries are let go already: cut off together, not one splice per expiry. */
  private dropped = 0;
  private readonly unreadMs: number;
  private readonly letGo: (session: S) => void;

  constructor(unreadMs: number, letGo: (session: S) => void) {
    this.unreadMs = unreadMs;
    this.letGo = letGo;
  }

  keep(key: K, session: S, now: number): void {
    while (this.dropped < this.inOrder.length && now - this.inOrder[this.dropped]!.keptAt >= this.unreadMs) {
      const old = this.inOrder[this.dropped++]!;
      if (old.session !== undefined) this.letGo(old.session);
      old.session = undefined;
    }
    // Under steady traffic a few expire at each keep: cutting them off then would move every later
    // entry each time. Once they are half the array, one splice moves at most as many as it drops.
    if (this.dropped > 0 && this.dropped * 2 >= this.inOrder.length) {
      this.inOrder.splice(0, this.dropped);
      this.dropped = 0;
    }
    const kept = { session, keptAt: now };
    this.byKey.set(key, kept);
    this.inOrder.push(kept);
  }

  /** The session kept for `key`, once: a second take, or a take after it was let go, finds none. */
  take(key: K): S | undefined {
    const kept = this.byKey.get(key);
    if (kept === undefined) return undefined;
    this.byKey.delete(key);
    const { session } = kept;
    kept.session = undefined;
    return session;
  }
}
