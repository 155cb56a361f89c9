/**
 * The example app's HTTP surface. `POST /orders/:conversationId` sends the body text to the
 * OrderAssistant conversation with that id and answers with the settled reply.
 */
import { Hono } from 'hono';
import { getAgentInstance, init } from '@flue/runtime';
import { OrderAssistant } from './agents/order-assistant.ts';

const app = new Hono();

app.get('/', (c) =>
  c.text(
    [
      'flue-workers example: the OrderAssistant agent, one Durable Object per conversation.',
      '',
      '  curl -X POST http://127.0.0.1:8787/orders/alice -d "Where is my order 7?"',
      '  curl http://127.0.0.1:8787/orders/alice',
      '',
    ].join('\n'),
  ),
);

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
