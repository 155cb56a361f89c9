import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FlushSchedule, type Following, UNFOLLOWED_FLUSH_MS } from './flush-policy.ts';

/** A conversation's readers as the schedule sees them: `arrive()` starts following, its result stops. */
function readers() {
  let followers = 0;
  const holders = new Set<() => void>();
  const following: Following = {
    get followed() {
      return followers > 0;
    },
    onFollow(arrived) {
      holders.add(arrived);
      return () => holders.delete(arrived);
    },
  };
  return {
    following,
    holders,
    arrive(): () => void {
      followers++;
      for (const arrived of [...holders]) arrived();
      return () => void followers--;
    },
  };
}

/** A stream on the schedule: `add()` holds content, `flushes` counts the commits (at their times). */
function stream(following: Following, stopped = () => false) {
  const flushes: number[] = [];
  let held = 0;
  const start = Date.now();
  const schedule: FlushSchedule = new FlushSchedule(
    () => {
      schedule.flushed();
      if (held === 0) return;
      held = 0;
      flushes.push(Date.now() - start);
    },
    following,
    stopped,
  );
  return {
    schedule,
    flushes,
    add() {
      held++;
      schedule.held();
    },
  };
}

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe('FlushSchedule', () => {
  it('while a reader follows: the first flush after 250 ms, then at doubling intervals up to 2 s', () => {
    const r = readers();
    r.arrive();
    const s = stream(r.following);
    // Content arrives every 50 ms for 8 s.
    for (let t = 0; t < 8_000; t += 50) {
      s.add();
      vi.advanceTimersByTime(50);
    }
    expect(s.flushes).toEqual([250, 750, 1750, 3750, 5750, 7750]);
  });

  it('while nobody follows: one flush every 30 s, and none for a stream shorter than that', () => {
    const r = readers();
    const s = stream(r.following);
    for (let t = 0; t < 70_000; t += 100) {
      s.add();
      vi.advanceTimersByTime(100);
    }
    expect(s.flushes).toEqual([UNFOLLOWED_FLUSH_MS, 2 * UNFOLLOWED_FLUSH_MS]);
    s.schedule.end();
    const short = stream(r.following);
    short.add();
    vi.advanceTimersByTime(UNFOLLOWED_FLUSH_MS - 1);
    expect(short.flushes).toEqual([]);
    short.schedule.end();
    vi.runAllTimers();
    expect(short.flushes).toEqual([]);
  });

  it('a reader arriving gets what is held at once, then the followed schedule; leaving restores the slow one', () => {
    const r = readers();
    const s = stream(r.following);
    s.add();
    vi.advanceTimersByTime(1_000);
    expect(s.flushes).toEqual([]);
    const leave = r.arrive();
    expect(s.flushes).toEqual([1_000]);
    // Followed: the next is due 500 ms after the last flush.
    s.add();
    vi.advanceTimersByTime(500);
    expect(s.flushes).toEqual([1_000, 1_500]);
    leave();
    s.add();
    vi.advanceTimersByTime(UNFOLLOWED_FLUSH_MS - 1);
    expect(s.flushes).toEqual([1_000, 1_500]);
    vi.advanceTimersByTime(1);
    expect(s.flushes).toEqual([1_000, 1_500, 1_500 + UNFOLLOWED_FLUSH_MS]);
  });

  it('a reader arriving before content is due brings its timer forward, without flushing early', () => {
    const r = readers();
    const s = stream(r.following);
    s.add();
    vi.advanceTimersByTime(100);
    r.arrive();
    expect(s.flushes).toEqual([]);
    vi.advanceTimersByTime(150);
    expect(s.flushes).toEqual([250]);
    // Nothing held: an arriving reader neither flushes nor registers anything.
    expect(r.holders.size).toBe(0);
    r.arrive();
    expect(s.flushes).toEqual([250]);
  });

  it('never flushes once the run stopped, and no timer or registration outlives end()', () => {
    const r = readers();
    let stopped = false;
    const s = stream(r.following, () => stopped);
    s.add();
    stopped = true;
    r.arrive();
    vi.advanceTimersByTime(UNFOLLOWED_FLUSH_MS);
    expect(s.flushes).toEqual([]);
    s.schedule.end();
    expect(r.holders.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });
});
