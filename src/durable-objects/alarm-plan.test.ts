import { describe, expect, it } from 'vitest';
import { afterAlarmPass, onObjectStart } from './alarm-plan.ts';

const now = 1_000_000;
const backstop = now + 30_000;

describe('afterAlarmPass', () => {
  it('runs again at once after progress while work is open, whatever the timers', () => {
    expect(afterAlarmPass({ openWork: true, progressed: true, nextTimer: now + 5, now, backstop })).toEqual({ kind: 'set', at: now });
  });

  it('keeps the backstop when open work could not progress, unless a timer is due before it', () => {
    expect(afterAlarmPass({ openWork: true, progressed: false, nextTimer: undefined, now, backstop })).toEqual({ kind: 'keep' });
    expect(afterAlarmPass({ openWork: true, progressed: false, nextTimer: backstop + 1, now, backstop })).toEqual({ kind: 'keep' });
    expect(afterAlarmPass({ openWork: true, progressed: false, nextTimer: now + 10, now, backstop })).toEqual({
      kind: 'set',
      at: now + 10,
    });
  });

  it('arms the earliest timer once the queue is empty, and no alarm at all without one', () => {
    expect(afterAlarmPass({ openWork: false, progressed: true, nextTimer: now + 60_000, now, backstop })).toEqual({
      kind: 'set',
      at: now + 60_000,
    });
    expect(afterAlarmPass({ openWork: false, progressed: true, nextTimer: undefined, now, backstop })).toEqual({ kind: 'delete' });
  });

  it('never arms in the past: an overdue timer wakes at once', () => {
    expect(afterAlarmPass({ openWork: false, progressed: false, nextTimer: now - 500, now, backstop })).toEqual({ kind: 'set', at: now });
  });
});

describe('onObjectStart', () => {
  it('resumes open work now, earlier than an armed backstop, and leaves an alarm already due', () => {
    expect(onObjectStart({ openWork: true, nextTimer: undefined, armed: backstop, now })).toBe(now);
    expect(onObjectStart({ openWork: true, nextTimer: undefined, armed: null, now })).toBe(now);
    expect(onObjectStart({ openWork: true, nextTimer: undefined, armed: now - 1, now })).toBeUndefined();
  });

  it('makes sure a pending timer has an alarm no later than its due time', () => {
    expect(onObjectStart({ openWork: false, nextTimer: now + 5_000, armed: null, now })).toBe(now + 5_000);
    expect(onObjectStart({ openWork: false, nextTimer: now + 5_000, armed: now + 9_000, now })).toBe(now + 5_000);
    expect(onObjectStart({ openWork: false, nextTimer: now + 5_000, armed: now + 1_000, now })).toBeUndefined();
  });

  it('arms nothing for an idle conversation without timers', () => {
    expect(onObjectStart({ openWork: false, nextTimer: undefined, armed: null, now })).toBeUndefined();
  });
});
