import { expect, test } from 'vitest';
import { SubmissionConflictError, dispatch, init } from '@flue/runtime';
import { ReleaseManager } from '../seed-tools/approval-gate/src/agents/release-manager.ts';
import { releases } from '../seed-tools/approval-gate/src/shared/releases.ts';
import { laneRequests, resetLane, scriptLane } from './lanes.ts';
import './worker.ts';

const LANE = 'claude-sonnet-4-6';

/** What the seed's approval route does with a decision (src/app.ts in the Tools seed). */
function decide(conversationId: string, approvalId: string, decision: 'approve' | 'deny') {
  return dispatch(ReleaseManager, {
    id: conversationId,
    message: {
      kind: 'signal',
      type: 'tool-approval',
      body: `Op chose "${decision}" for ${approvalId}.`,
      attributes: { approvalId, decision, approver: 'Op' },
    },
    idempotencyKey: `approval:${approvalId}`,
  });
}

test('the seed approval gate runs in a Durable Object through dispatch() signals; execute runs once', async () => {
  releases.reset();
  await resetLane(LANE);
  await scriptLane(LANE, { toolCalls: [{ id: 'T1', name: 'publish_release', arguments: { pkg: 'pkg', version: '1.2.0' } }] });
  const handle = init(ReleaseManager, { id: 'gate-1' });
  await handle.read(await handle.dispatch('Publish pkg@1.2.0'));
  expect(await laneRequests(LANE)).toHaveLength(1); // terminate: no second model call
  expect(releases.calls).toHaveLength(0);

  await scriptLane(LANE, { text: 'Published.' });
  const approval = await decide('gate-1', 'T1', 'approve');
  const reply = await handle.read(approval);
  expect(reply.text).toBe('Published.');
  expect(releases.calls).toEqual([{ pkg: 'pkg', version: '1.2.0', idempotencyKey: 'T1' }]);
  const seen = (await laneRequests(LANE))[1]!.messages.map((m) => m.content).join('\n');
  expect(seen).toContain('type="tool-approval"');
  expect(seen).toContain('Op approved publish_release (T1)');

  const replay = await decide('gate-1', 'T1', 'approve');
  expect(replay).toMatchObject({ submissionId: approval.submissionId, deduplicated: true });
  await expect(decide('gate-1', 'T1', 'deny')).rejects.toBeInstanceOf(SubmissionConflictError);
  expect(await laneRequests(LANE)).toHaveLength(2);
  expect(releases.calls).toHaveLength(1);
  await resetLane(LANE);
});
