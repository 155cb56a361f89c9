/**
 * The example app's approval route (examples/cloudflare/src/app.ts) over its own Hono app, with
 * the example's agents on the Node runtime and the scripted model: a decision reaches only an
 * existing release-manager instance, addressed by the id the page and the routers use, and one
 * nobody decided expires and is refused with 410 afterwards. The page
 * test drives the same route through wrangler dev and a browser.
 */
import { expect, test } from 'vitest';
import { type DispatchReceipt, getAgentInstance, init } from '@flue/runtime';
import app from '../../examples/cloudflare/src/app.ts';
import { OrderAssistant } from '../../examples/cloudflare/src/agents/order-assistant.ts';
import { ReleaseManager } from '../../examples/cloudflare/src/agents/release-manager.ts';
import { useScriptedRuntime } from '../support/scripted-runtime.ts';

const ctx = useScriptedRuntime();
const env = { OPERATOR_TOKEN: 'route-test-token' };

function decide(id: string, approvalId: string): Promise<Response> {
  return Promise.resolve(
    app.fetch(
      new Request(`http://app.test/api/approvals/${encodeURIComponent(id)}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${env.OPERATOR_TOKEN}` },
        body: JSON.stringify({ approvalId, decision: 'approve' }),
      }),
      env,
    ),
  );
}

test('a decision for an unknown instance is refused with the router 404 envelope and creates nothing; the page id is the one that works', async () => {
  await ctx.start([ReleaseManager, OrderAssistant]);

  const unknown = await decide('no-such-release', 'call_x');
  expect(unknown.status).toBe(404);
  const refused = (await unknown.json()) as { error: { type: string; message: string; details: string } };
  expect(refused.error).toEqual({
    type: 'stream_not_found',
    message: 'Agent instance "no-such-release" has no conversation stream.',
    details: expect.stringContaining('not the conversationId of stream chunks'),
  });
  expect(await getAgentInstance(ReleaseManager, 'no-such-release')).toBeNull();
  // The agent router answers the same envelope for the same id.
  const viaRouter = await app.fetch(new Request('http://app.test/api/agents/release-manager/no-such-release'), env);
  expect(viaRouter.status).toBe(404);
  expect(((await viaRouter.json()) as { error: { type: string } }).error.type).toBe(refused.error.type);

  // A real pending request: the stream's conversationId is not an instance id and is refused too.
  ctx.server.script({ toolCalls: [{ name: 'publish_release', arguments: { pkg: 'pkg', version: '1.2.0' } }] }, { text: 'Published.' });
  const manager = init(ReleaseManager, { id: 'chat-route1' });
  await manager.read(await manager.dispatch('publish pkg@1.2.0'));
  const updates = (await (
    await app.fetch(new Request('http://app.test/api/agents/release-manager/chat-route1?view=updates&offset=-1'), env)
  ).json()) as {
    conversationId?: string;
    type: string;
    toolCallId?: string;
    output?: { status?: string };
  }[];
  const conversationId = updates.find((chunk) => chunk.conversationId !== undefined)!.conversationId!;
  expect(conversationId).not.toBe('chat-route1');
  const approvalId = updates.find((chunk) => chunk.type === 'tool-output' && chunk.output?.status === 'pending_approval')!.toolCallId!;
  expect((await decide(conversationId, approvalId)).status).toBe(404);
  expect(await getAgentInstance(ReleaseManager, conversationId)).toBeNull();

  const accepted = await decide('chat-route1', approvalId);
  expect(accepted.status).toBe(202);
  const receipt = (await accepted.json()) as DispatchReceipt;
  const reply = await manager.read(receipt);
  expect(reply.text).toBe('Published.');
  expect(ctx.server.requests.at(-1)!.messages.at(-1)!.content).toContain(
    `approved publish_release (${approvalId}). Result: Published pkg@1.2.0`,
  );
});

test('the orders route names its id like every other route: { id, submissionId, reply }', async () => {
  await ctx.start([ReleaseManager, OrderAssistant]);
  ctx.server.script({ text: 'Order 7 has shipped.' });
  const answered = await app.fetch(new Request('http://app.test/orders/alice', { method: 'POST', body: 'Where is order 7?' }), env);
  expect(answered.status).toBe(200);
  expect(await answered.json()).toEqual({ id: 'alice', submissionId: expect.stringMatching(/^sub_/), reply: 'Order 7 has shipped.' });
  const instance = await app.fetch(new Request('http://app.test/orders/alice'), env);
  expect(instance.status).toBe(200);
  expect((await app.fetch(new Request('http://app.test/orders/bob'), env)).status).toBe(404);
});

test('a release nobody decides expires after APPROVAL_EXPIRES_MS: the model is told, and a late decision is 410', async () => {
  process.env['APPROVAL_EXPIRES_MS'] = '200';
  try {
    await ctx.start([ReleaseManager, OrderAssistant]);
    ctx.server.script(
      { toolCalls: [{ name: 'publish_release', arguments: { pkg: 'pkg', version: '5.0.0' } }] },
      { text: 'It expired; nothing was published.' },
    );
    const manager = init(ReleaseManager, { id: 'chat-expiry1' });
    await manager.read(await manager.dispatch('publish pkg@5.0.0'));
    const updates = (await (
      await app.fetch(new Request('http://app.test/api/agents/release-manager/chat-expiry1?view=updates&offset=-1'), env)
    ).json()) as { type: string; toolCallId?: string; output?: { status?: string; expiresAt?: string } }[];
    const request = updates.find((chunk) => chunk.type === 'tool-output' && chunk.output?.status === 'pending_approval')!;
    expect(Date.parse(request.output!.expiresAt!)).toBeGreaterThan(Date.now() - 1_000);

    // The gate's timer records the expiry and the model reads it (bounded wait on that request).
    const deadline = Date.now() + 10_000;
    const expiredText = `publish_release (${request.toolCallId}) expired without a decision and was denied.`;
    const sawExpiry = () => ctx.server.requests.some((r) => r.messages.some((m) => m.content.includes(expiredText)));
    while (!sawExpiry() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(sawExpiry()).toBe(true);

    const late = await decide('chat-expiry1', request.toolCallId!);
    expect(late.status).toBe(410);
    expect(((await late.json()) as { error: { type: string } }).error.type).toBe('approval_expired');
  } finally {
    delete process.env['APPROVAL_EXPIRES_MS'];
  }
});
