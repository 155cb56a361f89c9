/**
 * A host's waker: "drive this conversation's queue soon". Wakes of one task coalesce: a burst of
 * admissions schedules one task, which drives every conversation woken meanwhile, once each, in
 * the order they were first woken. The task runs after the code that woke them (`schedule`: Node's
 * `setImmediate`, a zero timeout in a Durable Object), so each queue starts after the admissions
 * that woke it committed, and an admission answers its receipt before the work it woke begins.
 */
export function coalescedWake<K>(run: (key: K) => void, schedule: (task: () => void) => void): (key: K) => void {
  const woken = new Set<K>();
  return (key) => {
    if (woken.size === 0) {
      schedule(() => {
        const keys = [...woken];
        woken.clear();
        for (const woke of keys) run(woke);
      });
    }
    woken.add(key);
  };
}
