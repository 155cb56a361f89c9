/**
 * `PromptUsage` accounting: the public subset of pi's `Usage`, summed
 * field-wise across every model call an operation makes.
 */
import type { Usage } from '@earendil-works/pi-ai';
import type { PromptUsage } from '../common/types.ts';

export function emptyUsage(): PromptUsage {
  return {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
}

/**
 * Copies only the public fields: `cacheWrite1h`, `reasoning` and `cost.totalFromProvider` are pi
 * details we do not promise. Missing usage (or a missing field) contributes zero.
 */
export function usageFromPi(usage: Usage | undefined): PromptUsage {
  if (!usage) return emptyUsage();
  const cost = usage.cost;
  return {
    input: usage.input ?? 0,
    output: usage.output ?? 0,
    cacheRead: usage.cacheRead ?? 0,
    cacheWrite: usage.cacheWrite ?? 0,
    totalTokens: usage.totalTokens ?? 0,
    cost: {
      input: cost?.input ?? 0,
      output: cost?.output ?? 0,
      cacheRead: cost?.cacheRead ?? 0,
      cacheWrite: cost?.cacheWrite ?? 0,
      total: cost?.total ?? 0,
    },
  };
}

/** Field-wise sum, cost included. Returns a new object; neither argument is modified. */
export function addUsage(a: PromptUsage, b: PromptUsage): PromptUsage {
  return {
    input: a.input + b.input,
    output: a.output + b.output,
    cacheRead: a.cacheRead + b.cacheRead,
    cacheWrite: a.cacheWrite + b.cacheWrite,
    totalTokens: a.totalTokens + b.totalTokens,
    cost: {
      input: a.cost.input + b.cost.input,
      output: a.cost.output + b.cost.output,
      cacheRead: a.cost.cacheRead + b.cost.cacheRead,
      cacheWrite: a.cost.cacheWrite + b.cost.cacheWrite,
      total: a.cost.total + b.cost.total,
    },
  };
}
