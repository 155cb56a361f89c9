/**
 * Seed 000, "审批门", src/ui/Approvals.tsx: the client derives pending approvals from the
 * conversation it follows. The seed's `pendingApprovals()` (verbatim, seed-tools/approvals-ui.ts) runs over the messages
 * of the unmodified `@flue/react` `useFlueAgent()` hook (headless hook host), following the seed's
 * ReleaseManager over HTTP; the decision is dispatched as the seed's approval route does.
 */
import { afterEach, expect, test } from 'vitest';
import { useFlueAgent } from '@flue/react';
import { ReleaseManager } from './seed-tools/approval-gate/src/agents/release-manager.ts';
import { releases } from './seed-tools/approval-gate/src/shared/releases.ts';
import { decide } from './seed-tools/approval-decision.ts';
import { pendingApprovals } from './seed-tools/approvals-ui.ts';
import { MOUNT, useNodeHost } from './interop/support/node-host.ts';
import { renderHook } from './interop/support/react-hooks.ts';

const { ctx, host } = useNodeHost();

afterEach(() => releases.reset());

test('the pending list appears when the gate records a call and disappears when the decision arrives', async () => {
  const h = await host(ReleaseManager);
  const agent = renderHook(() => useFlueAgent({ url: `${h.http.url}${MOUNT}/ui-1` }));
  try {
    await agent.until((r) => r.historyReady, 5_000, 'historyReady');
    expect(pendingApprovals(agent.current.messages)).toEqual([]);

    ctx.server.script(
      {
        toolCalls: [
          { id: 'T1', name: 'publish_release', arguments: { pkg: 'pkg', version: '1.2.0' } },
          { id: 'T2', name: 'publish_release', arguments: { pkg: 'lib', version: '3.0.0' } },
        ],
      },
      { text: 'pkg@1.2.0 is out.' },
      { text: 'Not publishing lib.' },
    );
    await agent.current.sendMessage('Publish pkg@1.2.0 and lib@3.0.0');
    const requested = await agent.until((r) => r.status === 'idle' && r.settlements.length === 1, 10_000, 'the request to settle');
    expect(pendingApprovals(requested.messages)).toEqual([
      { approvalId: 'T1', toolName: 'publish_release', input: { pkg: 'pkg', version: '1.2.0' } },
      { approvalId: 'T2', toolName: 'publish_release', input: { pkg: 'lib', version: '3.0.0' } },
    ]);
    expect(releases.calls).toEqual([]);

    await decide('ui-1', 'T1', 'approve');
    const approved = await agent.until((r) => r.status === 'idle' && r.settlements.length === 2, 10_000, 'the approval to settle');
    expect(pendingApprovals(approved.messages)).toEqual([
      { approvalId: 'T2', toolName: 'publish_release', input: { pkg: 'lib', version: '3.0.0' } },
    ]);
    expect(releases.calls).toEqual([{ pkg: 'pkg', version: '1.2.0', idempotencyKey: 'T1' }]);

    await decide('ui-1', 'T2', 'deny');
    const denied = await agent.until((r) => r.status === 'idle' && r.settlements.length === 3, 10_000, 'the denial to settle');
    expect(pendingApprovals(denied.messages)).toEqual([]);
    expect(releases.calls).toHaveLength(1);
    // The decisions reached the client as signal messages carrying the approvalId attribute.
    expect(denied.messages.flatMap((m) => m.signal?.attributes?.approvalId ?? [])).toEqual(['T1', 'T2']);
  } finally {
    agent.unmount();
  }
});
