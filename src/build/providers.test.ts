import { describe, expect, it } from 'vitest';
import { needsWorkersAI } from './providers.ts';

describe('needsWorkersAI', () => {
  const none = { inferred: [] as string[], configured: undefined, computedSites: 0, wranglerHasAI: false };

  it('stays out when nothing can name a cloudflare/ model', () => {
    expect(needsWorkersAI(none)).toBe(false);
    expect(needsWorkersAI({ ...none, inferred: ['anthropic'] })).toBe(false);
  });

  it('comes in for a literal cloudflare/ model id, a configured "cloudflare" or an AI binding in the wrangler config', () => {
    expect(needsWorkersAI({ ...none, inferred: ['anthropic', 'cloudflare'] })).toBe(true);
    expect(needsWorkersAI({ ...none, configured: ['cloudflare'] })).toBe(true);
    expect(needsWorkersAI({ ...none, wranglerHasAI: true })).toBe(true);
  });

  it('a model id computed at run time brings it in, unless the config lists the providers', () => {
    expect(needsWorkersAI({ ...none, computedSites: 1 })).toBe(true);
    expect(needsWorkersAI({ ...none, computedSites: 1, configured: ['openai'] })).toBe(false);
  });
});
