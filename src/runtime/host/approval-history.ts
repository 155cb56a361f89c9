/**
 * `listApprovals()` and `decideApproval()` (approvals.ts, which loads this module with the first
 * call): where each approval request stands, read from the conversation's history, and the
 * decision sent as a `tool-approval` signal.
 */
import { ApprovalConflictError, ApprovalExpiredError, ApprovalNotFoundError, InvalidRequestError } from '../common/errors.ts';
import { keyedSubmissionId } from '../common/ids.ts';
import type { Agent } from '../authoring/identity.ts';
import type { FlueConversationMessage } from '../engine/conversation.ts';
import type { ApprovalDecision, ApprovalReceipt, DecideApprovalRequest, PendingApproval } from './approvals.ts';
import { dispatch } from './addressing.ts';
import { requireRuntime } from './runtime.ts';

/** Where one request stands, as the history tells it. */
export type ApprovalState = PendingApproval &
  ({ state: 'pending' } | { state: 'decided'; outcome: 'approved' | 'denied' | 'failed' | 'expired'; decision?: ApprovalDecision });

const OUTCOMES = new Set(['approved', 'denied', 'failed', 'expired']);

/** Every approval request of a conversation and where it stands, from its history's messages. */
export function approvalStates(messages: readonly FlueConversationMessage[]): Map<string, ApprovalState> {
  const states = new Map<string, ApprovalState>();
  const decisions = new Map<string, ApprovalDecision>();
  for (const message of messages) {
    for (const part of message.parts) {
      if (part.type !== 'dynamic-tool' || part.state !== 'output-available') continue;
      const output = part.output as { status?: unknown; approvalId?: unknown; argsDigest?: unknown; expiresAt?: unknown } | null;
      if (output?.status !== 'pending_approval') continue;
      states.set(part.toolCallId, {
        approvalId: part.toolCallId,
        toolName: part.toolName,
        input: part.input,
        ...(typeof output.argsDigest === 'string' ? { argsDigest: output.argsDigest } : {}),
        ...(typeof output.expiresAt === 'string' ? { expiresAt: output.expiresAt } : {}),
        state: 'pending',
      });
    }
    const attributes = message.signal?.attributes;
    const approvalId = attributes?.approvalId;
    if (approvalId === undefined) continue;
    if (attributes!.decision === 'approve' || attributes!.decision === 'deny') decisions.set(approvalId, attributes!.decision);
    const request = states.get(approvalId);
    // A request of a hand-written gate (no digest) ends with any signal naming it, as the
    // documented client reads it; the shipped gate's only with its result, since it ignores untrusted decisions.
    const seedDecision = request?.argsDigest === undefined ? attributes!.decision : undefined;
    const outcome = attributes!.outcome ?? (seedDecision === undefined ? undefined : seedDecision === 'approve' ? 'approved' : 'denied');
    if (request !== undefined && request.state === 'pending' && outcome !== undefined && OUTCOMES.has(outcome)) {
      const decision = decisions.get(approvalId);
      const { state: _pending, ...rest } = request;
      states.set(approvalId, {
        ...rest,
        state: 'decided',
        outcome: outcome as 'approved' | 'denied' | 'failed' | 'expired',
        ...(decision === undefined ? {} : { decision }),
      });
    }
  }
  return states;
}

async function historyOf(agent: Agent, id: string, verb: string): Promise<FlueConversationMessage[]> {
  const runtime = requireRuntime(verb);
  if (typeof agent !== 'function') throw new InvalidRequestError(`${verb} requires an agent function as its first argument.`);
  if (typeof id !== 'string' || id.trim() === '') throw new InvalidRequestError(`${verb} requires a non-empty instance id.`);
  const snapshot = await runtime.history(runtime.registry.identityOf(agent), id);
  return snapshot?.messages ?? [];
}

/** approvals.ts `listApprovals()`. */
export async function listApprovals(agent: Agent, id: string): Promise<PendingApproval[]> {
  const now = Date.now();
  return [...approvalStates(await historyOf(agent, id, 'listApprovals()')).values()]
    .filter((request) => request.state === 'pending' && (request.expiresAt === undefined || Date.parse(request.expiresAt) > now))
    .map(({ state: _state, ...request }) => request);
}

/** approvals.ts `decideApproval()`. */
export async function decideApproval(agent: Agent, id: string, request: DecideApprovalRequest): Promise<ApprovalReceipt> {
  const verb = 'decideApproval()';
  if (typeof request !== 'object' || request === null) {
    throw new InvalidRequestError(`${verb} requires { approvalId, decision, approver }.`);
  }
  const { approvalId, decision, approver, argsDigest } = request;
  if (typeof approvalId !== 'string' || approvalId === '') {
    throw new InvalidRequestError(`${verb} approvalId must be a non-empty string.`, 'approvalId: pass the id listApprovals() returned.');
  }
  if (decision !== 'approve' && decision !== 'deny') {
    throw new InvalidRequestError(`${verb} decision must be "approve" or "deny".`, `decision: got ${JSON.stringify(decision)}.`);
  }
  if (typeof approver !== 'string' || approver.trim() === '') {
    throw new InvalidRequestError(`${verb} approver must be a non-empty string.`, 'approver: the identity your route authenticated.');
  }
  if (argsDigest !== undefined && typeof argsDigest !== 'string') {
    throw new InvalidRequestError(`${verb} argsDigest must be a string.`, 'argsDigest: the digest listApprovals() returned.');
  }
  const states = approvalStates(await historyOf(agent, id, verb));
  const state = states.get(approvalId);
  if (state === undefined) throw new ApprovalNotFoundError(approvalId);
  const key = `approval:${approvalId}`;
  if (state.state === 'decided') {
    if (state.outcome === 'expired') throw new ApprovalExpiredError(approvalId, state.expiresAt ?? 'its deadline');
    if (state.decision === decision || (state.decision === undefined && (state.outcome === 'denied') === (decision === 'deny'))) {
      const runtime = requireRuntime(verb);
      const submissionId = await keyedSubmissionId(runtime.registry.identityOf(agent), id, key);
      return { approvalId, decision, submissionId, deduplicated: true };
    }
    throw new ApprovalConflictError(approvalId, 'decided', `It was decided "${state.decision ?? state.outcome}" first.`);
  }
  // Past the deadline the expiry decides, even before its timer is delivered: no race window.
  if (state.expiresAt !== undefined && Date.now() >= Date.parse(state.expiresAt))
    throw new ApprovalExpiredError(approvalId, state.expiresAt);
  if (argsDigest !== undefined && state.argsDigest !== undefined && argsDigest !== state.argsDigest) {
    throw new ApprovalConflictError(
      approvalId,
      'arguments',
      `The request's arguments digest is ${state.argsDigest}; the decision named ${argsDigest}.`,
    );
  }
  const attributes: Record<string, string> = { approvalId, decision, approver };
  if (state.argsDigest !== undefined) attributes.argsDigest = state.argsDigest;
  try {
    const receipt = await dispatch(agent, {
      id,
      message: { kind: 'signal', type: 'tool-approval', body: `${approver} chose "${decision}" for ${approvalId}.`, attributes },
      idempotencyKey: key,
    });
    return { approvalId, decision, submissionId: receipt.submissionId, ...(receipt.deduplicated ? { deduplicated: true as const } : {}) };
  } catch (error) {
    // Another decision for this request was admitted first and is not processed yet.
    if ((error as { type?: unknown }).type === 'submission_conflict') {
      throw new ApprovalConflictError(approvalId, 'decided', 'Another decision for this request was accepted first.');
    }
    throw error;
  }
}
