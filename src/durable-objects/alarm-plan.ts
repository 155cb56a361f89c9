/**
 * What a Durable Object does with its one alarm, which every submission and every timer of its
 * conversation share: due now while work is open, else at the earliest timer, else none at all
 * (an idle conversation without timers costs nothing). Functions of what the object knows.
 */

/** An alarm call to make: set it for `at`, delete it, or keep the one that is armed. */
export type AlarmStep = { kind: 'set'; at: number } | { kind: 'delete' } | { kind: 'keep' };

/**
 * At the end of an alarm pass. `backstop` is the alarm the pass armed before its work (it stays
 * when open work could not progress); `nextTimer` the earliest pending timer, if any.
 */
export function afterAlarmPass(pass: {
  openWork: boolean;
  progressed: boolean;
  nextTimer: number | undefined;
  now: number;
  backstop: number;
}): AlarmStep {
  const { openWork, progressed, nextTimer, now, backstop } = pass;
  if (openWork) {
    if (progressed) return { kind: 'set', at: now };
    // The head cannot progress now (e.g. its agent is not deployed): the backstop retries, unless
    // a timer comes due before it.
    return nextTimer !== undefined && nextTimer < backstop ? { kind: 'set', at: Math.max(now, nextTimer) } : { kind: 'keep' };
  }
  return nextTimer === undefined ? { kind: 'delete' } : { kind: 'set', at: Math.max(now, nextTimer) };
}

/**
 * When a new instance of the object starts (an eviction, a crash, a deploy): open work resumes
 * now, and a pending timer must have an alarm at or before its due time. Undefined: leave the
 * armed alarm as it is.
 */
export function onObjectStart(start: {
  openWork: boolean;
  nextTimer: number | undefined;
  armed: number | null;
  now: number;
}): number | undefined {
  const { openWork, nextTimer, armed, now } = start;
  const wanted = openWork ? now : nextTimer;
  if (wanted === undefined) return undefined;
  return armed === null || armed > wanted ? Math.max(now, wanted) : undefined;
}
