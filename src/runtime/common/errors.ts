/**
 * Every typed error the runtime exposes. Callers match on `instanceof` or on `type`, the stable
 * snake_case code; `message`, `details` and `dev` are prose and never API.
 */
import { formatIssues, type ValidationIssue } from '../../shared/issues.ts';
import { describeForDeveloper } from './dev-stack.ts';
import { credentialsHint } from './host-kind.ts';

export { formatIssues };
export type { ValidationIssue };

export interface FlueErrorOptions {
  message: string;
  details?: string;
  dev?: string;
  meta?: Record<string, unknown>;
  cause?: unknown;
}

export class FlueError extends Error {
  readonly type: string;
  readonly details: string;
  readonly dev: string;
  readonly meta: Record<string, unknown> | undefined;
  declare readonly cause: unknown;

  constructor(type: string, options: FlueErrorOptions) {
    super(options.message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'FlueError';
    this.type = type;
    this.details = options.details ?? '';
    this.dev = options.dev ?? '';
    this.meta = options.meta;
  }
}

/** The public error envelope body (without `ref`, which only the renderer adds). */
export interface ErrorEnvelopeBody {
  type: string;
  message: string;
  details: string;
  dev?: string;
  meta?: Record<string, unknown>;
  ref?: string;
}

const SECURITY_HEADERS = {
  'content-type': 'application/json',
  'x-content-type-options': 'nosniff',
  'cross-origin-resource-policy': 'cross-origin',
} as const;

/** A FlueError with its own HTTP status; renders as the public envelope wherever it escapes. */
export class FlueHttpError extends FlueError {
  readonly status: number;
  readonly headers: Record<string, string> | undefined;

  constructor(type: string, status: number, options: FlueErrorOptions & { headers?: Record<string, string> }) {
    super(type, options);
    this.status = status;
    this.headers = options.headers;
  }

  /** Hono's default error handler answers with this when an error exposes it. */
  getResponse(): Response {
    return new Response(JSON.stringify({ error: envelopeOf(this, false) }), {
      status: this.status,
      headers: { ...SECURITY_HEADERS, ...this.headers },
    });
  }
}

export function envelopeOf(error: FlueError, devMode: boolean): ErrorEnvelopeBody {
  const body: ErrorEnvelopeBody = { type: error.type, message: error.message, details: error.details };
  if (devMode && error.dev) body.dev = error.dev;
  if (error.meta !== undefined) body.meta = error.meta;
  return body;
}

// ── Route and admission errors (errors.md §3) ─────────────────────────────────────────────────

export class InvalidRequestError extends FlueHttpError {
  constructor(message: string, details = '', meta?: Record<string, unknown>) {
    super('invalid_request', 400, { message, details, meta });
    this.name = 'InvalidRequestError';
  }
}

export class MethodNotAllowedError extends FlueHttpError {
  constructor(allow: readonly string[]) {
    super('method_not_allowed', 405, {
      message: 'Method not allowed.',
      details: `This route accepts ${allow.join(', ')}.`,
      headers: { allow: allow.join(', ') },
    });
    this.name = 'MethodNotAllowedError';
  }
}

export class RouteNotFoundError extends FlueHttpError {
  constructor() {
    super('route_not_found', 404, { message: 'No route matches this request.' });
    this.name = 'RouteNotFoundError';
  }
}

export class StreamNotFoundError extends FlueHttpError {
  constructor(id: string) {
    super('stream_not_found', 404, {
      message: `Agent instance "${id}" has no conversation stream.`,
      details: 'The instance has never been contacted. Send it a message to create it.',
    });
    this.name = 'StreamNotFoundError';
  }
}

export class StreamOffsetGoneError extends FlueHttpError {
  constructor(offset: string, nextOffset: string) {
    super('stream_offset_gone', 416, {
      message: `Offset "${offset}" is beyond the stream head.`,
      details: `Read again from "-1" or from an offset at or before "${nextOffset}".`,
      meta: { offset, nextOffset },
    });
    this.name = 'StreamOffsetGoneError';
  }
}

export class AttachmentNotFoundError extends FlueHttpError {
  constructor(attachmentId: string) {
    super('attachment_not_found', 404, { message: `Attachment "${attachmentId}" was not found.` });
    this.name = 'AttachmentNotFoundError';
  }
}

export class AgentInstanceNotFoundError extends FlueHttpError {
  constructor(id: string, details = '') {
    super('agent_instance_not_found', 404, {
      message: `Agent instance "${id}" was not found.`,
      details: details || 'No instance with this id (and uid, when one was given) exists. Omit uid to create it.',
    });
    this.name = 'AgentInstanceNotFoundError';
  }
}

export class AgentInstanceExistsError extends FlueHttpError {
  readonly uid: string;
  constructor(id: string, uid: string) {
    super('agent_instance_exists', 409, {
      message: `Agent instance "${id}" already exists.`,
      details: `Continue it with uid "${uid}", or pick a fresh id to create.`,
      meta: { uid },
    });
    this.name = 'AgentInstanceExistsError';
    this.uid = uid;
  }
}

export class SubmissionConflictError extends FlueHttpError {
  readonly submissionId: string;
  constructor(submissionId: string) {
    super('submission_conflict', 409, {
      message: 'This idempotency key already names a different submission.',
      details: `The key was first used for submission "${submissionId}" with another payload. Use a fresh key to send something new.`,
      meta: { submissionId },
    });
    this.name = 'SubmissionConflictError';
    this.submissionId = submissionId;
  }
}

/** `decideApproval()` for an approval id the conversation never requested. */
export class ApprovalNotFoundError extends FlueHttpError {
  constructor(approvalId: string) {
    super('approval_not_found', 404, {
      message: `No approval request "${approvalId}" exists in this conversation.`,
      details: 'Pass the approvalId of a pending request, as listApprovals() returns it.',
      meta: { approvalId },
    });
    this.name = 'ApprovalNotFoundError';
  }
}

/**
 * `decideApproval()` against a request already decided otherwise (the first decision wins), or
 * with an arguments digest other than the one recorded with the request.
 */
export class ApprovalConflictError extends FlueHttpError {
  constructor(approvalId: string, reason: 'decided' | 'arguments', details: string) {
    super('approval_conflict', 409, {
      message:
        reason === 'decided'
          ? `Approval "${approvalId}" was already decided differently; the first decision stands.`
          : `Approval "${approvalId}" was requested with other arguments than the approver was shown.`,
      details,
      meta: { approvalId, reason },
    });
    this.name = 'ApprovalConflictError';
  }
}

/** `decideApproval()` at or after the request's expiry: a request still undecided then is denied on its own. */
export class ApprovalExpiredError extends FlueHttpError {
  constructor(approvalId: string, expiresAt: string) {
    super('approval_expired', 410, {
      message: `Approval "${approvalId}" expired at ${expiresAt}; it can no longer be decided.`,
      details: 'A request undecided at its expiry is denied on its own. Ask the agent to request the call again.',
      meta: { approvalId, expiresAt },
    });
    this.name = 'ApprovalExpiredError';
  }
}

/**
 * A signal posted to a `createAgentRouter()` mount that did not opt in with `{ signals: true }`.
 * Signals usually carry facts an agent acts on (an approval, a verified customer id), and the
 * router cannot tell who posted one, so by default only trusted code delivers them.
 */
export class SignalNotAcceptedError extends FlueHttpError {
  constructor() {
    super('signal_not_accepted', 403, {
      message: 'This endpoint does not accept signals.',
      details:
        'Clients of this router may send user messages only. Deliver signals from your server code with dispatch() after ' +
        'verifying the caller, or mount the router with createAgentRouter(agent, { signals: true }) if any client that can ' +
        'reach it may send them.',
    });
    this.name = 'SignalNotAcceptedError';
  }
}

/**
 * A value over one of the documented size limits. Refused before anything is
 * stored; `meta.field` names what was too large, `size` and `limit` are bytes (base64 characters
 * for an attachment).
 */
export class PayloadTooLargeError extends FlueHttpError {
  readonly field: string;
  readonly size: number;
  readonly limit: number;
  constructor(field: string, size: number, limit: number, hint = '') {
    super('payload_too_large', 413, {
      // Just over a limit must not read as equal to it.
      message: `${field} is ${mib(size, mib(size) === mib(limit) ? 6 : 2)} MiB, over the ${mib(limit)} MiB limit.`,
      details: hint || 'See the documented limits (docs/limits.md) and send less.',
      meta: { field, limit, size },
    });
    this.name = 'PayloadTooLargeError';
    this.field = field;
    this.size = size;
    this.limit = limit;
  }
}

function mib(bytes: number, digits = 2): string {
  return String(Number((bytes / (1024 * 1024)).toFixed(digits)));
}

/** Why `fork()` or `exportConversation()` refused an offset (the error's `type` is `fork_point_<reason>`). */
export type ForkPointReason = 'unsettled' | 'state_unknown' | 'out_of_range';

/**
 * A cut `fork()` or `exportConversation()` cannot make: it would split a submission that had not
 * settled there (`fork_point_unsettled`), the persistent state or sandbox files as of that offset
 * are not known (`fork_point_state_unknown`), or no batch has that offset (`fork_point_out_of_range`).
 * `meta.before` and `meta.after` are the nearest offsets it would take.
 */
export class ForkPointError extends FlueHttpError {
  readonly reason: ForkPointReason;
  readonly at: number;
  constructor(reason: ForkPointReason, at: number, nearest: { before?: number; after?: number }, head?: number) {
    const near = [nearest.before, nearest.after].filter((cut) => cut !== undefined);
    const offer = near.length === 0 ? 'No offset of it can be cut yet.' : `Cut at ${near.join(' or ')} instead.`;
    const why: Record<ForkPointReason, string> = {
      unsettled: `offset ${at} falls inside a submission that had not settled there`,
      state_unknown: `the persistent state or sandbox files as of offset ${at} are not known (they are kept only from the offset they were last written, or at the head)`,
      out_of_range: `the conversation has no offset ${at} (its offsets run from 0 to ${head ?? '?'})`,
    };
    super(`fork_point_${reason}`, reason === 'out_of_range' ? 400 : 409, {
      message: `The conversation cannot be cut at offset ${at}: ${why[reason]}.`,
      details: `at: ${offer}`,
      meta: { reason, at, ...nearest, ...(head === undefined ? {} : { head }) },
    });
    this.name = 'ForkPointError';
    this.reason = reason;
    this.at = at;
  }
}

export type RuntimeState = 'loading' | 'draining' | 'failed';

export class RuntimeUnavailableError extends FlueHttpError {
  constructor(state: RuntimeState, options: { details?: string; meta?: Record<string, unknown> } = {}) {
    super('runtime_unavailable', 503, {
      message: 'The Flue runtime is not accepting work right now.',
      details:
        options.details ??
        (state === 'draining'
          ? 'The runtime is shutting down. Retry against a running instance.'
          : `The runtime is ${state}. Retry shortly.`),
      meta: { state, ...options.meta },
      headers: { 'retry-after': '1' },
    });
    this.name = 'RuntimeUnavailableError';
  }
}

// ── Submission settlement errors (errors.md §4) ───────────────────────────────────────────────

/**
 * Attempts used up without a completed response. When none of them got as far as applying the
 * delivered input, `meta.phase` is `retry_exhausted_before_input` (the model never saw it).
 */
export class SubmissionRetryExhaustedError extends FlueError {
  constructor(
    meta:
      | { attemptCount: number; maxAttempts: number; interruptedTools?: { name: string; id: string }[] }
      | { phase: 'retry_exhausted_before_input'; attemptCount: number; maxAttempts: number },
  ) {
    super('submission_retry_exhausted', {
      message:
        'phase' in meta
          ? `Every attempt (${meta.attemptCount} of ${meta.maxAttempts}) was interrupted before the delivered input was applied.`
          : `The submission was interrupted ${meta.attemptCount} times and reached its attempt budget (${meta.maxAttempts}).`,
      meta,
    });
  }
}

export class SubmissionTimeoutError extends FlueError {
  constructor(timeoutMs: number) {
    super('submission_timeout', {
      message: `The submission exceeded its durability timeout of ${timeoutMs}ms.`,
    });
  }
}

/**
 * A `budget` static's limit is reached. For `scope: 'submission'` the response stopped at a turn
 * boundary and its submission settled `failed`; for `scope: 'conversation'` it also refuses a new
 * delivery at admission, before anything is stored. Raising the static lets the conversation go on.
 */
export class BudgetExceededError extends FlueHttpError {
  readonly scope: 'submission' | 'conversation';
  constructor(budget: { scope: 'submission' | 'conversation'; limit: 'maxTokens' | 'maxCost'; budget: number; spent: number }) {
    const what = budget.limit === 'maxTokens' ? 'tokens' : 'cost';
    super('budget_exceeded', 402, {
      message:
        budget.scope === 'submission'
          ? `The submission reached its budget: ${what} spent ${budget.spent} of budget.perSubmission.${budget.limit} ${budget.budget}.`
          : `The conversation reached its budget: ${what} spent ${budget.spent} of budget.perConversation.${budget.limit} ${budget.budget}.`,
      details:
        budget.scope === 'submission'
          ? "Raise the agent's budget.perSubmission static, or ask for less in one submission."
          : "Raise the agent's budget.perConversation static (a deploy) to continue this conversation, or continue in a new agent instance.",
      meta: { ...budget },
    });
    this.name = 'BudgetExceededError';
    this.scope = budget.scope;
  }
}

export class SubmissionAbortedError extends FlueError {
  constructor() {
    super('submission_aborted', { message: 'The submission was aborted.' });
  }
}

export class OperationFailedError extends FlueError {
  constructor(operation: string, reason: string, cause?: unknown) {
    super('operation_failed', {
      message: `The ${operation} operation failed: ${reason}`,
      meta: { operation, reason },
      cause,
    });
  }
}

// ── Tool errors (errors.md §5) ────────────────────────────────────────────────────────────────

export type ToolValidationIssue = ValidationIssue;

export class ToolNameConflictError extends FlueError {
  constructor(message: string) {
    super('tool_name_conflict', { message });
    this.name = 'ToolNameConflictError';
  }
}

export class ToolInputValidationError extends FlueError {
  constructor(tool: string, issues: ValidationIssue[]) {
    super('tool_input_validation', {
      message: `Arguments for tool "${tool}" do not match the required schema: ${formatIssues(issues)}. Call the tool again with corrected arguments.`,
      meta: { tool, issues },
    });
    this.name = 'ToolInputValidationError';
  }
}

export class ToolOutputValidationError extends FlueError {
  constructor(tool: string, issues: ValidationIssue[]) {
    super('tool_output_validation', {
      message: `Tool "${tool}" returned output that does not match its output schema: ${formatIssues(issues)}.`,
      meta: { tool, issues },
    });
    this.name = 'ToolOutputValidationError';
  }
}

export class ToolOutputSerializationError extends FlueError {
  constructor(tool: string, reason: string, cause?: unknown) {
    super('tool_output_serialization', {
      message: `Tool "${tool}" returned output that cannot be serialized as JSON: ${reason}`,
      meta: { tool },
      cause,
    });
    this.name = 'ToolOutputSerializationError';
  }
}

export class ToolTimeoutError extends FlueError {
  constructor(tool: string, timeoutMs: number) {
    super('tool_timeout', {
      message: `Tool "${tool}" timed out after ${timeoutMs}ms`,
      meta: { tool, timeoutMs },
    });
    this.name = 'ToolTimeoutError';
  }
}

// ── Harness, definition and session errors (errors.md §6) ─────────────────────────────────────

export class SessionBusyError extends FlueError {
  constructor() {
    super('session_busy', {
      message: 'Another operation is already running on this harness conversation.',
      details: 'Await the running prompt or compaction before starting another.',
    });
    this.name = 'SessionBusyError';
  }
}

/** A harness was used after the tool call (or hook) it was handed to had settled. */
export class HarnessClosedError extends FlueError {
  constructor(operation: 'prompt' | 'compact', cause?: unknown) {
    super('harness_closed', {
      message: `harness.${operation}() was called after the harness closed.`,
      details:
        'A harness lives only as long as the tool call it was handed to: it closes when the call returns, fails, times out or is aborted. Call it only inside that run(), and await its operations there.',
      meta: { operation },
      ...(cause === undefined ? {} : { cause }),
    });
    this.name = 'HarnessClosedError';
  }
}

/** Not a FlueError: the model gave up or never called `finish`. */
export class ResultUnavailableError extends Error {
  readonly reason: string;
  readonly assistantText: string;
  constructor(reason: string, assistantText: string, message = `The agent gave up: ${reason}`) {
    super(message);
    this.name = 'ResultUnavailableError';
    this.reason = reason;
    this.assistantText = assistantText;
  }
}

export class DelegationDepthExceededError extends FlueError {
  constructor(cap: number) {
    super('delegation_depth_exceeded', {
      message: `Maximum delegation depth (${cap}) exceeded.`,
    });
    this.name = 'DelegationDepthExceededError';
  }
}

/** A `task` call named an attachment id the delegating conversation does not hold. */
export class AttachmentNotAvailableError extends FlueError {
  constructor(attachmentId: string) {
    super('attachment_not_available', {
      message: `Attachment "${attachmentId}" is not available in this conversation.`,
      meta: { attachmentId },
    });
    this.name = 'AttachmentNotAvailableError';
  }
}

// ── Definition errors (ours): the user's code breaks a contract the runtime can name ─────────
// They are FlueErrors, not plain Errors, so the reason reaches every caller (dispatch() rejection,
// settlement `cause`, HTTP envelope) instead of being redacted as an internal error.

export type AgentDefinitionRule =
  | 'synchronous'
  | 'return_value'
  | 'durability'
  | 'budget'
  /** A hook used against its rules: twice in one render, outside a render, bad arguments. */
  | 'hook_usage'
  /** The root agent declared no model with useModel(). */
  | 'model_required';

/**
 * An agent function or one of its statics breaks the agent contract: an async
 * function, a non-string return, an invalid `durability` static, a hook used against its rules, no
 * model. Detected at admission where possible (nothing is stored), otherwise at render.
 */
export class AgentDefinitionError extends FlueError {
  readonly rule: AgentDefinitionRule;
  constructor(rule: AgentDefinitionRule, message: string, options: { agent?: string; details?: string; cause?: unknown } = {}) {
    super('agent_definition_invalid', {
      message,
      details: options.details ?? '',
      meta: { rule, ...(options.agent === undefined ? {} : { agent: options.agent }) },
      cause: options.cause,
    });
    this.name = 'AgentDefinitionError';
    this.rule = rule;
  }
}

/** A tool definition (defineTool() or useTool()) is malformed; `message` names the tool and field. */
export class ToolDefinitionError extends FlueError {
  constructor(message: string, meta: { site: 'defineTool' | 'useTool'; tool?: string }) {
    super('tool_definition_invalid', { message, meta });
    this.name = 'ToolDefinitionError';
  }
}

/** A model specifier that is not `provider-id/model-id`. */
export class InvalidModelSpecifierError extends FlueError {
  constructor(message: string, specifier: string) {
    super('invalid_model_specifier', { message, meta: { specifier } });
    this.name = 'InvalidModelSpecifierError';
  }
}

/** A model specifier naming a provider or model id the registry does not know. */
export class UnknownModelError extends FlueError {
  constructor(
    message: string,
    meta: { specifier: string; provider: string; modelId?: string; reason: 'unknown_provider' | 'unknown_model' },
  ) {
    super('unknown_model', { message, meta });
    this.name = 'UnknownModelError';
  }
}

/**
 * The model's provider has no credentials in the runtime's environment. The message names the
 * variable to set, because "not configured" alone leaves a newcomer guessing where.
 */
export class ProviderNotConfiguredError extends FlueError {
  constructor(provider: string, envVars: readonly string[]) {
    const what = envVars.length > 0 ? envVars.join(' or ') : "the provider's API key variable";
    super('provider_not_configured', {
      message: `Provider is not configured: ${provider}. ${credentialsHint(what)}, or set FLUE_SCRIPTED_MODEL_URL to use a scripted model.`,
      meta: { provider, envVars: [...envVars] },
    });
    this.name = 'ProviderNotConfiguredError';
  }
}

/** Why a Workers AI binding call failed (`CloudflareAIBindingError.meta.reason`). */
export type CloudflareAIBindingErrorReason = 'binding_missing' | 'run_failed' | 'request_too_large' | 'invalid_response' | 'stream_idle';

/**
 * A `cloudflare/...` model call that the Workers AI binding could not serve: the binding is
 * missing from the Worker's env, `run()` threw, or its result was not a text-generation response.
 */
export class CloudflareAIBindingError extends FlueError {
  constructor(reason: CloudflareAIBindingErrorReason, message: string, meta: { binding: string; model?: string }) {
    super('cloudflare_ai_binding_error', { message, meta: { reason, ...meta } });
    this.name = 'CloudflareAIBindingError';
  }
}

// ── Persistence errors (errors.md §7) ─────────────────────────────────────────────────────────

export class ConversationRecordInvariantError extends FlueError {
  constructor(recordId: string, recordType: string, reason: string) {
    super('conversation_record_invariant', {
      message: `Record "${recordId}" (${recordType}) violates the conversation stream contract: ${reason}`,
      meta: { recordId, recordType, reason },
    });
  }
}

export class PersistedFormatVersionError extends FlueError {
  constructor(storedVersion: string, supportedVersion: string) {
    super('persisted_format_version_unsupported', {
      message: `The store is stamped with format version "${storedVersion}", but this runtime supports "${supportedVersion}".`,
      details:
        storedVersion === 'unversioned'
          ? 'The database holds flue tables without a format stamp: point the runtime at a database flue-workers made, or a fresh one.'
          : 'A store of a newer format needs a flue-workers version that reads it (roll forward); nothing in it was read or changed.',
      meta: { storedVersion, supportedVersion },
    });
  }
}

// ── Non-FlueError outcomes (errors.md §8) ─────────────────────────────────────────────────────

/** The settlement error shape written to records and the wire. */
export interface SettlementError {
  name?: string;
  message: string;
  type?: string;
  details?: string;
  dev?: string;
  meta?: Record<string, unknown>;
}

export class AgentRunError extends Error {
  readonly outcome: 'failed' | 'aborted';
  readonly submissionId: string;
  constructor(outcome: 'failed' | 'aborted', submissionId: string, cause?: SettlementError) {
    super(
      outcome === 'aborted'
        ? `Submission "${submissionId}" was aborted.`
        : `Submission "${submissionId}" failed${cause ? `: ${failureText(cause)}` : '.'}`,
      cause === undefined ? undefined : { cause },
    );
    this.name = 'AgentRunError';
    this.outcome = outcome;
    this.submissionId = submissionId;
  }
}

/**
 * A redacted failure recorded in dev mode names the original error and its `src/` location (the
 * head line of `dev`), so whoever prints `err.message` during development sees the cause.
 */
function failureText(cause: SettlementError): string {
  if (cause.type !== 'internal_error' || !cause.dev) return cause.message;
  return cause.dev.split('\n', 1)[0]!;
}

/**
 * Only FlueErrors keep their words; anything else is redacted to a generic entry. The shape is
 * persisted and streamed to every reader of the conversation, so the original message and stack
 * of the user's own error go into `dev` only when the runtime runs in dev mode (`flue dev`, a
 * Node `start()` outside production): there the developer is the reader.
 */
export function toSettlementError(error: unknown, devMode = false): SettlementError {
  if (error instanceof FlueError) {
    const shape: SettlementError = { name: error.name, message: error.message, type: error.type };
    if (error.details) shape.details = error.details;
    if (devMode && error.dev) shape.dev = error.dev;
    if (error.meta !== undefined) shape.meta = error.meta;
    return shape;
  }
  const shape: SettlementError = {
    type: 'internal_error',
    message: 'An internal error occurred.',
    details: 'The submission failed on an error the runtime does not expose.',
  };
  if (devMode) shape.dev = describeForDeveloper(error);
  return shape;
}

export function abortError(message = 'The operation was aborted.', cause?: unknown): DOMException {
  const error = new DOMException(message, 'AbortError');
  // Set by hand: not every runtime's DOMException constructor takes an options bag.
  if (cause !== undefined) Object.defineProperty(error, 'cause', { value: cause, writable: true, configurable: true });
  return error;
}

export function isAbortError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'AbortError';
}
