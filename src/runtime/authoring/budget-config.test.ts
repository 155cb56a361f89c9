import { describe, expect, it } from 'vitest';
import { AgentDefinitionError } from '../common/errors.ts';
import { resolveBudget } from './budget-config.ts';

function agentWith(budget: unknown): object {
  return Object.assign(() => 'x', { agentName: 'Spender', budget });
}

function definitionError(budget: unknown): AgentDefinitionError {
  try {
    resolveBudget(agentWith(budget));
  } catch (error) {
    expect(error).toBeInstanceOf(AgentDefinitionError);
    return error as AgentDefinitionError;
  }
  throw new Error('expected resolveBudget to throw');
}

describe('the budget static', () => {
  it('is empty when absent, and kept as declared when valid', () => {
    expect(resolveBudget(() => 'x')).toEqual({});
    const budget = { perSubmission: { maxTokens: 1000 }, perConversation: { maxCost: 2.5, maxTokens: 50_000 } };
    expect(resolveBudget(agentWith(budget))).toEqual(budget);
  });

  it.each([
    [[], 'budget must be an object (got an array)'],
    [{ perTurn: {} }, 'budget has unknown key "perTurn" (allowed: perSubmission, perConversation)'],
    [{ perSubmission: 5 }, 'budget.perSubmission must be an object like { maxTokens, maxCost } (got 5)'],
    [{ perSubmission: { maxToken: 5 } }, 'budget.perSubmission has unknown key "maxToken" (allowed: maxTokens, maxCost)'],
    [{ perConversation: { maxCost: 0 } }, 'budget.perConversation.maxCost must be greater than 0 (got 0)'],
    [{ perConversation: { maxTokens: '100' } }, 'budget.perConversation.maxTokens must be a number (got "100")'],
  ])('%j is a typed definition error naming the field: %s', (budget, reason) => {
    const error = definitionError(budget);
    expect(error.type).toBe('agent_definition_invalid');
    expect(error.rule).toBe('budget');
    expect(error.meta).toEqual({ rule: 'budget', agent: 'Spender' });
    expect(error.message).toBe(`[flue] Agent "Spender" has an invalid budget static: ${reason}.`);
    expect(error.details).toContain('Fn.budget = {');
  });
});
