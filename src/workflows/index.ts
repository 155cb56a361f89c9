/**
 * `@flue/runtime/workflows`: agents in Cloudflare Workflows and cron triggers.
 * Cloudflare only (imports `cloudflare:workflows`); built on the
 * public `init()` handle, so a Workflow exported from the same Worker reaches the agents' Durable
 * Objects through the module-scope env.
 */
export {
  defaultReadConfig,
  dispatchStep,
  readStep,
  runAgentStep,
  type AgentCheckpoint,
  type AgentStepCompleted,
  type AgentStepReply,
  type AgentStepResult,
  type AgentStepSettledFailure,
  type DispatchStepOptions,
  type IdempotencyChoice,
  type ReadStepOptions,
  type RunAgentStepOptions,
  type WorkflowInstanceRef,
} from './agent-steps.ts';
export { AgentStepError, toAgentStepError, type AgentStepFailure } from './step-errors.ts';
export { dispatchScheduled, scheduledIdempotencyKey, type DispatchScheduledOptions, type ScheduledTick } from './scheduled.ts';
