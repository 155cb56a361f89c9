import { describe, expect, it } from 'vitest';
import { AgentDefinitionError } from '../common/errors.ts';
import {
  DURABILITY_DEFAULT_MAX_ATTEMPTS,
  DURABILITY_DEFAULT_MODEL_IDLE_TIMEOUT_MS,
  DURABILITY_DEFAULT_TIMEOUT_MS,
  resolveDurability,
} from './durability-config.ts';

function agentWith(durability: unknown) {
  function Worker() {}
  return Object.assign(Worker, { durability });
}

describe('resolveDurability', () => {
  it('defaults to 10 attempts, one hour and a five-minute model idle window', () => {
    expect(DURABILITY_DEFAULT_MAX_ATTEMPTS).toBe(10);
    expect(DURABILITY_DEFAULT_TIMEOUT_MS).toBe(3_600_000);
    expect(DURABILITY_DEFAULT_MODEL_IDLE_TIMEOUT_MS).toBe(300_000);
    function Plain() {}
    expect(resolveDurability(Plain)).toEqual({ maxAttempts: 10, timeoutMs: 3_600_000, modelIdleTimeoutMs: 300_000 });
    expect(resolveDurability(agentWith(undefined))).toEqual({ maxAttempts: 10, timeoutMs: 3_600_000, modelIdleTimeoutMs: 300_000 });
    expect(resolveDurability(agentWith({}))).toEqual({ maxAttempts: 10, timeoutMs: 3_600_000, modelIdleTimeoutMs: 300_000 });
  });

  it('takes each field independently', () => {
    expect(resolveDurability(agentWith({ maxAttempts: 3 }))).toEqual({ maxAttempts: 3, timeoutMs: 3_600_000, modelIdleTimeoutMs: 300_000 });
    expect(resolveDurability(agentWith({ timeoutMs: 500 }))).toEqual({ maxAttempts: 10, timeoutMs: 500, modelIdleTimeoutMs: 300_000 });
    expect(resolveDurability(agentWith({ modelIdleTimeoutMs: 250 }))).toEqual({
      maxAttempts: 10,
      timeoutMs: 3_600_000,
      modelIdleTimeoutMs: 250,
    });
    expect(resolveDurability(agentWith({ maxAttempts: 1, timeoutMs: 1 }))).toEqual({
      maxAttempts: 1,
      timeoutMs: 1,
      modelIdleTimeoutMs: 300_000,
    });
  });

  it('treats an explicit undefined field as absent', () => {
    expect(resolveDurability(agentWith({ maxAttempts: undefined }))).toEqual({
      maxAttempts: 10,
      timeoutMs: 3_600_000,
      modelIdleTimeoutMs: 300_000,
    });
  });

  it.each([null, 5, 'fast', true, [], [1]])('rejects a non-object durability %j', (value) => {
    expect(() => resolveDurability(agentWith(value))).toThrowError(
      /^\[flue\] Agent "Worker" has an invalid durability static: durability must be an object/,
    );
  });

  it('rejects unknown keys', () => {
    expect(() => resolveDurability(agentWith({ maxAttempt: 3 }))).toThrowError(/^\[flue\] .*durability has unknown key "maxAttempt"/);
    expect(() => resolveDurability(agentWith({ maxAttempts: 3, retries: 1 }))).toThrowError(/unknown key "retries"/);
  });

  it.each([
    ['maxAttempts', 0],
    ['maxAttempts', -1],
    ['maxAttempts', 1.5],
    ['maxAttempts', '3'],
    ['maxAttempts', Number.NaN],
    ['maxAttempts', null],
    ['timeoutMs', 0],
    ['timeoutMs', 2.5],
    ['timeoutMs', Number.POSITIVE_INFINITY],
    ['timeoutMs', '1000'],
    ['modelIdleTimeoutMs', 0],
    ['modelIdleTimeoutMs', 0.5],
  ])('rejects %s = %j', (field, value) => {
    let thrown: unknown;
    try {
      resolveDurability(agentWith({ [field]: value }));
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(AgentDefinitionError);
    expect((thrown as AgentDefinitionError).type).toBe('agent_definition_invalid');
    expect((thrown as AgentDefinitionError).rule).toBe('durability');
    expect((thrown as Error).message).toMatch(
      new RegExp(`^\\[flue\\] Agent "Worker" has an invalid durability static: durability\\.${field} must be a (positive integer|number)`),
    );
  });

  it('names the agent by its agentName static when set', () => {
    const agent = Object.assign(agentWith({ maxAttempts: 0 }), { agentName: 'worker-x' });
    expect(() => resolveDurability(agent)).toThrowError(/Agent "worker-x"/);
  });
});
