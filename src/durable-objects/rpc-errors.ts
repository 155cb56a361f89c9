/**
 * Errors across the Worker → Durable Object RPC boundary. RPC keeps only an error's name and
 * message, so the object returns envelopes and the Worker rebuilds the same typed class, with its
 * `type`, `details` and `meta` (errors.md §3: admission errors reject with the class the HTTP
 * route would render).
 */
import {
  AgentDefinitionError,
  BudgetExceededError,
  type AgentDefinitionRule,
  AgentInstanceExistsError,
  AgentInstanceNotFoundError,
  FlueError,
  ForkPointError,
  type ForkPointReason,
  InvalidModelSpecifierError,
  InvalidRequestError,
  PayloadTooLargeError,
  ProviderNotConfiguredError,
  RuntimeUnavailableError,
  type RuntimeState,
  SubmissionConflictError,
  ToolDefinitionError,
  UnknownModelError,
} from '../runtime/common/errors.ts';
import { promised } from '../runtime/common/promised.ts';

export interface ErrorShape {
  name: string;
  message: string;
  type?: string;
  details?: string;
  dev?: string;
  meta?: Record<string, unknown>;
}

export type RpcEnvelope<T> = { ok: true; value: T } | { ok: false; error: ErrorShape };

export function toErrorShape(error: unknown): ErrorShape {
  if (error instanceof FlueError) {
    return {
      name: error.name,
      message: error.message,
      type: error.type,
      details: error.details,
      ...(error.dev ? { dev: error.dev } : {}),
      ...(error.meta === undefined ? {} : { meta: error.meta }),
    };
  }
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { name: 'Error', message: String(error) };
}

const REBUILD: Record<string, (shape: ErrorShape) => FlueError> = {
  invalid_request: (shape) => new InvalidRequestError(shape.message, shape.details, shape.meta),
  agent_instance_not_found: () => new AgentInstanceNotFoundError(''),
  agent_instance_exists: (shape) => new AgentInstanceExistsError('', String(shape.meta?.uid ?? '')),
  submission_conflict: (shape) => new SubmissionConflictError(String(shape.meta?.submissionId ?? '')),
  payload_too_large: (shape) =>
    new PayloadTooLargeError(String(shape.meta?.field ?? ''), Number(shape.meta?.size ?? 0), Number(shape.meta?.limit ?? 0)),
  budget_exceeded: (shape) =>
    new BudgetExceededError({
      scope: shape.meta?.scope === 'submission' ? 'submission' : 'conversation',
      limit: shape.meta?.limit === 'maxCost' ? 'maxCost' : 'maxTokens',
      budget: Number(shape.meta?.budget ?? 0),
      spent: Number(shape.meta?.spent ?? 0),
    }),
  fork_point_unsettled: (shape) => forkPoint('unsettled', shape),
  fork_point_state_unknown: (shape) => forkPoint('state_unknown', shape),
  fork_point_out_of_range: (shape) => forkPoint('out_of_range', shape),
  runtime_unavailable: (shape) => new RuntimeUnavailableError((shape.meta?.state as RuntimeState) ?? 'failed'),
  // Definition errors reject admission (a broken agent) and must keep their class on the Worker.
  agent_definition_invalid: (shape) => new AgentDefinitionError((shape.meta?.rule as AgentDefinitionRule) ?? 'synchronous', shape.message),
  tool_definition_invalid: (shape) => new ToolDefinitionError(shape.message, { site: 'useTool' }),
  invalid_model_specifier: (shape) => new InvalidModelSpecifierError(shape.message, String(shape.meta?.specifier ?? '')),
  unknown_model: (shape) => new UnknownModelError(shape.message, { specifier: '', provider: '', reason: 'unknown_model' }),
  provider_not_configured: (shape) => new ProviderNotConfiguredError(String(shape.meta?.provider ?? ''), []),
};

function forkPoint(reason: ForkPointReason, shape: ErrorShape): ForkPointError {
  const meta = shape.meta ?? {};
  const near = (value: unknown) => (typeof value === 'number' ? value : undefined);
  const before = near(meta.before);
  const after = near(meta.after);
  return new ForkPointError(
    reason,
    Number(meta.at ?? -1),
    { ...(before === undefined ? {} : { before }), ...(after === undefined ? {} : { after }) },
    near(meta.head),
  );
}

export function fromErrorShape(shape: ErrorShape): Error {
  if (shape.type === undefined) {
    const error = new Error(shape.message);
    error.name = shape.name;
    return error;
  }
  const rebuild = REBUILD[shape.type];
  const error = rebuild ? rebuild(shape) : new FlueError(shape.type, { message: shape.message });
  // The object's words win: constructors above only restore the class and its fixed fields.
  Object.assign(error, { message: shape.message, details: shape.details ?? '', dev: shape.dev ?? '', meta: shape.meta, name: shape.name });
  return error;
}

/**
 * `work`'s answer in its envelope: what it throws or rejects with becomes the envelope's failure.
 * Chained rather than awaited, so a call that waits (a long poll) holds no suspended frame here.
 */
export function envelope<T>(work: () => T | Promise<T>): Promise<RpcEnvelope<T>> {
  return promised(() => Promise.resolve(work())).then(succeeded, failed);
}

const succeeded = <T>(value: T): RpcEnvelope<T> => ({ ok: true, value });
const failed = (error: unknown): RpcEnvelope<never> => ({ ok: false, error: toErrorShape(error) });

export function unwrap<T>(result: RpcEnvelope<T>): T {
  if (result.ok) return result.value;
  throw fromErrorShape(result.error);
}
