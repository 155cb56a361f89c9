/**
 * The Worker's whole HTTP surface: a Hono app, default-exported. Nothing is mounted for you.
 */
import { Hono } from 'hono';
import { init } from '@flue/runtime';
import { createAgentRouter } from '@flue/runtime/routing';
import { Hello } from './agents/hello.ts';
import type { GreetingParams } from './cloudflare.ts';

// Bindings from wrangler.jsonc that routes use (c.env).
type Bindings = { GREETING_WORKFLOW: Workflow<GreetingParams> };

const app = new Hono<{ Bindings: Bindings }>();

app.get('/', (c) => c.text('Flue is running. POST /hello/<conversation-id> with a message as the body.\n'));

// Sends the request body to the Hello agent instance named by :id and answers with its reply.
// The same id continues the same conversation.
app.post('/hello/:id', async (c) => {
  const message = await c.req.text();
  if (message.trim() === '') return c.json({ error: 'Send the message as the request body.' }, 400);
  const hello = init(Hello, { id: c.req.param('id') });
  const receipt = await hello.dispatch(message);
  try {
    const reply = await hello.read(receipt);
    return c.json({ id: hello.id, submissionId: receipt.submissionId, reply: reply.text });
  } catch (error) {
    // The run failed or was aborted (e.g. `flue dev --real-model` without ANTHROPIC_API_KEY in .dev.vars).
    return c.json({ id: hello.id, submissionId: receipt.submissionId, error: (error as Error).message }, 502);
  }
});

// The Flue HTTP protocol for Hello's conversations: `POST /api/agents/hello/<id>` admits a message
// (JSON `{"kind":"user","body":"…"}`), `GET /api/agents/hello/<id>` returns the history, and
// `?view=updates&offset=-1` the live updates (add `&live=sse` to keep streaming). It has no
// authentication: put your own check in front of it before you deploy it publicly.
app.route('/api/agents/hello', createAgentRouter(Hello));

// Starts a GreetingWorkflow (src/cloudflare.ts) for the name in the body; answers with its id.
app.post('/greetings', async (c) => {
  const name = (await c.req.text()).trim();
  if (name === '') return c.json({ error: 'Send a name as the request body.' }, 400);
  const instance = await c.env.GREETING_WORKFLOW.create({ params: { name } });
  return c.json({ id: instance.id }, 202);
});

// The Workflow's status; `output` once it is complete, `error` if it failed.
app.get('/greetings/:id', async (c) => {
  let instance: WorkflowInstance;
  try {
    instance = await c.env.GREETING_WORKFLOW.get(c.req.param('id'));
  } catch {
    return c.json({ error: 'No such greeting.' }, 404);
  }
  const { status, output, error } = await instance.status();
  return c.json({ id: instance.id, status, output, error });
});

export default app;
