/**
 * Tools seed, "审批门" + tools.md §15: the seed's useApprovalGate hook and the ReleaseManager
 * that mounts it run verbatim on start(). The approval route of src/app.ts is not in scope
 * (HTTP comes later); `decide()` (approval-decision.ts) dispatches exactly what that route dispatches.
 * Step 8 (crash between publish and the seam checkpoint) is covered by the crash suite.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SubmissionConflictError, dispatch, init, type ConversationStreamChunk, type DispatchReceipt } from '@flue/runtime';
import type { RecordedRequest } from '@flue/runtime/testing';
import { useScriptedRuntime } from '../support/scripted-runtime.ts';
import { ReleaseManager } from './approval-gate/src/agents/release-manager.ts';
import { releases } from './approval-gate/src/shared/releases.ts';
import { decide } from './approval-decision.ts';
import { dispatchAndRead, readReceipt, settleIo, signals, toolNames, toolResult } from './helpers.ts';
import { promptOf } from '../support/prompts.ts';

const ctx = useScriptedRuntime();

afterEach(() => releases.reset());

const URL_120 = 'https://www.npmjs.com/package/pkg/v/1.2.0';

/** Step 1: the model asks to publish a stable version; the call is recorded and the response ends. */
async function requestApproval(conversationId: string, approvalId: string, version = '1.2.0') {
  ctx.server.script({ toolCalls: [{ id: approvalId, name: 'publish_release', arguments: { pkg: 'pkg', version } }] });
  return dispatchAndRead(ReleaseManager, conversationId, `Publish pkg@${version}`);
}

function approvalSignal(approvalId: string, decision: string, approver = 'Op'): string {
  return `<signal type="tool-approval" approvalId="${approvalId}" decision="${decision}" approver="${approver}">\n${approver} chose "${decision}" for ${approvalId}.\n</signal>`;
}

function resultSignal(body: string): string {
  return `<signal type="tool-approval-result">\n${body}\n</signal>`;
}

/** Scripts one text reply and notes how many publishes had happened when the model was called. */
function scriptReplyObservingPublishes(text: string): { publishesAtTurn: number | undefined } {
  const seen: { publishesAtTurn: number | undefined } = { publishesAtTurn: undefined };
  ctx.server.script((_request: RecordedRequest) => {
    seen.publishesAtTurn = releases.calls.length;
    return { text };
  });
  return seen;
}

/**
 * The client's view, reduced like the seed's `pendingApprovals()` (src/ui/Approvals.tsx): tool
 * outputs whose status is pending_approval, minus those a decision message's
 * `signal.attributes.approvalId` names. Built from the conversation stream `read()` replays.
 */
async function clientPendingApprovals(conversationId: string, receipt: DispatchReceipt) {
  const chunks: ConversationStreamChunk[] = [];
  await init(ReleaseManager, { id: conversationId }).read(receipt, { onEvent: (chunk) => chunks.push(chunk) });
  const inputs = new Map<string, { toolName: string; input: unknown }>();
  const decided = new Set<string>();
  const pending: string[] = [];
  for (const chunk of chunks) {
    if (chunk.type === 'tool-input') inputs.set(chunk.toolCallId, { toolName: chunk.toolName, input: chunk.input });
    if (chunk.type === 'message-appended') {
      const approvalId = chunk.message.signal?.attributes?.approvalId;
      if (approvalId !== undefined) decided.add(approvalId);
    }
    if (chunk.type === 'tool-output' && (chunk.output as { status?: string } | null)?.status === 'pending_approval') {
      pending.push(chunk.toolCallId);
    }
  }
  return pending.filter((id) => !decided.has(id)).map((approvalId) => ({ approvalId, ...inputs.get(approvalId) }));
}

describe('approval gate (seed 000, tools.md §15)', () => {
  it('step 1: a stable release is recorded as pending and the response ends after one model call', async () => {
    await ctx.start([ReleaseManager]);
    const { reply } = await requestApproval('c1', 'T1');

    expect(ctx.server.requests).toHaveLength(1);
    const [first] = ctx.server.requests;
    expect(first!.system).toBe(promptOf('Prepare releases. Stable releases need operator approval before they publish.'));
    expect(toolNames(first!)).toContain('publish_release');
    expect(first!.tools.find((t) => t.name === 'publish_release')).toMatchObject({
      description: 'Publish a tagged release to npm. Some calls need operator approval before they run.',
      parameters: { type: 'object', properties: { pkg: { type: 'string' }, version: { type: 'string' } } },
    });
    expect(releases.calls).toEqual([]);
    expect(reply.text).toBe(''); // terminate: true stops the model before it writes anything
    await settleIo();
    expect(ctx.server.requests).toHaveLength(1);

    // The transcript keeps the pending_approval result; a later message shows it to the model,
    // and does not run the call.
    ctx.server.script({ text: 'Still waiting for an operator.' });
    const { reply: later } = await dispatchAndRead(ReleaseManager, 'c1', 'Any news?');
    const result = toolResult(ctx.server.requests[1]!, 'T1');
    expect(result.isError).not.toBe(true);
    expect(result.content).toBe('{"status":"pending_approval","approvalId":"T1"}');
    expect(releases.calls).toEqual([]);
    expect(later.text).toBe('Still waiting for an operator.');
  });

  it('step 2: a -next version needs no approval, executes immediately, and the model continues', async () => {
    await ctx.start([ReleaseManager]);
    ctx.server.script(
      { toolCalls: [{ id: 'Tnext', name: 'publish_release', arguments: { pkg: 'pkg', version: '1.3.0-next.1' } }] },
      { text: 'Published the prerelease.' },
    );
    const { reply } = await dispatchAndRead(ReleaseManager, 'c2', 'Publish pkg@1.3.0-next.1');

    expect(releases.calls).toEqual([{ pkg: 'pkg', version: '1.3.0-next.1', idempotencyKey: 'Tnext' }]);
    expect(ctx.server.requests).toHaveLength(2);
    expect(toolResult(ctx.server.requests[1]!, 'Tnext').content).toBe(
      JSON.stringify({
        status: 'executed',
        result: 'Published pkg@1.3.0-next.1: https://www.npmjs.com/package/pkg/v/1.3.0-next.1',
      }),
    );
    expect(reply.text).toBe('Published the prerelease.');
  });

  it('step 3: an approve signal executes the stored call once, before the model turn, and appends the result', async () => {
    await ctx.start([ReleaseManager]);
    await requestApproval('c1', 'T1');

    const observed = scriptReplyObservingPublishes('pkg@1.2.0 is out.');
    const receipt = await decide('c1', 'T1', 'approve');
    expect(receipt.deduplicated).toBeUndefined();
    const reply = await readReceipt(ReleaseManager, 'c1', receipt);

    // execute ran exactly once, with the stored args and approvalId as the idempotency key,
    // and it had already run when the model was called.
    expect(releases.calls).toEqual([{ pkg: 'pkg', version: '1.2.0', idempotencyKey: 'T1' }]);
    expect(observed.publishesAtTurn).toBe(1);

    expect(ctx.server.requests).toHaveLength(2);
    const turn = ctx.server.requests[1]!;
    expect(toolResult(turn, 'T1').content).toBe('{"status":"pending_approval","approvalId":"T1"}');
    expect(signals(turn).filter((s) => s.includes('tool-approval'))).toEqual([
      approvalSignal('T1', 'approve'),
      resultSignal(`Op approved publish_release (T1). Result: Published pkg@1.2.0: ${URL_120}`),
    ]);
    // Both signals follow the tool result in the model context.
    const texts = turn.messages.map((m) => (m.role === 'tool' ? `tool:${m.toolCallId}` : m.content)).join('\n');
    expect(texts.indexOf('tool:T1')).toBeLessThan(texts.indexOf('type="tool-approval"'));
    expect(texts.indexOf('type="tool-approval"')).toBeLessThan(texts.indexOf('type="tool-approval-result"'));
    expect(reply.text).toBe('pkg@1.2.0 is out.');

    // The pending entry is gone: the same decision under another key (a retried webhook with a
    // fresh id) finds nothing to run and appends nothing.
    ctx.server.script({ text: 'Nothing new.' });
    const again = await decide('c1', 'T1', 'approve', { name: 'Op' }, 'webhook:retry-1');
    await readReceipt(ReleaseManager, 'c1', again);
    expect(releases.calls).toHaveLength(1);
    const after = ctx.server.requests[2]!;
    expect(signals(after, 'tool-approval-result')).toHaveLength(1); // only the earlier one
    expect(signals(after, 'tool-approval')).toHaveLength(2);
  });

  it('step 4: repeating the identical decision is deduplicated: same receipt, no new turn, publish still once', async () => {
    await ctx.start([ReleaseManager]);
    await requestApproval('c1', 'T1');
    ctx.server.script({ text: 'pkg@1.2.0 is out.' });
    const first = await decide('c1', 'T1', 'approve');
    const firstReply = await readReceipt(ReleaseManager, 'c1', first);
    expect(ctx.server.requests).toHaveLength(2);

    ctx.server.script({ text: 'SHOULD NOT BE USED' });
    const repeat = await decide('c1', 'T1', 'approve');
    expect(repeat.submissionId).toBe(first.submissionId);
    expect(repeat.acceptedAt).toBe(first.acceptedAt);
    expect(repeat.uid).toBe(first.uid);
    expect(repeat.deduplicated).toBe(true);
    const repeatReply = await readReceipt(ReleaseManager, 'c1', repeat);
    expect(repeatReply.text).toBe(firstReply.text);

    await settleIo();
    expect(ctx.server.requests).toHaveLength(2);
    expect(ctx.server.pending()).toBe(1);
    expect(releases.calls).toHaveLength(1);
  });

  it('step 5: the same key with a different decision is rejected with SubmissionConflictError', async () => {
    await ctx.start([ReleaseManager]);
    await requestApproval('c1', 'T1');
    ctx.server.script({ text: 'pkg@1.2.0 is out.' });
    await readReceipt(ReleaseManager, 'c1', await decide('c1', 'T1', 'approve'));

    const conflict = await decide('c1', 'T1', 'deny').then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(conflict).toBeInstanceOf(SubmissionConflictError);
    expect((conflict as SubmissionConflictError).type).toBe('submission_conflict');
    expect((conflict as SubmissionConflictError).status).toBe(409);

    await settleIo();
    expect(ctx.server.requests).toHaveLength(2);
    expect(releases.calls).toHaveLength(1);
  });

  it('step 5 (race): a conflicting decision is rejected even before the first one has run', async () => {
    await ctx.start([ReleaseManager]);
    await requestApproval('c1', 'T1');
    ctx.server.script({ text: 'pkg@1.2.0 is out.' });
    const first = await decide('c1', 'T1', 'approve');
    await expect(decide('c1', 'T1', 'deny')).rejects.toBeInstanceOf(SubmissionConflictError);
    await readReceipt(ReleaseManager, 'c1', first);
    expect(releases.calls).toEqual([{ pkg: 'pkg', version: '1.2.0', idempotencyKey: 'T1' }]);
  });

  it('step 6: a deny decision appends "denied", never publishes, and removes the pending entry', async () => {
    await ctx.start([ReleaseManager]);
    await requestApproval('c6', 'T6');

    ctx.server.script({ text: 'Understood, not publishing. How should we proceed?' });
    const receipt = await decide('c6', 'T6', 'deny', { name: 'Dana' });
    const reply = await readReceipt(ReleaseManager, 'c6', receipt);

    expect(releases.calls).toEqual([]);
    const turn = ctx.server.requests[1]!;
    expect(signals(turn).filter((s) => s.includes('tool-approval'))).toEqual([
      approvalSignal('T6', 'deny', 'Dana'),
      resultSignal('Dana denied publish_release (T6). Do not retry it; ask how to proceed.'),
    ]);
    expect(reply.text).toBe('Understood, not publishing. How should we proceed?');

    // Decided once: a later approve (under another key) finds no pending call.
    ctx.server.script({ text: 'Nothing to do.' });
    await readReceipt(ReleaseManager, 'c6', await decide('c6', 'T6', 'approve', { name: 'Op' }, 'late-approve'));
    expect(releases.calls).toEqual([]);
    expect(signals(ctx.server.requests[2]!, 'tool-approval-result')).toHaveLength(1);
  });

  it('step 7: an unknown approvalId appends nothing and the model turn proceeds normally', async () => {
    await ctx.start([ReleaseManager]);
    await requestApproval('c7', 'T7');

    ctx.server.script({ text: 'I do not know that request.' });
    const reply = await readReceipt(ReleaseManager, 'c7', await decide('c7', 'T-unknown', 'approve'));
    expect(reply.text).toBe('I do not know that request.');
    const turn = ctx.server.requests[1]!;
    expect(signals(turn, 'tool-approval')).toEqual([approvalSignal('T-unknown', 'approve')]);
    expect(signals(turn, 'tool-approval-result')).toEqual([]);
    expect(releases.calls).toEqual([]);

    // T7 is still pending and can still be approved.
    ctx.server.script({ text: 'Released.' });
    await readReceipt(ReleaseManager, 'c7', await decide('c7', 'T7', 'approve'));
    expect(releases.calls).toEqual([{ pkg: 'pkg', version: '1.2.0', idempotencyKey: 'T7' }]);
    expect(signals(ctx.server.requests[2]!, 'tool-approval-result')).toEqual([
      resultSignal(`Op approved publish_release (T7). Result: Published pkg@1.2.0: ${URL_120}`),
    ]);
  });

  it('an approved call whose execute throws appends the failure for the model instead of failing the response', async () => {
    await ctx.start([ReleaseManager]);
    await requestApproval('c8', 'T8');
    releases.failNextWith(new Error('npm registry unavailable'));

    ctx.server.script({ text: 'The publish failed.' });
    const reply = await readReceipt(ReleaseManager, 'c8', await decide('c8', 'T8', 'approve'));
    expect(reply.text).toBe('The publish failed.');
    expect(releases.calls).toHaveLength(1);
    expect(signals(ctx.server.requests[1]!, 'tool-approval-result')).toEqual([
      resultSignal('publish_release (T8) was approved but failed: Error: npm registry unavailable'),
    ]);
  });

  it('the client sees the pending request as a tool output and the decision by its approvalId attribute', async () => {
    await ctx.start([ReleaseManager]);
    const { receipt } = await requestApproval('c9', 'T9');
    expect(await clientPendingApprovals('c9', receipt)).toEqual([
      { approvalId: 'T9', toolName: 'publish_release', input: { pkg: 'pkg', version: '1.2.0' } },
    ]);

    ctx.server.script({ text: 'Published.' });
    const decision = await decide('c9', 'T9', 'approve');
    await readReceipt(ReleaseManager, 'c9', decision);
    expect(await clientPendingApprovals('c9', decision)).toEqual([]);
  });

  it('two pending calls from one batch, both approved at once: each executes exactly once', async () => {
    await ctx.start([ReleaseManager]);
    ctx.server.script({
      toolCalls: [
        { id: 'TA', name: 'publish_release', arguments: { pkg: 'a', version: '1.0.0' } },
        { id: 'TB', name: 'publish_release', arguments: { pkg: 'b', version: '2.0.0' } },
      ],
    });
    await dispatchAndRead(ReleaseManager, 'c10', 'Publish a@1.0.0 and b@2.0.0');
    expect(ctx.server.requests).toHaveLength(1); // both terminate: the response ended

    ctx.server.script({ text: 'Both published.' }, { text: 'spare' });
    const [first, second] = await Promise.all([decide('c10', 'TA', 'approve'), decide('c10', 'TB', 'approve')]);
    await readReceipt(ReleaseManager, 'c10', first);
    await readReceipt(ReleaseManager, 'c10', second);

    expect([...releases.calls].sort((x, y) => x.pkg.localeCompare(y.pkg))).toEqual([
      { pkg: 'a', version: '1.0.0', idempotencyKey: 'TA' },
      { pkg: 'b', version: '2.0.0', idempotencyKey: 'TB' },
    ]);
    const last = ctx.server.requests.at(-1)!;
    expect(signals(last, 'tool-approval-result').sort()).toEqual([
      resultSignal('Op approved publish_release (TA). Result: Published a@1.0.0: https://www.npmjs.com/package/a/v/1.0.0'),
      resultSignal('Op approved publish_release (TB). Result: Published b@2.0.0: https://www.npmjs.com/package/b/v/2.0.0'),
    ]);
  });

  it('an approval that arrives while the agent is replying joins at the turn boundary and executes once', async () => {
    await ctx.start([ReleaseManager]);
    await requestApproval('c11', 'T11');

    // A slow reply to an unrelated user message is streaming when the decision arrives.
    ctx.server.script(
      { text: 'Let me check the release notes while we wait for approval.', chunkDelayMs: 60 },
      { text: 'Approved and published.' },
    );
    const busy = await dispatch(ReleaseManager, { id: 'c11', message: 'What is the status?' });
    await ctx.server.waitForRequests(2);
    const decision = await decide('c11', 'T11', 'approve');
    const busyReply = await readReceipt(ReleaseManager, 'c11', busy);
    const reply = await readReceipt(ReleaseManager, 'c11', decision);

    expect(releases.calls).toEqual([{ pkg: 'pkg', version: '1.2.0', idempotencyKey: 'T11' }]);
    expect(ctx.server.requests).toHaveLength(3);
    expect(signals(ctx.server.requests[1]!, 'tool-approval')).toEqual([]);
    expect(signals(ctx.server.requests[2]!).filter((x) => x.includes('tool-approval'))).toEqual([
      approvalSignal('T11', 'approve'),
      resultSignal(`Op approved publish_release (T11). Result: Published pkg@1.2.0: ${URL_120}`),
    ]);
    // The decision joined the running response, so both read the host's one reply message
    // (delivery.md §7: every step's text, joined with a blank line).
    const whole = 'Let me check the release notes while we wait for approval.\n\nApproved and published.';
    expect(busyReply.text).toBe(whole);
    expect(reply.text).toBe(whole);
  });

  it('pending requests are per conversation: approving T1 in another conversation does nothing', async () => {
    await ctx.start([ReleaseManager]);
    await requestApproval('c1', 'T1');
    ctx.server.script({ text: 'No such request here.' });
    await readReceipt(ReleaseManager, 'other', await decide('other', 'T1', 'approve'));
    expect(releases.calls).toEqual([]);
    expect(signals(ctx.server.requests[1]!, 'tool-approval-result')).toEqual([]);
  });
});
