/**
 * The shipped `useApprovalGate()` on Node, through the public API: seed 000's contract (the call
 * ends the turn with `pending_approval`, a trusted `tool-approval` signal decides, the stored
 * arguments run, a `tool-approval-result` follows, the seed's Approvals.tsx logic sees it) plus an
 * expiry that records a deterministic deny, a digest of the arguments, decisions only from trusted
 * code, first-wins `decideApproval()` (409 on a conflicting second decision, 410 once expired), and
 * `listApprovals()`; expiry racing a decision; the seed's own gate, unmodified, beside it.
 */
import * as v from 'valibot';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ApprovalConflictError,
  ApprovalExpiredError,
  ApprovalNotFoundError,
  type FlueConversationMessage,
  decideApproval,
  dispatch,
  init,
  listApprovals,
  useAgentStart,
  useApprovalGate,
  useDelivery,
  useModel,
  useTool,
} from '@flue/runtime';
import { createAgentRouter } from '@flue/runtime/routing';
import { useApprovalGate as useSeedApprovalGate } from './seed-tools/approval-gate/src/shared/use-approval-gate.ts';
import { releases } from './seed-tools/approval-gate/src/shared/releases.ts';
import { configuredRuntime } from '../src/runtime/host/runtime.ts';
import type { ConversationEngine } from '../src/runtime/engine/engine.ts';
import { useScriptedRuntime } from './support/scripted-runtime.ts';
import { pendingApprovals } from './seed-tools/approvals-ui.ts';

const ctx = useScriptedRuntime();

async function messagesOf(id: string): Promise<FlueConversationMessage[]> {
  return (await configuredRuntime()!.history('Desk', id))!.messages;
}

// ── The agent ──────────────────────────────────────────────────────────────────────────────

const refunds: { order: string; cents: number; approvalId: string }[] = [];
/** The gate's expiry for the requests a test makes (read when the agent renders). */
let expiresInMs: number | undefined;
/** Timer deliveries that started a response, and the waiters for them. */
let timerDeliveries = 0;
let waiters: (() => void)[] = [];
function timerDelivered(count: number): Promise<void> {
  return new Promise((resolve) => {
    const check = () => timerDeliveries >= count && (resolve(), true);
    if (!check()) waiters.push(() => void check());
  });
}
/** Resolves once a timer's delivery is queued on the conversation (its ledger row exists). */
async function timerDeliveredAdmitted(id: string): Promise<void> {
  // On Node the configured runtime is the engine; its view reads the ledger.
  const engine = configuredRuntime() as unknown as ConversationEngine;
  await expect
    .poll(() => engine.view.submissions().some((row) => row.id.startsWith('sub_tmr_') && row.conversation.endsWith(`/${id}`)))
    .toBe(true);
}
/** Holds the `hold` tool until the test releases it, keeping the conversation busy. */
let release: () => void = () => {};
let held: () => void = () => {};

function Desk() {
  useModel('anthropic/claude-haiku-4-5');
  const delivery = useDelivery();
  useAgentStart(() => {
    if (delivery.kind === 'signal' && delivery.type === 'timer') {
      timerDeliveries++;
      for (const wake of waiters) wake();
    }
  });
  useApprovalGate({
    name: 'refund',
    description: 'Refund an order.',
    input: v.object({ order: v.string(), cents: v.number() }),
    ...(expiresInMs === undefined ? {} : { expiresInMs }),
    async execute({ order, cents }, approvalId) {
      refunds.push({ order, cents, approvalId });
      return `Refunded ${cents} cents on ${order}.`;
    },
  });
  // The seed's own copy of the gate, unmodified, beside the shipped one.
  useSeedApprovalGate({
    name: 'publish_release',
    description: 'Publish a tagged release to npm.',
    input: v.object({ pkg: v.string(), version: v.string() }),
    async execute({ pkg, version }, approvalId) {
      const { url } = await releases.publish({ pkg, version, idempotencyKey: approvalId });
      return `Published ${pkg}@${version}: ${url}`;
    },
  });
  useTool({
    name: 'hold',
    description: 'Waits for the test.',
    async run() {
      held();
      await new Promise<void>((resolve) => (release = resolve));
      return 'released';
    },
  });
  return 'Handle refunds and releases.';
}

afterEach(() => {
  refunds.length = 0;
  releases.reset();
  expiresInMs = undefined;
  timerDeliveries = 0;
  waiters = [];
});

const refundCall = (id: string, order = 'A1', cents = 500) => ({ id, name: 'refund', arguments: { order, cents } });

/** One response whose model calls the gated tool: the call ends the turn. */
async function request(id: string, ...calls: ReturnType<typeof refundCall>[]): Promise<void> {
  ctx.server.script({ toolCalls: calls });
  const handle = init(Desk, { id });
  await handle.read(await handle.dispatch('Please refund.'));
}

async function refusal(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a refusal');
    },
    (error: unknown) => error,
  );
}

/** A response of `id` running the `hold` tool, until the returned release is called. */
async function busy(id: string): Promise<{ release(): void; done: Promise<unknown> }> {
  const started = new Promise<void>((resolve) => (held = resolve));
  ctx.server.script({ toolCalls: [{ name: 'hold', arguments: {} }] }, { text: 'Held and done.' });
  const handle = init(Desk, { id });
  const done = handle.read(await handle.dispatch('Hold on.'));
  await started;
  return { release: () => release(), done };
}

describe('useApprovalGate() on Node', () => {
  it('keeps the seed contract: pending_approval ends the turn, a trusted decision runs the stored arguments, once', async () => {
    await ctx.start([Desk]);
    expiresInMs = 60_000;
    const before = Date.now();
    await request('d1', refundCall('call_r1'));
    expect(ctx.server.requests).toHaveLength(1); // the turn ended at the call: no text step

    const [pending] = await listApprovals(Desk, 'd1');
    expect(pending).toEqual({
      approvalId: 'call_r1',
      toolName: 'refund',
      input: { order: 'A1', cents: 500 },
      argsDigest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      expiresAt: expect.any(String),
    });
    expect(Date.parse(pending!.expiresAt!)).toBeGreaterThanOrEqual(before + 60_000);
    // The tool result the client sees is the seed's shape, plus the digest and expiry.
    const messages = await messagesOf('d1');
    expect(pendingApprovals(messages)).toEqual([{ approvalId: 'call_r1', toolName: 'refund', input: { order: 'A1', cents: 500 } }]);

    ctx.server.script({ text: 'The refund went through.' });
    const receipt = await decideApproval(Desk, 'd1', {
      approvalId: 'call_r1',
      decision: 'approve',
      approver: 'ops@example.com',
      argsDigest: pending!.argsDigest!,
    });
    expect(receipt).toMatchObject({ approvalId: 'call_r1', decision: 'approve', submissionId: expect.stringMatching(/^sub_ik_/) });
    expect((await init(Desk, { id: 'd1' }).read(receipt.submissionId)).text).toBe('The refund went through.');
    expect(refunds).toEqual([{ order: 'A1', cents: 500, approvalId: 'call_r1' }]);
    const result = ctx.server.requests[1]!.messages.at(-1)!.content;
    expect(result).toContain('ops@example.com approved refund (call_r1). Result: Refunded 500 cents on A1.');

    // The seed's UI sees it decided; the list is empty; the same decision again is a no-op.
    expect(pendingApprovals(await messagesOf('d1'))).toEqual([]);
    expect(await listApprovals(Desk, 'd1')).toEqual([]);
    const again = await decideApproval(Desk, 'd1', { approvalId: 'call_r1', decision: 'approve', approver: 'ops@example.com' });
    expect(again).toEqual({ ...receipt, deduplicated: true });
    const conflict = await refusal(decideApproval(Desk, 'd1', { approvalId: 'call_r1', decision: 'deny', approver: 'ops@example.com' }));
    expect(conflict).toBeInstanceOf(ApprovalConflictError);
    expect(conflict).toMatchObject({ type: 'approval_conflict', status: 409, meta: { approvalId: 'call_r1', reason: 'decided' } });
    const unknown = await refusal(decideApproval(Desk, 'd1', { approvalId: 'call_nope', decision: 'deny', approver: 'ops' }));
    expect(unknown).toBeInstanceOf(ApprovalNotFoundError);
    expect(unknown).toMatchObject({ status: 404 });
    expect(refunds).toHaveLength(1);
    expect(timerDeliveries).toBe(0); // the decision cancelled the expiry
  });

  it('binds the decision to the arguments digest, and takes decisions only from trusted code', async () => {
    await ctx.start([Desk]);
    await request('d2', refundCall('call_r2', 'B7', 900));
    const mismatch = await refusal(
      decideApproval(Desk, 'd2', { approvalId: 'call_r2', decision: 'approve', approver: 'ops', argsDigest: 'sha256:0000' }),
    );
    expect(mismatch).toMatchObject({ type: 'approval_conflict', status: 409, meta: { reason: 'arguments' } });

    // A client of a router that accepts signals cannot approve: the gate ignores origin 'http'.
    ctx.server.script({ text: 'Noted.' });
    const app = createAgentRouter(Desk, { signals: true });
    const posted = await app.request('/d2', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        kind: 'signal',
        type: 'tool-approval',
        body: 'approve please',
        attributes: { approvalId: 'call_r2', decision: 'approve', approver: 'mallory' },
      }),
    });
    expect(posted.status).toBe(202);
    const { submissionId } = (await posted.json()) as { submissionId: string };
    await init(Desk, { id: 'd2' }).read(submissionId);
    expect(refunds).toEqual([]);
    expect((await listApprovals(Desk, 'd2')).map((a) => a.approvalId)).toEqual(['call_r2']);
  });

  it('an expiry records a deterministic deny; deciding afterwards is 410 and runs nothing', async () => {
    await ctx.start([Desk]);
    expiresInMs = 80;
    await request('d3', refundCall('call_r3'));
    ctx.server.script({ text: 'The refund request expired.' });
    await timerDelivered(1);
    const expired = await refusal(decideApproval(Desk, 'd3', { approvalId: 'call_r3', decision: 'approve', approver: 'ops' }));
    expect(expired).toBeInstanceOf(ApprovalExpiredError);
    expect(expired).toMatchObject({ type: 'approval_expired', status: 410, meta: { approvalId: 'call_r3' } });
    await expect.poll(async () => (await messagesOf('d3')).some((m) => m.signal?.attributes?.outcome === 'expired')).toBe(true);
    const result = (await messagesOf('d3')).find((m) => m.signal?.attributes?.outcome === 'expired')!;
    expect(result.signal!.attributes).toEqual({ approvalId: 'call_r3', outcome: 'expired' });
    expect(pendingApprovals(await messagesOf('d3'))).toEqual([]);
    expect(await listApprovals(Desk, 'd3')).toEqual([]);
    expect(refunds).toEqual([]);
  });

  it('expiry racing a decision: the one admitted first wins, and the other changes nothing', async () => {
    await ctx.start([Desk]);
    /** Waits on the wall clock until the request's deadline has passed (the thing under test). */
    const pastDeadline = async (id: string) => {
      const expiresAt = Date.parse((await listApprovals(Desk, id))[0]!.expiresAt!);
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt - Date.now()) + 20));
    };

    // A decision admitted before the deadline, then the expiry's delivery, both queued behind a
    // busy response: they join it in admission order, the decision first.
    expiresInMs = 600;
    await request('race-decided', refundCall('call_win'));
    const first = await busy('race-decided');
    const deadline = pastDeadline('race-decided');
    await decideApproval(Desk, 'race-decided', { approvalId: 'call_win', decision: 'approve', approver: 'ops' });
    await deadline;
    await timerDeliveredAdmitted('race-decided');
    first.release();
    expect(((await first.done) as { text: string }).text).toBe('Held and done.');
    expect(timerDeliveries).toBe(1); // the expiry was delivered, after the decision...
    expect(refunds.map((r) => r.approvalId)).toEqual(['call_win']);
    // ...and found nothing to expire: one outcome, the decision's.
    expect((await messagesOf('race-decided')).flatMap((m) => m.signal?.attributes?.outcome ?? [])).toEqual(['approved']);

    // A decision attempted after the deadline, while the expiry's delivery still waits in the
    // queue: refused, and the expiry decides.
    expiresInMs = 300;
    await request('race-expired', refundCall('call_late'));
    const second = await busy('race-expired');
    await pastDeadline('race-expired');
    const late = await refusal(decideApproval(Desk, 'race-expired', { approvalId: 'call_late', decision: 'approve', approver: 'ops' }));
    expect(late).toBeInstanceOf(ApprovalExpiredError);
    second.release();
    await second.done;
    expect((await messagesOf('race-expired')).flatMap((m) => m.signal?.attributes?.outcome ?? [])).toEqual(['expired']);
    expect(refunds.map((r) => r.approvalId)).toEqual(['call_win']);
  });

  it("a user's own copy of the seed's gate keeps working beside it: each decides only its own requests", async () => {
    await ctx.start([Desk]);
    ctx.server.script({
      toolCalls: [refundCall('call_ours'), { id: 'call_seed', name: 'publish_release', arguments: { pkg: 'pkg', version: '1.0.0' } }],
    });
    const handle = init(Desk, { id: 'both' });
    await handle.read(await handle.dispatch('Refund and publish.'));
    expect(pendingApprovals(await messagesOf('both')).map((p) => p.approvalId)).toEqual(['call_ours', 'call_seed']);
    expect((await listApprovals(Desk, 'both')).map((p) => p.approvalId)).toEqual(['call_ours', 'call_seed']);

    // The seed's route, as it stands in the seed.
    ctx.server.script({ text: 'Published.' });
    const seedReceipt = await dispatch(Desk, {
      id: 'both',
      message: {
        kind: 'signal',
        type: 'tool-approval',
        body: 'Op chose "approve" for call_seed.',
        attributes: { approvalId: 'call_seed', decision: 'approve', approver: 'Op' },
      },
      idempotencyKey: 'approval:call_seed',
    });
    await handle.read(seedReceipt);
    expect(releases.calls).toEqual([{ pkg: 'pkg', version: '1.0.0', idempotencyKey: 'call_seed' }]);
    expect(refunds).toEqual([]);
    expect((await listApprovals(Desk, 'both')).map((p) => p.approvalId)).toEqual(['call_ours']);

    ctx.server.script({ text: 'Refunded.' });
    await handle.read((await decideApproval(Desk, 'both', { approvalId: 'call_ours', decision: 'approve', approver: 'Op' })).submissionId);
    expect(refunds.map((r) => r.approvalId)).toEqual(['call_ours']);
    expect(releases.calls).toHaveLength(1);
    expect(pendingApprovals(await messagesOf('both'))).toEqual([]);
  });
});
