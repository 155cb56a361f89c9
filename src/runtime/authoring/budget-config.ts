/**
 * The `budget` agent static: spending limits read without running the agent, like `durability`,
 * because admission and every attempt must apply them before any render.
 */
import * as v from 'valibot';
import { AgentDefinitionError } from '../common/errors.ts';
import { describeValue } from '../common/values.ts';

/** Limits on one scope's spending; an absent limit does not bound it. */
export interface BudgetLimit {
  /** Tokens, as `PromptUsage.totalTokens` counts them (input, output and cache), summed. */
  maxTokens?: number;
  /** Cost in the model's price units, as `PromptUsage.cost.total` counts it, summed. */
  maxCost?: number;
}

export interface BudgetConfig {
  /** One submission's response: every model call of every attempt, compaction and delegated tasks included. */
  perSubmission?: BudgetLimit;
  /** The whole conversation: every settled submission plus the response in progress. */
  perConversation?: BudgetLimit;
}

const positiveNumber = v.pipe(v.number('must be a number'), v.finite('must be a finite number'), v.gtValue(0, 'must be greater than 0'));

// strictObject: a misspelt key (`maxToken`) must fail loudly rather than silently not bound anything.
const limitSchema = v.strictObject({ maxTokens: v.optional(positiveNumber), maxCost: v.optional(positiveNumber) });
const budgetSchema = v.strictObject({ perSubmission: v.optional(limitSchema), perConversation: v.optional(limitSchema) });

const SCOPES = new Set(['perSubmission', 'perConversation']);
const LIMITS = new Set(['maxTokens', 'maxCost']);

/** The agent's budget (empty when it declares none); throws a typed definition error naming the field when it is malformed. */
export function resolveBudget(agent: object): BudgetConfig {
  const config = (agent as { budget?: unknown }).budget;
  if (config === undefined) return {};
  const result = Array.isArray(config) ? undefined : v.safeParse(budgetSchema, config);
  if (result?.success) return result.output;
  const issue = result?.issues[0];
  const path = (issue?.path ?? []).map((item) => String(item.key));
  let reason: string;
  const known = path.length === 1 ? SCOPES.has(path[0]!) : LIMITS.has(path.at(-1)!);
  if (issue === undefined || path.length === 0) {
    reason = `budget must be an object (got ${describeValue(config)})`;
  } else if (!known) {
    const allowed = path.length === 1 ? 'perSubmission, perConversation' : 'maxTokens, maxCost';
    reason = `budget${path
      .slice(0, -1)
      .map((key) => `.${key}`)
      .join('')} has unknown key "${path.at(-1)}" (allowed: ${allowed})`;
  } else if (path.length === 1) {
    reason = `budget.${path[0]} must be an object like { maxTokens, maxCost } (got ${describeValue(issue.input)})`;
  } else {
    reason = `budget.${path.join('.')} ${issue.message} (got ${describeValue(issue.input)})`;
  }
  const named = agent as { agentName?: unknown; name?: unknown };
  const name = typeof named.agentName === 'string' ? named.agentName : named.name;
  const label = typeof name === 'string' && name !== '' ? name : undefined;
  throw new AgentDefinitionError(
    'budget',
    `[flue] Agent ${label === undefined ? '(anonymous)' : `"${label}"`} has an invalid budget static: ${reason}.`,
    {
      ...(label === undefined ? {} : { agent: label }),
      details: 'Fix the static (e.g. Fn.budget = { perSubmission: { maxTokens: 200_000 }, perConversation: { maxCost: 5 } }) or remove it.',
    },
  );
}
