/**
 * The Worker's whole HTTP surface: a Hono app, default-exported. Nothing is mounted for you.
 */
import { Hono } from 'hono';
import { init } from '@flue/runtime';
import { Hello } from './agents/hello.ts';

const app = new Hono();

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
    // The run failed or was aborted (e.g. no ANTHROPIC_API_KEY in .dev.vars).
    return c.json({ id: hello.id, submissionId: receipt.submissionId, error: (error as Error).message }, 502);
  }
});

export default app;
