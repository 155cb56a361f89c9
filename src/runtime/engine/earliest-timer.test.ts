import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EarliestTimer } from './earliest-timer.ts';

describe('EarliestTimer', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('moves earlier, never later, and fires once at the earliest time asked', () => {
    const fired: number[] = [];
    const timer = new EarliestTimer(() => fired.push(Date.now()));
    timer.armBy(100);
    timer.armBy(300);
    timer.armBy(50);
    vi.advanceTimersByTime(1_000);
    expect(fired).toEqual([50]);
  });

  it('holds no timer once disarmed, and arms again from scratch', () => {
    const fired: number[] = [];
    const timer = new EarliestTimer(() => fired.push(Date.now()));
    timer.armBy(100);
    timer.disarm();
    expect(vi.getTimerCount()).toBe(0);
    timer.armBy(200);
    vi.advanceTimersByTime(1_000);
    expect(fired).toEqual([200]);
  });

  it('a time past the longest timer delay fires early, for its owner to arm again', () => {
    const fired: number[] = [];
    const timer = new EarliestTimer(() => fired.push(Date.now()));
    timer.armBy(2 ** 31 + 5_000);
    vi.advanceTimersByTime(2 ** 31 - 1);
    expect(fired).toEqual([2 ** 31 - 1]);
  });
});
