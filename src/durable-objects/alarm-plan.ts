/**
 * What a Durable Object does with its one alarm, which every submission and every timer of its
 * conversation share. Work runs in the instance that woke it; the alarm is its backstop while work
 * is open, else it waits for the earliest timer, else the last backstop lapses and there is none
 * at all (an idle conversation without timers costs nothing past that one invocation). Functions of
 * what the object knows.
 */

/** An alarm call to make: set it for `at`, delete it, or keep the one that is armed. */
export type AlarmStep = { kind: 'set'; at: number } | { kind: 'delete' } | { kind: 'keep' };

/**
 * How far ahead the backstop is armed while work is open: if the instance running it dies (a
 * crash, an eviction, a deploy), the alarm resumes the work by then.
 */
export const BACKSTOP_MS = 30_000;

/**
 * The alarm an instance knows it armed: a time, none (`null`), or `undefined` when it has not
 * read it (only where nothing it must keep can be armed: no open work and no pending timer).
 */
export type ArmedAlarm = number | null | undefined;

/**
 * When work is woken (an admission, a due timer, an abort): the backstop to arm before the work
 * runs, or undefined when an alarm at least as early is armed already (a burst of admissions
 * arms it once, and an earlier timer's alarm serves as the backstop too).
 */
export function backstopFor(wake: { armed: ArmedAlarm; now: number }): number | undefined {
  return unlessArmedBy(wake.now + BACKSTOP_MS, wake.armed);
}

/** `at`, unless an alarm at least as early is armed already (undefined: keep that one). */
export function unlessArmedBy(at: number, armed: ArmedAlarm): number | undefined {
  return armed === null || armed === undefined || armed > at ? at : undefined;
}

/**
 * When this instance has no conversation left to drive. Work still open could not progress here
 * (its agent is not deployed, its queue failed): the backstop retries it, or a timer due before
 * the backstop. No open work: the earliest pending timer, else the backstop is left to lapse
 * (`lapses`), else no alarm at all.
 */
export function afterWork(state: { openWork: boolean; nextTimer: number | undefined; armed: ArmedAlarm; now: number }): AlarmStep {
  const { openWork, nextTimer, armed, now } = state;
  const timer = nextTimer === undefined ? undefined : Math.max(now, nextTimer);
  if (openWork) {
    const backstop = backstopFor({ armed, now }) ?? (armed as number);
    if (timer !== undefined && timer < backstop) return { kind: 'set', at: timer };
    return armed === backstop ? { kind: 'keep' } : { kind: 'set', at: backstop };
  }
  if (timer === undefined) return armed === null || lapses(armed, now) ? { kind: 'keep' } : { kind: 'delete' };
  return armed === timer ? { kind: 'keep' } : { kind: 'set', at: timer };
}

/**
 * Whether an armed alarm is a backstop that fires within BACKSTOP_MS, so it is kept when the
 * queue empties instead of deleted. Arming costs a row written and deleting costs nothing, but a
 * kept backstop is the next admission's (`backstopFor` keeps an alarm at least as early): a
 * conversation whose turns follow each other within that window arms one backstop for all of
 * them, not one a turn. Its price is one alarm invocation when it lapses, which finds nothing to
 * do and leaves no alarm (docs/design/cloudflare.md §6.2 weighs the two).
 */
function lapses(armed: ArmedAlarm, now: number): boolean {
  return typeof armed === 'number' && armed <= now + BACKSTOP_MS;
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
  return unlessArmedBy(wanted, armed) === undefined ? undefined : Math.max(now, wanted);
}
