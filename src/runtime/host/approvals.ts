/**
 * The trusted side of `useApprovalGate()`: `listApprovals()` and `decideApproval()`, for the app's
 * approval route. Both read the conversation's history (the same record a client follows): a
 * request is a `pending_approval` tool result, its end a `tool-approval-result` signal with an
 * `outcome`. The decision itself is the documented `tool-approval` signal, dispatched by server code
 * (origin `app`) under the idempotency key `approval:<approvalId>`, so the first decision wins.
 * Their code (approval-history.ts) loads with the first call, not at start (common/lazy-part.ts).
 */
import { lazyPart } from '../common/lazy-part.ts';
import type { Agent } from '../authoring/identity.ts';

export type ApprovalDecision = 'approve' | 'deny';

/** A request awaiting a decision, as `listApprovals()` returns it. */
export interface PendingApproval {
  approvalId: string;
  toolName: string;
  /** The exact arguments the call will run with once approved. */
  input: unknown;
  /** Digest of `input` recorded with the request; pass it to `decideApproval()`. */
  argsDigest?: string;
  /** When it is denied on its own (ISO 8601), if the gate has an expiry. */
  expiresAt?: string;
}

export interface DecideApprovalRequest {
  approvalId: string;
  decision: ApprovalDecision;
  /** Who decided, as your route authenticated them (never a value a client sent unchecked). */
  approver: string;
  /** The digest the approver was shown; a request recorded with other arguments is refused (409). */
  argsDigest?: string;
}

export interface ApprovalReceipt {
  approvalId: string;
  decision: ApprovalDecision;
  /** The submission that delivers the decision (read its reply with `init().read()`). */
  submissionId: string;
  /** The same decision was made before: nothing new was sent. */
  deduplicated?: true;
}

const historyPart = lazyPart('approvals', () => import('./approval-history.ts'));

/** The conversation's requests still awaiting a decision, with their expiry; expired ones are left out. */
export async function listApprovals(agent: Agent, id: string): Promise<PendingApproval[]> {
  return (await historyPart()).listApprovals(agent, id);
}

/**
 * Decides a request from trusted code: the first decision wins, the same decision again is a no-op
 * (`deduplicated`), another decision is `ApprovalConflictError` (409), one past the expiry
 * `ApprovalExpiredError` (410), an unknown id `ApprovalNotFoundError` (404).
 */
export async function decideApproval(agent: Agent, id: string, request: DecideApprovalRequest): Promise<ApprovalReceipt> {
  return (await historyPart()).decideApproval(agent, id, request);
}
