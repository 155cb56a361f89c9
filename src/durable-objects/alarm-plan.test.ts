import { describe, expect, it } from 'vitest';
import { BACKSTOP_MS, afterWork, backstopFor, onObjectStart } from './alarm-plan.ts';

const now = 1_000_000;
const backstop = now + BACKSTOP_MS;

describe('backstopFor', () => {
  it('arms the backstop when no alarm is armed, or when the instance has not read it', () => {
    expect(backstopFor({ armed: null, now })).toBe(backstop);
    expect(backstopFor({ armed: undefined, now })).toBe(backstop);
  });

  it('keeps an alarm at least as early: a burst of wakes arms once, an earlier timer serves as the backstop', () => {
    expect(backstopFor({ armed: now + 5_000, now })).toBeUndefined();
    expect(backstopFor({ armed: backstop, now })).toBeUndefined();
    expect(backstopFor({ armed: now - 10, now })).toBeUndefined();
  });

  it('brings a later alarm (a distant timer) forward to the backstop', () => {
    expect(backstopFor({ armed: now + 3_600_000, now })).toBe(backstop);
  });
});

describe('afterWork', () => {
  it('keeps the backstop for open work that could not progress, unless a timer is due before it', () => {
    expect(afterWork({ openWork: true, nextTimer: undefined, armed: now + 20_000, now })).toEqual({ kind: 'keep' });
    expect(afterWork({ openWork: true, nextTimer: now + 25_000, armed: now + 20_000, now })).toEqual({ kind: 'keep' });
    expect(afterWork({ openWork: true, nextTimer: now + 10, armed: now + 20_000, now })).toEqual({ kind: 'set', at: now + 10 });
  });

  it('arms a backstop for open work when none is armed or the armed one is later', () => {
    expect(afterWork({ openWork: true, nextTimer: undefined, armed: null, now })).toEqual({ kind: 'set', at: backstop });
    expect(afterWork({ openWork: true, nextTimer: undefined, armed: now + 3_600_000, now })).toEqual({ kind: 'set', at: backstop });
  });

  it('arms the earliest timer once the queue is empty', () => {
    expect(afterWork({ openWork: false, nextTimer: now + 60_000, armed: backstop, now })).toEqual({ kind: 'set', at: now + 60_000 });
    expect(afterWork({ openWork: false, nextTimer: now + 60_000, armed: now + 60_000, now })).toEqual({ kind: 'keep' });
  });

  it('leaves a backstop to lapse once the queue is empty without timers: the next admission arms none', () => {
    expect(afterWork({ openWork: false, nextTimer: undefined, armed: backstop, now })).toEqual({ kind: 'keep' });
    expect(afterWork({ openWork: false, nextTimer: undefined, armed: now + 1_000, now })).toEqual({ kind: 'keep' });
    expect(afterWork({ openWork: false, nextTimer: undefined, armed: now - 10, now })).toEqual({ kind: 'keep' });
    expect(backstopFor({ armed: now + 1_000, now: now + 500 })).toBeUndefined();
  });

  it('deletes any other alarm once nothing is pending, and arms none', () => {
    // A timer that was cancelled left its alarm hours away; an instance that never read the alarm does not know.
    expect(afterWork({ openWork: false, nextTimer: undefined, armed: now + 3_600_000, now })).toEqual({ kind: 'delete' });
    expect(afterWork({ openWork: false, nextTimer: undefined, armed: backstop + 1, now })).toEqual({ kind: 'delete' });
    expect(afterWork({ openWork: false, nextTimer: undefined, armed: undefined, now })).toEqual({ kind: 'delete' });
    expect(afterWork({ openWork: false, nextTimer: undefined, armed: null, now })).toEqual({ kind: 'keep' });
  });

  it('never arms in the past: an overdue timer wakes at once', () => {
    expect(afterWork({ openWork: false, nextTimer: now - 500, armed: null, now })).toEqual({ kind: 'set', at: now });
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
