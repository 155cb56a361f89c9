/**
 * Names with this prefix belong to timers the framework schedules (an approval's expiry): an
 * agent cannot schedule or cancel them, and `useTimer().pending` does not list them.
 */
export const FRAMEWORK_TIMER_PREFIX = 'flue:';

/** The timer that expires an approval request of `useApprovalGate()`. */
export function approvalTimerName(approvalId: string): string {
  return `${FRAMEWORK_TIMER_PREFIX}approval:${approvalId}`;
}
