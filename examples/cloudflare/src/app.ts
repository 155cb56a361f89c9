/**
 * The example app's HTTP surface.
 *
 * - `GET /`: a small page to chat with either agent, watch replies stream and decide approvals.
 * - `/api/agents/release-manager/:id` and `/api/agents/order-assistant/:id`: the conversation
 *   protocol of each agent (send, history, live updates), served by `createAgentRouter`. Open to
 *   anyone who can reach the app, so they accept user messages only: the routers refuse signals.
 * - `POST /api/approvals/:conversationId`: an operator's decision on a pending release, delivered
 *   to the ReleaseManager conversation as a `tool-approval` signal. Requires the operator token
 *   (`Authorization: Bearer <OPERATOR_TOKEN>`, see shared/auth.ts).
 * - `POST /orders/:conversationId`: sends the body text to the OrderAssistant conversation with
 *   that id and answers with the settled reply; `GET /orders/:conversationId` shows the instance.
 */
import { Hono } from 'hono';
import { dispatch, getAgentInstance, init } from '@flue/runtime';
import { createAgentRouter } from '@flue/runtime/routing';
import { OrderAssistant } from './agents/order-assistant.ts';
import { ReleaseManager } from './agents/release-manager.ts';
import { type OperatorEnv, requireOperator } from './shared/auth.ts';
import { PAGE_HTML } from './ui/page.ts';

const app = new Hono<{ Bindings: OperatorEnv }>();

app.get('/', (c) => c.html(PAGE_HTML));

// Without `{ signals: true }`: a browser may chat, but a `tool-approval` signal posted here is
// refused with 403, so the approval route below is the only way a decision gets in.
app.route('/api/agents/release-manager', createAgentRouter(ReleaseManager));
app.route('/api/agents/order-assistant', createAgentRouter(OrderAssistant));

// Decisions come through this route, not straight from the browser into the conversation:
// otherwise anyone who can post to the conversation could approve a call. The approval id is the
// idempotency key, so the first decision wins and a different second one is refused with 409;
// keys posted to the routers above live in another namespace and cannot take it first.
app.post('/api/approvals/:conversationId', async (c) => {
  const operator = await requireOperator(c.req.raw, c.env);
  const { approvalId, decision } = await c.req
    .json<{
      approvalId: string;
      decision: 'approve' | 'deny';
    }>()
    .catch(() => ({ approvalId: undefined, decision: undefined }));
  if (typeof approvalId !== 'string' || approvalId === '' || (decision !== 'approve' && decision !== 'deny')) {
    return c.json({ error: 'Send {"approvalId": "<id>", "decision": "approve" | "deny"}.' }, 400);
  }

  const receipt = await dispatch(ReleaseManager, {
    id: c.req.param('conversationId'),
    message: {
      kind: 'signal',
      type: 'tool-approval',
      body: `${operator.name} chose "${decision}" for ${approvalId}.`,
      attributes: { approvalId, decision, approver: operator.name },
    },
    idempotencyKey: `approval:${approvalId}`,
  });

  return c.json(receipt, 202);
});

app.post('/orders/:conversationId', async (c) => {
  const text = await c.req.text();
  if (text.trim() === '') return c.json({ error: 'Send your question as the request body.' }, 400);
  const assistant = init(OrderAssistant, { id: c.req.param('conversationId') });
  const receipt = await assistant.dispatch(text);
  const reply = await assistant.read(receipt);
  return c.json({ conversationId: assistant.id, submissionId: receipt.submissionId, reply: reply.text });
});

app.get('/orders/:conversationId', async (c) => {
  const instance = await getAgentInstance(OrderAssistant, c.req.param('conversationId'));
  return instance === null ? c.json({ error: 'No such conversation.' }, 404) : c.json(instance);
});

export default app;
