import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeadlineSweep } from './deadline-sweep.ts';

describe('DeadlineSweep', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('expires each wait at its deadline under one timer, and never one that was cancelled', () => {
    const sweep = new DeadlineSweep();
    const expired: string[] = [];
    const setTimeoutSpy = vi.spyOn(globalThis, 'setTimeout');
    const cancels = ['a', 'b', 'c', 'd'].map((name, i) => sweep.add(100 + i * 10, () => expired.push(name)));
    expect(setTimeoutSpy).toHaveBeenCalledTimes(1);
    cancels[1]!();
    vi.advanceTimersByTime(100);
    expect(expired).toEqual(['a']);
    vi.advanceTimersByTime(30);
    expect(expired).toEqual(['a', 'c', 'd']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('arms earlier for an earlier deadline, and holds no timer once every wait has ended', () => {
    const sweep = new DeadlineSweep();
    const expired: string[] = [];
    const late = sweep.add(1_000, () => expired.push('late'));
    const early = sweep.add(50, () => expired.push('early'));
    vi.advanceTimersByTime(50);
    expect(expired).toEqual(['early']);
    early();
    late();
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(2_000);
    expect(expired).toEqual(['early']);
  });

  it('a wait cancelled from inside an expiry does not disturb the others', () => {
    const sweep = new DeadlineSweep();
    const expired: string[] = [];
    let cancelFirst = () => {};
    cancelFirst = sweep.add(10, () => {
      expired.push('first');
      cancelFirst();
    });
    sweep.add(20, () => expired.push('second'));
    vi.advanceTimersByTime(10);
    vi.advanceTimersByTime(10);
    expect(expired).toEqual(['first', 'second']);
  });
});
