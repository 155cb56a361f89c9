/**
 * `useTimer()` schedules and cancellations of one response that are not committed yet. Like
 * persistent state (pending-state.ts), they are written in the transaction of the next batch the
 * response commits, so a response retried after a crash either finds its timer recorded with the
 * step that scheduled it (and does not run that step again) or schedules it afresh: never twice,
 * never lost. A render reads the conversation's timers through them.
 */
import { hookUsageError } from '../common/definition-errors.ts';
import { newId } from '../common/ids.ts';
import { checkSize, utf8Size } from '../common/limits.ts';
import { textProblem } from '../common/input-limits.ts';
import { FRAMEWORK_TIMER_PREFIX } from '../common/timer-names.ts';
import type { ConversationKey } from '../store/conversation-key.ts';
import type { TimerRow } from '../store/sql-store.ts';
import type { ScheduledTimer, TimerOptions } from '../common/types.ts';

/** Bound on a timer's name (it becomes a signal attribute the model reads). */
export const MAX_TIMER_NAME_LENGTH = 128;
/** Bound on a timer's body: it is stored in one row and delivered as a signal body. */
export const MAX_TIMER_BODY_BYTES = 64 * 1024;
/** Pending timers one conversation may hold. */
export const MAX_TIMERS_PER_CONVERSATION = 1000;

/** One pending write per name: the timer as scheduled, or null for a cancellation. */
export type TimerWrite = readonly [name: string, timer: TimerRow | null];

export function checkTimerName(name: unknown, method: string, framework = false): string {
  if (typeof name !== 'string' || name === '') throw hookUsageError(`[flue] useTimer().${method}() name must be a non-empty string.`);
  // The name is a key of the timers table and an attribute the model reads: stored intact or refused.
  const problem = textProblem(name, MAX_TIMER_NAME_LENGTH);
  if (problem !== undefined) throw hookUsageError(`[flue] useTimer().${method}() name ${problem}.`);
  if (!framework && name.startsWith(FRAMEWORK_TIMER_PREFIX)) {
    throw hookUsageError(
      `[flue] useTimer().${method}() name "${name}" uses the "${FRAMEWORK_TIMER_PREFIX}" prefix, which is reserved for the framework.`,
    );
  }
  return name;
}

/** Validates `schedule()` options and resolves them to a timer row due at an absolute time. */
export function timerFromOptions(
  conversation: ConversationKey,
  name: string,
  options: TimerOptions,
  now: number,
  framework = false,
): TimerRow {
  checkTimerName(name, 'schedule', framework);
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw hookUsageError('[flue] useTimer().schedule() options must be an object with `at` or `inMs`.');
  }
  for (const key of Object.keys(options)) {
    if (key !== 'at' && key !== 'inMs' && key !== 'body') {
      throw hookUsageError(`[flue] useTimer().schedule() got an unknown option "${key}". Known options: at, inMs, body.`);
    }
  }
  const { at, inMs, body = '' } = options as { at?: unknown; inMs?: unknown; body?: unknown };
  if ((at === undefined) === (inMs === undefined)) {
    throw hookUsageError('[flue] useTimer().schedule() needs exactly one of `at` (a Date, epoch ms or ISO string) or `inMs`.');
  }
  let dueAt: number;
  if (inMs !== undefined) {
    if (typeof inMs !== 'number' || !Number.isFinite(inMs) || inMs < 0) {
      throw hookUsageError(`[flue] useTimer().schedule() inMs must be a finite number of milliseconds ≥ 0; got ${String(inMs)}.`);
    }
    dueAt = now + Math.ceil(inMs);
  } else {
    dueAt = at instanceof Date ? at.getTime() : typeof at === 'string' ? Date.parse(at) : typeof at === 'number' ? at : Number.NaN;
    if (!Number.isFinite(dueAt)) {
      throw hookUsageError(
        `[flue] useTimer().schedule() at must be a valid Date, epoch milliseconds or ISO 8601 string; got ${JSON.stringify(at)}.`,
      );
    }
    dueAt = Math.ceil(dueAt);
  }
  if (typeof body !== 'string') throw hookUsageError('[flue] useTimer().schedule() body must be a string.');
  checkSize(
    `useTimer().schedule("${name}") body`,
    utf8Size(body),
    MAX_TIMER_BODY_BYTES,
    'Keep the body small; store data in persistent state and name it in the body.',
  );
  return { conversation, name, id: newId('tmr'), dueAt, body };
}

/** The public shape of a pending timer. */
export function scheduledTimer(row: TimerRow): ScheduledTimer {
  return { name: row.name, id: row.id, dueAt: new Date(row.dueAt).toISOString(), body: row.body };
}

export class PendingTimers {
  private readonly writes = new Map<string, TimerRow | null>();
  /** The conversation's committed timers (read when the response looks at them). */
  private readonly committed: () => readonly TimerRow[];

  constructor(committed: () => readonly TimerRow[]) {
    this.committed = committed;
  }

  /** The timers as this response leaves them: committed ones overlaid with its pending writes, earliest first. */
  read(): TimerRow[] {
    const byName = new Map(this.committed().map((timer) => [timer.name, timer] as const));
    for (const [name, timer] of this.writes) {
      if (timer === null) byName.delete(name);
      else byName.set(name, timer);
    }
    return [...byName.values()].sort((a, b) => a.dueAt - b.dueAt || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  schedule(timer: TimerRow): void {
    const replacing = this.read().some((pending) => pending.name === timer.name);
    if (!replacing && this.read().length >= MAX_TIMERS_PER_CONVERSATION) {
      throw hookUsageError(
        `[flue] useTimer().schedule("${timer.name}") would exceed ${MAX_TIMERS_PER_CONVERSATION} pending timers in this conversation; cancel some first.`,
      );
    }
    this.writes.set(timer.name, timer);
  }

  /** True when a timer of that name was pending (as this response sees it). */
  cancel(name: string): boolean {
    const pending = this.read().some((timer) => timer.name === name);
    this.writes.set(name, null);
    return pending;
  }

  get isEmpty(): boolean {
    return this.writes.size === 0;
  }

  /** The pending writes, one per name; none are pending afterwards. */
  take(): TimerWrite[] {
    const taken = [...this.writes];
    this.writes.clear();
    return taken;
  }
}
