/**
 * Agent calls as Workflow steps: one step dispatches and
 * checkpoints the receipt, another reads the settled reply and checkpoints a projection of it.
 *
 * Thin over the public `init()` handle: no hidden state, nothing kept between the two steps except
 * the checkpoint. What the helpers add: step naming, a deliberate idempotency-key decision (so a
 * retried dispatch step converges instead of sending twice), read-step defaults sized to the
 * agent's durability budget, and deterministic failures mapped to non-retryable step errors.
 */
import type { WorkflowStep, WorkflowStepConfig } from 'cloudflare:workers';
import { AgentRunError, init, type Agent, type AgentReply, type DeliveredMessageInput, type DispatchReceipt } from '@flue/runtime';
import { nonRetryable, toAgentStepError } from './step-errors.ts';

/** The dispatch step's result: everything the read step (in any later isolate) needs. Plain JSON. */
export interface AgentCheckpoint {
  /** The helper name; the steps are `${name}:dispatch` and `${name}:read`. */
  name: string;
  /** The agent instance id. */
  id: string;
  receipt: DispatchReceipt;
}

/** The default projection of a reply, checkpointed by the read step. */
export type AgentStepReply = Pick<AgentReply, 'text' | 'data' | 'metadata' | 'uid' | 'submissionId'>;

/** The `event` argument of `run()`, or anything with its instance id. */
export interface WorkflowInstanceRef {
  readonly instanceId: string;
}

/**
 * The idempotency-key decision is required: pass the Workflow `event` (the key becomes
 * `${event.instanceId}:${name}`, plus `#n` for the n-th step of the same name), an explicit key,
 * or `false` to dispatch unkeyed (a retried step may then send twice).
 */
export type IdempotencyChoice =
  | { event: WorkflowInstanceRef; idempotencyKey?: string | false }
  | { event?: WorkflowInstanceRef; idempotencyKey: string | false };

interface DispatchFields {
  /** Names the steps (`${name}:dispatch`, `${name}:read`) and the derived key. */
  name: string;
  /** The agent instance id. Must be deterministic: from the payload, the instance id or a step result (A1). */
  id: string;
  /** Must be deterministic (A2): under a key, a changed message on retry is a conflict. */
  message: DeliveredMessageInput;
  initialData?: unknown;
  /** `null`: create only. A string: continue that incarnation only (e.g. `checkpoint.receipt.uid`). */
  uid?: string | null;
}

export type DispatchStepOptions = DispatchFields &
  IdempotencyChoice & {
    /** Step config of the dispatch step. Default: the platform's. */
    config?: WorkflowStepConfig;
  };

export interface ReadStepOptions<R = AgentStepReply> {
  /** Step config of the read step. Default: 5 retries from 10 s, exponential; timeout = the agent's durability timeout + 5 min. */
  config?: WorkflowStepConfig;
  /** Runs inside the read step; only its result is checkpointed (keep it small and JSON-shaped; A5). */
  select?: (reply: AgentReply) => R | Promise<R>;
  /** `'throw'` (default): a failed or aborted run fails the step without retries. `'return'`: it resolves the failure variant. */
  onFailure?: 'throw' | 'return';
}

export type RunAgentStepOptions<R = AgentStepReply> = DispatchFields &
  IdempotencyChoice & {
    dispatchConfig?: WorkflowStepConfig;
    readConfig?: WorkflowStepConfig;
    select?: (reply: AgentReply) => R | Promise<R>;
    onFailure?: 'throw' | 'return';
  };

export interface AgentStepCompleted<R> {
  outcome: 'completed';
  checkpoint: AgentCheckpoint;
  reply: R;
}

export interface AgentStepSettledFailure {
  outcome: 'failed' | 'aborted';
  checkpoint: AgentCheckpoint;
  error: { message: string; type?: string };
}

export type AgentStepResult<R> = AgentStepCompleted<R> | AgentStepSettledFailure;

const MAX_IDEMPOTENCY_KEY_LENGTH = 256;
/** Room for the `#n` suffix of a repeated step name. */
const DERIVED_KEY_RESERVE = 8;
/** The Workflows limit on step names. */
const MAX_STEP_NAME_LENGTH = 256;
const DEFAULT_DURABILITY_TIMEOUT_MS = 3_600_000;
const READ_TIMEOUT_MARGIN_MS = 300_000;

/** Admission errors a retry cannot fix (errors.md §3). Anything else is left to the platform's retries. */
const DETERMINISTIC_DISPATCH_ERRORS = new Set([
  'invalid_request',
  'agent_instance_not_found',
  'agent_instance_exists',
  'submission_conflict',
]);

// ── runAgentStep ──────────────────────────────────────────────────────────────────────────────

/** Dispatch (step `${name}:dispatch`) and read the settled reply (step `${name}:read`). */
export function runAgentStep<R = AgentStepReply>(
  step: WorkflowStep,
  agent: Agent,
  options: RunAgentStepOptions<R> & { onFailure?: 'throw' },
): Promise<AgentStepCompleted<R>>;
export function runAgentStep<R = AgentStepReply>(
  step: WorkflowStep,
  agent: Agent,
  options: RunAgentStepOptions<R> & { onFailure: 'return' },
): Promise<AgentStepResult<R>>;
export function runAgentStep<R = AgentStepReply>(
  step: WorkflowStep,
  agent: Agent,
  options: RunAgentStepOptions<R>,
): Promise<AgentStepResult<R>>;
export async function runAgentStep<R>(step: WorkflowStep, agent: Agent, options: RunAgentStepOptions<R>): Promise<AgentStepResult<R>> {
  const { dispatchConfig, readConfig, select, onFailure, ...dispatchOptions } = options;
  checkReadOptions('runAgentStep()', { select, onFailure });
  const checkpoint = await dispatchStep(step, agent, {
    ...dispatchOptions,
    ...(dispatchConfig === undefined ? {} : { config: dispatchConfig }),
  } as DispatchStepOptions);
  const readOptions: Omit<ReadStepOptions<R>, 'onFailure'> = {
    ...(readConfig === undefined ? {} : { config: readConfig }),
    ...(select === undefined ? {} : { select }),
  };
  if (onFailure === 'return') return readStep<R>(step, agent, checkpoint, { ...readOptions, onFailure: 'return' });
  const reply = await readStep<R>(step, agent, checkpoint, readOptions);
  return { outcome: 'completed', checkpoint, reply };
}

// ── dispatchStep ──────────────────────────────────────────────────────────────────────────────

/** Step `${name}:dispatch`: admits the message and checkpoints `{ name, id, receipt }`. */
export async function dispatchStep(step: WorkflowStep, agent: Agent, options: DispatchStepOptions): Promise<AgentCheckpoint> {
  const verb = 'dispatchStep()';
  if (typeof options !== 'object' || options === null) throw new Error(`[flue] ${verb} requires an options object.`);
  const { name, id, message, initialData, uid, config } = options;
  checkName(verb, name);
  checkId(verb, id);
  if (uid !== undefined && uid !== null && typeof uid !== 'string')
    throw new Error(`[flue] ${verb}: uid must be a string, null or omitted.`);
  const key = keyChoice(verb, options);
  checkAgent(verb, agent, id);
  const stepName = `${name}:dispatch`;

  return inRun(() =>
    runStep(step, stepName, config, async (ctx) => {
      const idempotencyKey = key.derive === undefined ? key.key : deriveKey(key.derive, ctx);
      const handle = init(agent, { id, ...(uid === undefined ? {} : { uid }) });
      let receipt: DispatchReceipt;
      try {
        receipt = await handle.dispatch({
          message,
          ...(initialData === undefined ? {} : { initialData }),
          ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
        });
      } catch (error) {
        const type = errorType(error);
        if (type !== undefined && DETERMINISTIC_DISPATCH_ERRORS.has(type)) {
          throw nonRetryable({ step: stepName, outcome: 'rejected', type, id, message: errorMessage(error) });
        }
        throw error;
      }
      const checkpoint: AgentCheckpoint = {
        name,
        id,
        receipt: {
          submissionId: receipt.submissionId,
          acceptedAt: receipt.acceptedAt,
          uid: receipt.uid,
          ...(receipt.deduplicated ? { deduplicated: true as const } : {}),
        },
      };
      return checkpoint;
    }),
  );
}

// ── readStep ──────────────────────────────────────────────────────────────────────────────────

/**
 * Step `${checkpoint.name}:read`: re-attaches to the checkpointed submission and checkpoints the
 * settled reply (or `select`'s projection). Retrying it never prompts again: it reads the same
 * submission, whose reply is the same on every read.
 */
export function readStep<R = AgentStepReply>(
  step: WorkflowStep,
  agent: Agent,
  checkpoint: AgentCheckpoint,
  options?: ReadStepOptions<R> & { onFailure?: 'throw' },
): Promise<R>;
export function readStep<R = AgentStepReply>(
  step: WorkflowStep,
  agent: Agent,
  checkpoint: AgentCheckpoint,
  options: ReadStepOptions<R> & { onFailure: 'return' },
): Promise<AgentStepResult<R>>;
export async function readStep<R>(
  step: WorkflowStep,
  agent: Agent,
  checkpoint: AgentCheckpoint,
  options: ReadStepOptions<R> = {},
): Promise<R | AgentStepResult<R>> {
  const verb = 'readStep()';
  checkCheckpoint(verb, checkpoint);
  checkReadOptions(verb, options);
  checkAgent(verb, agent, checkpoint.id);
  const { select, onFailure = 'throw' } = options;
  const stepName = `${checkpoint.name}:read`;
  const config = options.config ?? defaultReadConfig(agent);

  type Outcome = { outcome: 'completed'; reply: R } | { outcome: 'failed' | 'aborted'; error: { message: string; type?: string } };
  const result = await inRun(() =>
    runStep<R | Outcome>(step, stepName, config, async () => {
      let reply: AgentReply;
      try {
        reply = await init(agent, { id: checkpoint.id }).read(checkpoint.receipt);
      } catch (error) {
        if (isAgentRunError(error)) {
          const cause = (error as { cause?: { message?: unknown; type?: unknown } }).cause;
          const failure = {
            message: typeof cause?.message === 'string' ? cause.message : error.message,
            ...(typeof cause?.type === 'string' ? { type: cause.type } : {}),
          };
          if (onFailure === 'return') return { outcome: error.outcome, error: failure };
          throw nonRetryable({
            step: stepName,
            outcome: error.outcome,
            id: checkpoint.id,
            submissionId: checkpoint.receipt.submissionId,
            ...failure,
          });
        }
        if (errorType(error) === 'agent_instance_not_found') {
          // The checkpoint names an instance that does not exist: a non-deterministic id (A1).
          throw nonRetryable({
            step: stepName,
            outcome: 'rejected',
            type: 'agent_instance_not_found',
            id: checkpoint.id,
            submissionId: checkpoint.receipt.submissionId,
            message: errorMessage(error),
          });
        }
        throw error;
      }
      // Outside the try: a throwing select is an ordinary (retried) step error.
      const value = select === undefined ? (projectReply(reply) as R) : await select(reply);
      return onFailure === 'return' ? { outcome: 'completed', reply: value } : value;
    }),
  );
  if (onFailure !== 'return') return result as R;
  const outcome = result as Outcome;
  return outcome.outcome === 'completed'
    ? { outcome: 'completed', checkpoint, reply: outcome.reply }
    : { outcome: outcome.outcome, checkpoint, error: outcome.error };
}

/** The default read-step config (A4): the step must outlive queue wait plus the agent's own budget. */
export function defaultReadConfig(agent: Agent): WorkflowStepConfig {
  const configured = (agent as { durability?: { timeoutMs?: unknown } }).durability?.timeoutMs;
  const budget =
    typeof configured === 'number' && Number.isFinite(configured) && configured > 0 ? configured : DEFAULT_DURABILITY_TIMEOUT_MS;
  return {
    retries: { limit: 5, delay: '10 seconds', backoff: 'exponential' },
    timeout: budget + READ_TIMEOUT_MARGIN_MS,
  };
}

function projectReply(reply: AgentReply): AgentStepReply {
  return {
    text: reply.text,
    data: reply.data,
    ...(reply.metadata === undefined ? {} : { metadata: reply.metadata }),
    ...(reply.uid === undefined ? {} : { uid: reply.uid }),
    submissionId: reply.submissionId,
  };
}

// ── Plumbing ──────────────────────────────────────────────────────────────────────────────────

interface StepContext {
  step?: { name?: string; count?: number };
  attempt?: number;
}

/**
 * `step.do` without its `Rpc.Serializable` generic: the helpers' results are plain JSON by
 * construction, and callers' `select` results are documented to be.
 */
function runStep<T>(
  step: WorkflowStep,
  name: string,
  config: WorkflowStepConfig | undefined,
  body: (ctx: StepContext | undefined) => Promise<T>,
): Promise<T> {
  // Called as a method: `step` is an RPC stub, whose members are remote methods (no `.call`).
  const target = step as unknown as { do(name: string, ...rest: unknown[]): Promise<T> };
  return config === undefined ? target.do(name, body) : target.do(name, config, body);
}

/** In `run()`: a step that failed on one of ours rejects with a typed {@link AgentStepError}. */
async function inRun<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw toAgentStepError(error) ?? error;
  }
}

type KeyPlan = { key: string | undefined; derive?: undefined } | { derive: string; key?: undefined };

function keyChoice(verb: string, options: Partial<IdempotencyChoice> & { name: string }): KeyPlan {
  const { idempotencyKey, event } = options;
  if (idempotencyKey === false) return { key: undefined };
  if (typeof idempotencyKey === 'string') {
    if (idempotencyKey === '' || idempotencyKey.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
      throw new Error(
        `[flue] ${verb}: idempotencyKey must be a non-empty string of at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters, or false.`,
      );
    }
    return { key: idempotencyKey };
  }
  if (idempotencyKey !== undefined) throw new Error(`[flue] ${verb}: idempotencyKey must be a string or false.`);
  const instanceId = event?.instanceId;
  if (typeof instanceId !== 'string' || instanceId === '') {
    throw new Error(
      `[flue] ${verb} "${options.name}" needs an idempotency decision: pass { event } (the key becomes ` +
        `"<instanceId>:${options.name}"), an explicit idempotencyKey, or idempotencyKey: false to dispatch unkeyed.`,
    );
  }
  const base = `${instanceId}:${options.name}`;
  if (base.length > MAX_IDEMPOTENCY_KEY_LENGTH - DERIVED_KEY_RESERVE) {
    throw new Error(
      `[flue] ${verb}: the derived idempotency key "${base.slice(0, 40)}…" is too long; shorten the name or pass an idempotencyKey.`,
    );
  }
  return { derive: base };
}

/** The n-th step of one name in a run gets its own key, so a loop of same-named calls never collides. */
function deriveKey(base: string, ctx: StepContext | undefined): string {
  const count = ctx?.step?.count;
  return typeof count === 'number' && count > 1 ? `${base}#${count}` : base;
}

function checkName(verb: string, name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.trim() === '') throw new Error(`[flue] ${verb} requires a non-empty name (it names the steps).`);
  if (name.length > MAX_STEP_NAME_LENGTH - ':dispatch'.length)
    throw new Error(`[flue] ${verb}: name is too long for a Workflow step name.`);
}

function checkId(verb: string, id: unknown): asserts id is string {
  if (typeof id !== 'string' || id.trim() === '') {
    throw new Error(
      `[flue] ${verb} requires a deterministic, non-empty agent instance id (from the payload, the instance id or a step result).`,
    );
  }
}

/** `init()` validates the agent function and the id without I/O; calling it here fails before any step. */
function checkAgent(verb: string, agent: Agent, id: string): void {
  try {
    init(agent, { id });
  } catch (error) {
    throw new Error(`[flue] ${verb}: ${errorMessage(error)}`);
  }
}

function checkCheckpoint(verb: string, checkpoint: AgentCheckpoint): void {
  const ok =
    typeof checkpoint === 'object' &&
    checkpoint !== null &&
    typeof checkpoint.name === 'string' &&
    checkpoint.name !== '' &&
    typeof checkpoint.id === 'string' &&
    checkpoint.id !== '' &&
    typeof checkpoint.receipt?.submissionId === 'string' &&
    checkpoint.receipt.submissionId !== '';
  if (!ok) throw new Error(`[flue] ${verb} requires the checkpoint dispatchStep() returned ({ name, id, receipt }).`);
}

function checkReadOptions(verb: string, options: { select?: unknown; onFailure?: unknown }): void {
  if (options.select !== undefined && typeof options.select !== 'function') throw new Error(`[flue] ${verb}: select must be a function.`);
  if (options.onFailure !== undefined && options.onFailure !== 'throw' && options.onFailure !== 'return') {
    throw new Error(`[flue] ${verb}: onFailure must be 'throw' or 'return'.`);
  }
}

function isAgentRunError(error: unknown): error is AgentRunError {
  return (
    error instanceof AgentRunError ||
    ((error as { name?: unknown } | null)?.name === 'AgentRunError' &&
      ((error as { outcome?: unknown }).outcome === 'failed' || (error as { outcome?: unknown }).outcome === 'aborted'))
  );
}

function errorType(error: unknown): string | undefined {
  const type = (error as { type?: unknown } | null)?.type;
  return typeof type === 'string' ? type : undefined;
}

function errorMessage(error: unknown): string {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : String(error);
}
