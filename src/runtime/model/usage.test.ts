import { describe, expect, it } from 'vitest';
import type { Usage } from '@earendil-works/pi-ai';
import { addUsage, emptyUsage, usageFromPi } from './usage.ts';

const piUsage: Usage = {
  input: 100,
  output: 20,
  cacheRead: 30,
  cacheWrite: 5,
  cacheWrite1h: 5,
  reasoning: 7,
  totalTokens: 155,
  cost: { input: 0.1, output: 0.2, cacheRead: 0.03, cacheWrite: 0.05, total: 0.38, totalFromProvider: true },
};

describe('usageFromPi', () => {
  it('copies the public fields and drops pi-only ones', () => {
    expect(usageFromPi(piUsage)).toStrictEqual({
      input: 100,
      output: 20,
      cacheRead: 30,
      cacheWrite: 5,
      totalTokens: 155,
      cost: { input: 0.1, output: 0.2, cacheRead: 0.03, cacheWrite: 0.05, total: 0.38 },
    });
  });

  it('treats missing usage as zero', () => {
    expect(usageFromPi(undefined)).toStrictEqual(emptyUsage());
  });

  it('does not share the cost object with the source', () => {
    const converted = usageFromPi(piUsage);
    converted.cost.total = 99;
    expect(piUsage.cost.total).toBe(0.38);
  });
});

describe('emptyUsage', () => {
  it('is all zeros and fresh on each call', () => {
    const a = emptyUsage();
    expect(a).toStrictEqual({
      input: 0,
      output: 0,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 0,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    });
    a.cost.total = 1;
    expect(emptyUsage().cost.total).toBe(0);
  });
});

describe('addUsage', () => {
  it('sums every field including cost', () => {
    const a = usageFromPi(piUsage);
    const b = {
      input: 1,
      output: 2,
      cacheRead: 3,
      cacheWrite: 4,
      totalTokens: 10,
      cost: { input: 1, output: 2, cacheRead: 3, cacheWrite: 4, total: 10 },
    };
    const sum = addUsage(a, b);
    expect(sum).toStrictEqual({
      input: 101,
      output: 22,
      cacheRead: 33,
      cacheWrite: 9,
      totalTokens: 165,
      cost: { input: 1.1, output: 2.2, cacheRead: 3.03, cacheWrite: 4.05, total: 10.38 },
    });
    expect(a.input).toBe(100);
    expect(b.cost.total).toBe(10);
  });

  it('has the empty usage as identity', () => {
    const a = usageFromPi(piUsage);
    expect(addUsage(emptyUsage(), a)).toStrictEqual(a);
  });
});
