/**
 * The `durability` agent static (agents-and-hooks.md §4). It is read without running the agent,
 * because it must apply while the function is not running (including after a crash in render).
 */
import * as v from 'valibot';
import { AgentDefinitionError } from '../common/errors.ts';
import { describeValue } from '../common/values.ts';

export interface DurabilityConfig {
  /** Total attempts including the first. */
  maxAttempts?: number;
  /** Wall clock from the first attempt's start. */
  timeoutMs?: number;
  /**
   * How long a model stream may deliver nothing (no first byte, no next event) before its attempt
   * is abandoned, so a provider call that hangs cannot hold an attempt forever; the submission then
   * runs again as a new attempt, counted against `maxAttempts`. Default 300 000 (five minutes).
   */
  modelIdleTimeoutMs?: number;
}

export interface ResolvedDurability {
  maxAttempts: number;
  timeoutMs: number;
  modelIdleTimeoutMs: number;
}

export const DURABILITY_DEFAULT_MAX_ATTEMPTS = 10;
export const DURABILITY_DEFAULT_TIMEOUT_MS = 3_600_000;
export const DURABILITY_DEFAULT_MODEL_IDLE_TIMEOUT_MS = 300_000;

const DEFAULTS: ResolvedDurability = {
  maxAttempts: DURABILITY_DEFAULT_MAX_ATTEMPTS,
  timeoutMs: DURABILITY_DEFAULT_TIMEOUT_MS,
  modelIdleTimeoutMs: DURABILITY_DEFAULT_MODEL_IDLE_TIMEOUT_MS,
};

const positiveInteger = v.pipe(
  v.number('must be a number'),
  v.integer('must be a positive integer'),
  v.minValue(1, 'must be a positive integer'),
);

// strictObject: a misspelt key (`maxAttempt`) must fail loudly rather than silently use a default.
const durabilitySchema = v.strictObject({
  maxAttempts: v.optional(positiveInteger),
  timeoutMs: v.optional(positiveInteger),
  modelIdleTimeoutMs: v.optional(positiveInteger),
});

/**
 * The agent's effective budget; the static may be any expression, so it is checked at runtime.
 * Takes `object` rather than a shape so a plain function with no statics is accepted too.
 */
export function resolveDurability(agent: object): ResolvedDurability {
  const config = (agent as { durability?: unknown }).durability;
  if (config === undefined) return { ...DEFAULTS };
  // Arrays pass valibot's object check, but a durability array is never intended.
  const result = Array.isArray(config) ? undefined : v.safeParse(durabilitySchema, config);
  if (result?.success) {
    return {
      maxAttempts: result.output.maxAttempts ?? DEFAULTS.maxAttempts,
      timeoutMs: result.output.timeoutMs ?? DEFAULTS.timeoutMs,
      modelIdleTimeoutMs: result.output.modelIdleTimeoutMs ?? DEFAULTS.modelIdleTimeoutMs,
    };
  }
  const issue = result?.issues[0];
  const key = issue?.path?.[0]?.key;
  let reason: string;
  if (issue === undefined || key === undefined) {
    reason = `durability must be an object (got ${describeValue(config)})`;
  } else if (issue.type === 'strict_object') {
    reason = `durability has unknown key "${String(key)}" (allowed: maxAttempts, timeoutMs, modelIdleTimeoutMs)`;
  } else {
    reason = `durability.${String(key)} ${issue.message} (got ${describeValue(issue.input)})`;
  }
  const label = agentLabel(agent);
  throw new AgentDefinitionError('durability', `[flue] Agent ${label} has an invalid durability static: ${reason}.`, {
    ...(label === '(anonymous)' ? {} : { agent: label.slice(1, -1) }),
    details: 'Fix the static (e.g. Fn.durability = { maxAttempts: 5, timeoutMs: 600_000 }) or remove it to use the defaults.',
  });
}

function agentLabel(agent: object): string {
  const named = agent as { agentName?: unknown; name?: unknown };
  const name = typeof named.agentName === 'string' ? named.agentName : named.name;
  return typeof name === 'string' && name !== '' ? `"${name}"` : '(anonymous)';
}
