import { describe, expect, it } from 'vitest';
import type { FlueConversationMessage } from '../engine/conversation.ts';
import { approvalStates } from './approval-history.ts';

const request = (toolCallId: string, output: Record<string, unknown>): FlueConversationMessage => ({
  id: `msg_${toolCallId}`,
  role: 'assistant',
  purpose: 'assistant',
  display: 'visible',
  parts: [{ type: 'dynamic-tool', toolName: 'refund', toolCallId, state: 'output-available', input: { order: 'A1' }, output }],
});
const signal = (attributes: Record<string, string>): FlueConversationMessage => ({
  id: `msg_${JSON.stringify(attributes)}`,
  role: 'system',
  purpose: 'dispatch',
  display: 'visible',
  signal: { attributes },
  parts: [],
});

describe('approvalStates', () => {
  it('reads requests from pending_approval results and their ends from outcome signals', () => {
    const states = approvalStates([
      request('c1', { status: 'pending_approval', approvalId: 'c1', argsDigest: 'sha256:aa', expiresAt: '2026-01-01T00:00:00.000Z' }),
      request('c2', { status: 'pending_approval', approvalId: 'c2', argsDigest: 'sha256:bb' }),
      request('c3', { status: 'pending_approval', approvalId: 'c3', argsDigest: 'sha256:cc' }),
      request('c4', { status: 'executed', result: 'done' }),
      signal({ approvalId: 'c1', decision: 'approve', approver: 'ops' }),
      signal({ approvalId: 'c1', outcome: 'approved', approver: 'ops' }),
      signal({ approvalId: 'c2', outcome: 'expired' }),
      // A decision the gate ignored (an untrusted origin) leaves the request pending.
      signal({ approvalId: 'c3', decision: 'approve', approver: 'mallory' }),
    ]);
    expect([...states.keys()]).toEqual(['c1', 'c2', 'c3']);
    expect(states.get('c1')).toEqual({
      approvalId: 'c1',
      toolName: 'refund',
      input: { order: 'A1' },
      argsDigest: 'sha256:aa',
      expiresAt: '2026-01-01T00:00:00.000Z',
      state: 'decided',
      outcome: 'approved',
      decision: 'approve',
    });
    expect(states.get('c2')).toMatchObject({ state: 'decided', outcome: 'expired' });
    expect(states.get('c3')).toMatchObject({ state: 'pending' });
  });

  it("ends a request of the seed's own gate (no digest) with any decision naming it, as the seed's client does", () => {
    const states = approvalStates([
      request('s1', { status: 'pending_approval', approvalId: 's1' }),
      signal({ approvalId: 's1', decision: 'deny', approver: 'Op' }),
    ]);
    expect(states.get('s1')).toMatchObject({ state: 'decided', outcome: 'denied', decision: 'deny' });
  });

  it('keeps the first outcome: a later result signal does not reopen or change it', () => {
    const states = approvalStates([
      request('c1', { status: 'pending_approval', approvalId: 'c1' }),
      signal({ approvalId: 'c1', outcome: 'expired' }),
      signal({ approvalId: 'c1', outcome: 'approved' }),
    ]);
    expect(states.get('c1')).toMatchObject({ state: 'decided', outcome: 'expired' });
  });
});
