/**
 * `usePersistentState` writes of one response that are not committed yet. A render reads through
 * them; the next tool batch or hook seam commits them with the records that explain them
 * (response-writer.ts).
 */
import { jsonNormalize } from '../common/values.ts';
import { deepEqualJson } from '../common/ids.ts';
import { MAX_STATE_VALUE_BYTES, checkSize, jsonSize } from '../common/limits.ts';

export class PendingState {
  private readonly writes = new Map<string, unknown>();
  /** The committed state of the conversation (read when a name has no pending write). */
  private readonly committed: () => ReadonlyMap<string, unknown>;

  constructor(committed: () => ReadonlyMap<string, unknown>) {
    this.committed = committed;
  }

  read(name: string): { found: true; value: unknown } | { found: false } {
    if (this.writes.has(name)) return { found: true, value: this.writes.get(name) };
    const committed = this.committed();
    return committed.has(name) ? { found: true, value: committed.get(name) } : { found: false };
  }

  /** A setter call: `next` is a value or an updater of the current value (or `defaultValue`). */
  set(name: string, next: unknown, defaultValue: unknown): void {
    const read = this.read(name);
    const current = read.found ? read.value : defaultValue;
    const value = typeof next === 'function' ? (next as (previous: unknown) => unknown)(structuredClone(current)) : next;
    if (value === undefined)
      throw new Error(`[flue] usePersistentState("${name}") cannot be set to undefined; persistent state has no unset.`);
    const normalized = jsonNormalize(value, `usePersistentState("${name}")`);
    checkSize(
      `usePersistentState("${name}") value`,
      jsonSize(normalized),
      MAX_STATE_VALUE_BYTES,
      'Keep persistent state small; store large data elsewhere, e.g. in a sandbox file.',
    );
    if (deepEqualJson(normalized, current)) return;
    this.writes.set(name, normalized);
  }

  get isEmpty(): boolean {
    return this.writes.size === 0;
  }

  /** The pending writes, in the order they were first made; none are pending afterwards. */
  take(): [string, unknown][] {
    const taken = [...this.writes];
    this.writes.clear();
    return taken;
  }
}
