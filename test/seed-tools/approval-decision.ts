/**
 * What the Tools seed's `POST /api/approvals/:conversationId` route (src/app.ts) dispatches for a
 * verified operator: the decision as a `tool-approval` signal, keyed by the approval id so the
 * first decision wins.
 */
import { dispatch, type DispatchReceipt } from '@flue/runtime';
import { ReleaseManager } from './approval-gate/src/agents/release-manager.ts';

export function decide(
  conversationId: string,
  approvalId: string,
  decision: 'approve' | 'deny',
  operator = { name: 'Op' },
  idempotencyKey = `approval:${approvalId}`,
): Promise<DispatchReceipt> {
  return dispatch(ReleaseManager, {
    id: conversationId,
    message: {
      kind: 'signal',
      type: 'tool-approval',
      body: `${operator.name} chose "${decision}" for ${approvalId}.`,
      attributes: { approvalId, decision, approver: operator.name },
    },
    idempotencyKey,
  });
}
