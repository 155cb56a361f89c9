import { afterEach, describe, expect, it } from 'vitest';
import { devModeFromEnv, devModeSoFar, isDevMode, setDevMode } from './dev-mode.ts';

afterEach(() => setDevMode(undefined));

describe('dev mode decided on first use', () => {
  it('a function decision runs once, at the first isDevMode(), and its answer is kept', () => {
    let calls = 0;
    setDevMode(() => {
      calls++;
      return true;
    });
    expect(calls).toBe(0);
    expect([isDevMode(), isDevMode(), calls]).toEqual([true, true, 1]);
  });

  it('FLUE_DEV decides without the fallback; without it the fallback stands', () => {
    const fallback = () => true;
    expect(devModeFromEnv({ FLUE_DEV: '0' }, fallback)).toBe(false);
    expect(devModeFromEnv({}, fallback)).toBe(fallback);
  });

  it('devModeSoFar keeps a decision already made, else reads NODE_ENV when asked', () => {
    setDevMode(true);
    expect(devModeSoFar()).toBe(true);
    setDevMode(undefined);
    const previous = process.env.NODE_ENV;
    try {
      process.env.NODE_ENV = 'production';
      setDevMode(devModeSoFar());
      // Read when first asked, not when it was set.
      process.env.NODE_ENV = 'development';
      expect(isDevMode()).toBe(true);
    } finally {
      if (previous === undefined) delete process.env.NODE_ENV;
      else process.env.NODE_ENV = previous;
    }
  });
});
