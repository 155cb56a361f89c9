/**
 * The example app's HTTP surface.
 *
 * - `GET /`: a small page to chat with either agent, watch replies stream and decide approvals.
 * - `/api/agents/release-manager/:id` and `/api/agents/order-assistant/:id`: the conversation
 *   protocol of each agent (send, history, live updates), served by `createAgentRouter`. Open to
 *   anyone who can reach the app, so they accept user messages only: the routers refuse signals.
 * - `POST /api/approvals/:id`: an operator's decision on a pending release, delivered to the
 *   ReleaseManager instance `:id` (the same id as in `/api/agents/release-manager/:id` and in the
 *   page's URL, not the `conversationId` of stream chunks) by `decideApproval()`. Requires the
 *   operator token (`Authorization: Bearer <OPERATOR_TOKEN>`, see shared/auth.ts), which also names
 *   the approver. An id with no instance behind it is refused with 404: a decision never creates a
 *   conversation. A request decided otherwise first is 409, one past its expiry 410.
 * - `POST /orders/:id`: sends the body text to the OrderAssistant instance with that id and answers
 *   with the settled reply; `GET /orders/:id` shows the instance.
 */
import { Hono } from 'hono';
import { ApprovalConflictError, ApprovalExpiredError, ApprovalNotFoundError, decideApproval, getAgentInstance, init } from '@flue/runtime';
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
// otherwise anyone who can post to the conversation could approve a call. The approver is the
// operator the token authenticated, never a name from the request body. decideApproval() lets the
// first decision win (the same one again is deduplicated, another is 409), refuses one at or past
// the request's expiry (410), and with the digest the operator was shown, one for other arguments.
app.post('/api/approvals/:id', async (c) => {
  const operator = await requireOperator(c.req.raw, c.env);
  const id = c.req.param('id');
  const { approvalId, decision, argsDigest } = await c.req
    .json<{ approvalId: string; decision: 'approve' | 'deny'; argsDigest?: string }>()
    .catch(() => ({ approvalId: undefined, decision: undefined, argsDigest: undefined }));
  if (
    typeof approvalId !== 'string' ||
    approvalId === '' ||
    (decision !== 'approve' && decision !== 'deny') ||
    (argsDigest !== undefined && typeof argsDigest !== 'string')
  ) {
    return c.json({ error: 'Send {"approvalId": "<id>", "decision": "approve" | "deny", "argsDigest"?: "<digest shown>"}.' }, 400);
  }

  // A mistyped id (or a stream chunk's `conversationId` pasted by mistake) names no instance: say
  // so in the router's envelope for an unknown instance, rather than "no such approval".
  if ((await getAgentInstance(ReleaseManager, id)) === null) {
    return c.json(
      {
        error: {
          type: 'stream_not_found',
          message: `Agent instance "${id}" has no conversation stream.`,
          details:
            'Decisions go to an existing release-manager instance: use the id of /api/agents/release-manager/<id> ' +
            "(the page's instance id), not the conversationId of stream chunks.",
        },
      },
      404,
    );
  }

  try {
    const receipt = await decideApproval(ReleaseManager, id, {
      approvalId,
      decision,
      approver: operator.name,
      ...(argsDigest === undefined ? {} : { argsDigest }),
    });
    return c.json(receipt, 202);
  } catch (error) {
    if (error instanceof ApprovalConflictError || error instanceof ApprovalExpiredError || error instanceof ApprovalNotFoundError) {
      return error.getResponse();
    }
    throw error;
  }
});

app.post('/orders/:id', async (c) => {
  const text = await c.req.text();
  if (text.trim() === '') return c.json({ error: 'Send your question as the request body.' }, 400);
  const assistant = init(OrderAssistant, { id: c.req.param('id') });
  const receipt = await assistant.dispatch(text);
  const reply = await assistant.read(receipt);
  return c.json({ id: assistant.id, submissionId: receipt.submissionId, reply: reply.text });
});

app.get('/orders/:id', async (c) => {
  const instance = await getAgentInstance(OrderAssistant, c.req.param('id'));
  return instance === null ? c.json({ error: 'No such conversation.' }, 404) : c.json(instance);
});

export default app;
