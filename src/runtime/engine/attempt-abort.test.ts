import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AttemptAbort } from './attempt-abort.ts';
import { AttemptStalled } from './run-signals.ts';

describe('AttemptAbort watch', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('aborts at the deadline with its reason, checking every idle window meanwhile', () => {
    const attempt = new AttemptAbort();
    attempt.watch(1_000, 300, () => 'timed out');
    vi.advanceTimersByTime(999);
    expect(attempt.signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(attempt.reason).toBe('timed out');
    expect(vi.getTimerCount()).toBe(0);
  });

  it("a watched attempt's streams arm no timer: a live stream runs on, a quiet one is abandoned after its window", () => {
    const attempt = new AttemptAbort();
    attempt.watch(60_000, 100, () => 'timed out');
    const setTimeoutSpy = vi.spyOn(globalThis, 'setTimeout');
    const live = attempt.watchStream(100);
    for (let i = 0; i < 100; i++) {
      vi.advanceTimersByTime(6);
      live.heard();
    }
    live.end();
    const quiet = attempt.watchStream(100);
    expect(attempt.signal.aborted).toBe(false);
    vi.advanceTimersByTime(99);
    expect(attempt.signal.aborted).toBe(false);
    vi.advanceTimersByTime(101);
    expect(attempt.reason).toBeInstanceOf(AttemptStalled);
    expect((attempt.reason as AttemptStalled).idleMs).toBe(100);
    quiet.end();
    // Only the watch's own re-arms (about one per window over 800 ms), none per stream or per event.
    expect(setTimeoutSpy.mock.calls.length).toBeLessThanOrEqual(12);
    attempt.unwatch();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('an unwatched attempt watches its stream alone and holds no timer once the stream ended', () => {
    const attempt = new AttemptAbort();
    const stream = attempt.watchStream(100);
    vi.advanceTimersByTime(50);
    stream.heard();
    stream.end();
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(1_000);
    expect(attempt.signal.aborted).toBe(false);
    attempt.watchStream(100);
    vi.advanceTimersByTime(100);
    expect(attempt.reason).toBeInstanceOf(AttemptStalled);
  });
});
